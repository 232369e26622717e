"""A stored text (/-/blob/<hash>): source, pyrender, AST, DEBUG output, whole and highlighted, a page at a time;
where a table's truncated cell links."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from datasette.utils.asgi import Response
from markupsafe import Markup, escape

from tgstore.web.base import commit_label, database, not_found, render
from tgstore.web.cells import code_block
from tgstore.web.machinecode import readable_source

BLOB_LINES, BLOB_CHARS = 500, 60_000  # a page of a stored text (a model's DEBUG output runs to megabytes)
# Where a stored text is a program's source: its renderer, kernel, case and newest commit, for the title and a way
# back to the kernel's workbench.
SOURCE_OF_SQL = """
SELECT p.renderer, si.position, k.name, c.sha, c.version FROM blobs b JOIN programs p ON p.source_blob_id = b.id
JOIN schedule_items si ON si.id = p.schedule_item_id JOIN case_set_members m ON m.case_result_id = si.case_result_id
JOIN cases k ON k.id = m.case_id JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
JOIN tinygrad_commits c ON c.id = r.commit_id WHERE b.hash = ? ORDER BY c.history_rank DESC LIMIT 1"""


async def blob(datasette: Any, request: Any) -> Response:
    digest = request.url_vars["hash"]
    db = database(datasette)
    found = await db.execute_fn(lambda conn: conn.execute("SELECT text FROM blobs WHERE hash = ?", (digest,))
                                .fetchone())
    source_of = await db.execute_fn(lambda conn: conn.execute(SOURCE_OF_SQL, (digest,)).fetchone())
    if found is None:
        return await not_found(datasette, request, f"no stored text has the hash {digest}")
    language = request.args.get("language") or None
    text, language = readable_source(language, found[0])  # machine code: its assembly
    lines = (text or "").splitlines(keepends=True)
    start = int(request.args["start"]) if (request.args.get("start") or "").isdigit() else 0
    start = min(start, max(0, len(lines) - 1))
    end, size = start, 0
    while end < len(lines) and end - start < BLOB_LINES and size < BLOB_CHARS:  # a page of a long text
        size += len(lines[end])
        end += 1
    message = ""
    if start > 0 or end < len(lines):
        here = datasette.urls.path(f"/-/blob/{digest}")
        extra = f"&language={quote(language)}" if language else ""
        parts = [f"lines {start + 1}–{end} of {len(lines)}"]
        if start > 0:
            parts.insert(0, f'<a class="tgstore-prev" href="{here}?start={max(0, start - BLOB_LINES)}{extra}">← '
                            "previous</a>")
        if end < len(lines):
            parts.append(f'<a class="tgstore-next" href="{here}?start={end}{extra}">next →</a>')
        message = Markup(" · ".join(parts))
    title = f"text {digest[:12]}"
    if source_of is not None:
        renderer, position, case, sha, version = source_of
        title = f"{renderer} source of {case} kernel {position} at {commit_label(sha, version)}"
        bench = datasette.urls.path("/-/kernel?" + urlencode({"case": case, "kernel": position, "commit": sha,
                                                               "renderer": renderer}))
        back = f'<a class="tgstore-workbench-link" href="{escape(bench)}">← its workbench</a>'
        message = Markup(back) + (Markup(" · ") + message if message else "")
    return await render(datasette, request, "tgstore_message.html", {
        "title": title, "message": message, "body": code_block("".join(lines[start:end]), language)})
