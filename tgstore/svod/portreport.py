"""The weekly report a Svod porter reads (`port-queue --report md|html`): commits in order, each with its passes
added, removed or changed per renderer, the Svod stage each maps to, the rules involved, and the command that shows
it; then the gaps (with why they are gaps)."""

from __future__ import annotations

import html
from typing import Any


def _change_cells(c: dict[str, Any]) -> list[str]:
    where = "schedule" if c.get("kernel") is None else f"kernel {c['kernel']}"
    what = f"canonical {c['canonical']}" if c.get("canonical") else (c.get("pass") or "the kernel")
    knock = f" (+{c['knock_on']} knock-on)" if c.get("knock_on") else ""
    return [c["case"], where, c.get("renderer") or "-", what, c["change"] + knock, c["svod_stage"],
            _rules_cell(c), c.get("diff", "")]


def rules_text(rules: list[str], shown: int, sep: str = ", ") -> str:
    """The first `shown` rules and how many more ('' for none)."""
    return sep.join(rules[:shown]) + (f" (+{len(rules) - shown} more)" if len(rules) > shown else "")


def _rules_cell(c: dict[str, Any]) -> str:
    """The rules whose matches differ ('+' more after, '-' more before), at most 8; '?' for a pass whose steps were
    not recorded (extract with --rewrites N)."""
    rules = c.get("rules")
    if rules is None and c.get("pass") and not c.get("canonical"):
        return "? (no rewrite steps recorded)"
    return rules_text(rules or [], 8) or "-"


HEADER = ["case", "where", "renderer", "pass", "change", "Svod stage", "rules", "show"]


def markdown(found: dict[str, Any]) -> str:
    lines = [f"# tinygrad changes to port: {found['from'][:12]}..{found['to'][:12]}", "",
             f"Cases: {', '.join(found['cases'])}; renderers: {', '.join(found.get('renderers') or ['all recorded'])};"
             f" {found['compared']} stored commits compared, {len(found['commits'])} to port, {len(found['gaps'])} "
             "gaps.", ""]
    for entry in found["commits"]:
        lines += [f"## {entry['sha'][:12]} {entry.get('subject') or ''}", "", "| " + " | ".join(HEADER) + " |",
                  "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") if i < 7 else f"`{cell}`"
                                    for i, cell in enumerate(_change_cells(c))) + " |" for c in entry["changes"]]
        lines.append("")
    if found["gaps"]:
        lines += ["## Gaps", ""]
        for gap in found["gaps"]:
            count = "?" if gap["unstored"] is None else gap["unstored"]
            why = gap.get("reason") or f"{len(gap['changes'])} changes somewhere in {count} unstored commits"
            lines.append(f"- {gap['after'][:12]}..{gap['before'][:12]}: {why}; fill: `{gap['fill']}`")
        lines.append("")
    for odd in found.get("unexplained", []):
        lines.append(f"- not to port: {odd['sha'][:12]}: {odd['why']}")
    return "\n".join(lines) + "\n"


def html_report(found: dict[str, Any]) -> str:
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>tgstore port queue</title><style>"
             "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
             "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}code{font-size:90%}</style></head><body>",
             f"<h1>tinygrad changes to port: {e(found['from'][:12])}..{e(found['to'][:12])}</h1>",
             f"<p>Cases: {e(', '.join(found['cases']))}; {found['compared']} stored commits compared, "
             f"<span id='to-port'>{len(found['commits'])}</span> to port, {len(found['gaps'])} gaps.</p>"]
    for entry in found["commits"]:
        parts.append(f"<h2 class='commit' id='c{e(entry['sha'][:12])}'>{e(entry['sha'][:12])} "
                     f"{e(entry.get('subject') or '')}</h2><table><tr>"
                     + "".join(f"<th>{e(h)}</th>" for h in HEADER) + "</tr>")
        for c in entry["changes"]:
            cells = _change_cells(c)
            parts.append("<tr>" + "".join(f"<td>{e(x)}</td>" for x in cells[:-1])
                         + f"<td><code>{e(cells[-1])}</code></td></tr>")
        parts.append("</table>")
    if found["gaps"]:
        parts.append("<h2>Gaps</h2><ul>")
        for gap in found["gaps"]:
            why = gap.get("reason") or f"{len(gap['changes'])} changes in {gap['unstored']} unstored commits"
            parts.append(f"<li class='gap'>{e(gap['after'][:12])}..{e(gap['before'][:12])}: {e(why)}; fill: "
                         f"<code>{e(gap['fill'])}</code></li>")
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


RENDER = {"md": markdown, "html": html_report}
