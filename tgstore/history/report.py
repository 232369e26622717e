"""`tgstore report --since DATE`: the regressions of a period as a person pastes them (rustc-perf's weekly triage
report is the model): new confirmed regressions and improvements, the ones fixed, the unconfirmed ones; each with its
kernel, ratio, commit range, codegen or same source, and the command that shows or narrows it. Rendered from the
analysis' own report (`Report.as_json()`) through Jinja templates, Markdown or HTML (escaped)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment

from tgstore.units import format_value

FORMATS = ("md", "html")

MARKDOWN = """\
# tgstore triage report: {{ metric }} since {{ since }}

Machine `{{ machine }}`; {{ series }} series walked. A step is listed when it stands out from the series' own history
and from the runs (p < {{ alpha }} each); confirmed ones were re-timed, interleaved, on this machine.
{% for section in sections %}
## {{ section.title }} ({{ section.items|length }})
{% if not section.items %}
None.
{% endif %}{% for r in section.items %}
- **{{ r.title }}**{% if r.kernel %} `{{ r.kernel }}`{% endif %} {{ '%.3f'|format(r.ratio) }}x {{ r.direction }} \
{% if r.back_at %}(back at `{{ r.back_at[:10] }}`) {% endif %}\
{% if r.excursion_from %}(back from `{{ r.excursion_from[:10] }}`) {% endif %}\
({{ r.before_text }} -> {{ r.after_text }}), `{{ r.good[:10] }}..{{ r.bad[:10] }}`\
{% if not r.exact %} (gap of {{ r.commits_between if r.commits_between is not none else '?' }}){% endif %} \
{{ r.subject or '' }}
  - {{ r.explanation }}: {{ r.detail }}; backed by {{ (r.backed_by or ['neither'])|join(' and ') }} \
({{ r.evidence }}); {{ r.confirmation_text }}; \
triage: {{ r.triage.state }}{% if r.triage.note %} ({{ r.triage.note }}){% endif %}
  - `{{ r.diff_command }}`{% if r.bisect_command %} · `{{ r.bisect_command }}`{% endif %}
{% endfor %}{% endfor %}
## Common shifts ({{ shifts|length }})
{% if not shifts %}
None.
{% endif %}{% for c in shifts %}
- `{{ c.good[:10] }}..{{ c.bad[:10] }}` {{ c.direction }}, {{ c.kernel_count }} kernels, median \
{{ '%.3f'|format(c.median_ratio) }}x: **{{ c.classification }}** ({{ c.evidence|join('; ') }}) {{ c.subject or '' }}
{% endfor %}"""

HTML = """\
<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tgstore triage report: {{ metric }} since {{ since }}</title></head>
<body>
<h1>tgstore triage report: {{ metric }} since {{ since }}</h1>
<p>Machine <code>{{ machine }}</code>; {{ series }} series walked. A step is listed when it stands out from the
series' own history and from the runs (p &lt; {{ alpha }} each); confirmed ones were re-timed, interleaved, on this
machine.</p>
{% for section in sections %}
<h2>{{ section.title }} ({{ section.items|length }})</h2>
{% if not section.items %}<p>None.</p>{% else %}<ul>
{% for r in section.items %}<li class="tgstore-{{ r.direction }}"><strong>{{ r.title }}</strong>
{% if r.kernel %}<code>{{ r.kernel }}</code> {% endif %}{{ '%.3f'|format(r.ratio) }}x {{ r.direction }}
({{ r.before_text }} → {{ r.after_text }}), <code>{{ r.good[:10] }}..{{ r.bad[:10] }}</code>{% if not r.exact %} (gap of
{{ r.commits_between if r.commits_between is not none else '?' }}){% endif %} {{ r.subject or '' }}<br>
{{ r.explanation }}: {{ r.detail }}; stands out from {{ r.evidence }}; {{ r.confirmation_text }}; triage:
{{ r.triage.state }}{% if r.triage.note %} ({{ r.triage.note }}){% endif %}<br>
<code>{{ r.diff_command }}</code>{% if r.bisect_command %} · <code>{{ r.bisect_command }}</code>{% endif %}</li>
{% endfor %}</ul>{% endif %}
{% endfor %}
<h2>Common shifts ({{ shifts|length }})</h2>
{% if not shifts %}<p>None.</p>{% else %}<ul>{% for c in shifts %}<li><code>{{ c.good[:10] }}..{{ c.bad[:10] }}</code>
{{ c.direction }}, {{ c.kernel_count }} kernels, median {{ '%.3f'|format(c.median_ratio) }}x:
<strong>{{ c.classification }}</strong> ({{ c.evidence|join('; ') }}) {{ c.subject or '' }}</li>{% endfor %}</ul>
{% endif %}
</body></html>
"""


@dataclass
class Section:
    title: str
    items: list[dict[str, Any]]


def commit_dates(conn: sqlite3.Connection, shas: set[str]) -> dict[str, str]:
    if not shas:
        return {}
    marks = ",".join("?" * len(shas))
    return dict(conn.execute(f"SELECT sha, committed_at FROM tinygrad_commits WHERE sha IN ({marks})",
                             tuple(shas)).fetchall())


def sections(report: dict[str, Any], dates: dict[str, str], since: str) -> list[Section]:
    """The report's regressions (`Report.as_json()`) of the period, in the triage report's sections."""
    def item(r: dict[str, Any]) -> dict[str, Any]:
        c = r["confirmation"]
        text = f"confirmed: {c['detail']}" if c and c["verdict"] == "confirmed" else \
            f"{c['verdict']}: {c['detail']}" if c else \
            "not re-timed (too little history to judge: --confirm decides)" \
            if r.get("confirmed") == "unconfirmed: too little history" else "not re-timed"
        return {**r, "before_text": format_value(r["before"], r["unit"]),
                "after_text": format_value(r["after"], r["unit"]), "confirmation_text": text}

    def recent(r: dict[str, Any]) -> bool:
        return (dates.get(r["bad"]) or "") >= since

    found = report["regressions"]
    live = [r for r in found if r["triage"]["state"] not in ("fixed", "ignored")]
    confirmed = [r for r in live if r["confirmed"] == "confirmed" and recent(r)]
    return [
        Section("Regressions (confirmed)", [item(r) for r in confirmed if r["direction"] == "slower"]),
        Section("Improvements (confirmed)", [item(r) for r in confirmed if r["direction"] == "faster"]),
        Section("Fixed", [item(r) for r in found if r["triage"]["state"] == "fixed"
                          and (r["triage"]["updated_at"] or "") >= since]),
        Section("Unconfirmed", [item(r) for r in live if r["confirmed"] != "confirmed" and recent(r)]),
    ]


def render(report: dict[str, Any], dates: dict[str, str], since: str, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"--format must be {' or '.join(FORMATS)}, not {fmt!r}")
    env = Environment(autoescape=fmt == "html", keep_trailing_newline=True)
    template = env.from_string(MARKDOWN if fmt == "md" else HTML)
    return template.render(metric=report["metric"], machine=report["machine"], since=since, alpha=report["alpha"],
                           series=len(report["noise"]), sections=sections(report, dates, since),
                           shifts=report.get("common_shifts", []))
