"""A stored text (/-/blob/<hash>[?start=][&line=][&language=]): source, pyrender, AST, DEBUG output, a Svod log,
whole and highlighted, a page at a time; `line` (from 1) opens the page around that line with it marked (the Svod
parity page links a stage's log lines so). Where a table's truncated cell links."""

from __future__ import annotations

from typing import Any

from datasette.utils.asgi import Response

from tgstore.web import urls
from tgstore.web.base import commit_label, int_arg, not_found, read, render
from tgstore.web.cells import code_block
from tgstore.web.machinecode import readable_source

BLOB_LINES, BLOB_CHARS = 500, 60_000  # a page of a stored text (a model's DEBUG output runs to megabytes)
LINE_CONTEXT = 20  # lines shown before a marked line
# Where a stored text is a program's source: its renderer, kernel, case and newest commit, for the title and a way
# back to the kernel's workbench.
SOURCE_OF_SQL = """
SELECT p.renderer, si.position, k.name, c.sha, c.version FROM blobs b JOIN programs p ON p.source_blob_id = b.id
JOIN schedule_items si ON si.id = p.schedule_item_id JOIN case_set_members m ON m.case_result_id = si.case_result_id
JOIN cases k ON k.id = m.case_id JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
JOIN tinygrad_commits c ON c.id = r.commit_id WHERE b.hash = ? ORDER BY c.history_rank DESC LIMIT 1"""
SVOD_FILE_SQL = """
SELECT f.path, f.run_id FROM svod_files f JOIN blobs b ON b.id = f.blob_id WHERE b.hash = ? ORDER BY f.run_id DESC
LIMIT 1"""


async def blob(datasette: Any, request: Any) -> Response:
    digest = request.url_vars["hash"]

    def load(conn: Any) -> tuple[Any, Any, Any]:
        found = conn.execute("SELECT CAST(text AS TEXT) FROM blobs WHERE hash = ?", (digest,)).fetchone()
        return (found, conn.execute(SOURCE_OF_SQL, (digest,)).fetchone(),
                conn.execute(SVOD_FILE_SQL, (digest,)).fetchone())

    found, source_of, svod_file = await read(datasette, load)
    if found is None:
        return await not_found(datasette, request, f"no stored text has the hash {digest}")
    language = request.args.get("language") or None
    text, language = readable_source(language, found[0])  # machine code: its assembly
    lines = (text or "").splitlines(keepends=True)
    line = int_arg(request, "line")
    start = int_arg(request, "start") or 0
    if line is not None and line > 0:
        start = max(0, line - 1 - LINE_CONTEXT)
    start = min(max(0, start), max(0, len(lines) - 1))
    end, size = start, 0
    while end < len(lines) and end - start < BLOB_LINES and size < BLOB_CHARS:  # a page of a long text
        size += len(lines[end])
        end += 1
    title, workbench = f"text {digest[:12]}", None
    if source_of is not None:
        renderer, position, case, sha, version = source_of
        title = f"{renderer} source of {case} kernel {position} at {commit_label(sha, version)}"
        workbench = datasette.urls.path(urls.kernel(case, position, sha, renderer))
    elif svod_file is not None:
        title = f"Svod output {svod_file[0]} (Svod run {svod_file[1]})" + (f", line {line}" if line else "")
    shown = lines[start:end]
    return await render(datasette, request, "tgstore_blob.html", {
        "title": title, "digest": digest, "language": language, "workbench": workbench, "start": start, "end": end,
        "total": len(lines), "paged": start > 0 or end < len(lines), "marked": line,
        "previous": max(0, start - BLOB_LINES) if start > 0 else None, "following": end if end < len(lines) else None,
        "lines": [text.rstrip("\n") for text in shown] if line else [],
        "body": None if line else code_block("".join(shown), language)},
        data={"hash": digest, "title": title, "start": start, "end": end, "total_lines": len(lines),
              "text": "".join(shown)})
