"""Progress of long work on stderr: a bar on a terminal, one line per finished commit (plain lines in a pipe)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from tgstore.cli.output import err, plural, safe
from tgstore.git import Commit
from tgstore.history.sweep import CommitOutcome, Reporter, SweepSummary
from tgstore.store.rows import FAILED


class SweepReporter(Reporter):
    """Progress on stderr: a bar on a terminal, and one line per commit (plain lines when not a terminal, for CI)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or err
        self.progress: Progress | None = None
        self.task = None
        self.total = 0
        self.done = 0

    def __enter__(self) -> SweepReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def start(self, total: int, skipped: list[CommitOutcome]) -> None:
        self.total = total
        if len(skipped) <= 50:
            for outcome in skipped:
                self._line(outcome)
        else:
            self.done += len(skipped)
            why = skipped[0].note or ""
            self.console.print(Text(f"{len(skipped)} of {total} commits already stored, each run holding what was "
                                    f"asked: skipped ({skipped[0].commit.sha[:10]} ... {skipped[-1].commit.sha[:10]}"
                                    f"{'; ' + why if why else ''})"))
        if self.console.is_terminal:
            self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("{task.description}"), console=self.console, transient=True)
            self.task = self.progress.add_task("", total=total, completed=self.done)
            self.progress.start()

    def running(self, commits: list[Commit]) -> None:
        if self.progress is not None and self.task is not None:
            names = ", ".join(c.sha[:10] for c in commits)
            self.progress.update(self.task, description=f"extracting {names}" if names else "")

    def finished(self, outcome: CommitOutcome) -> None:
        self._line(outcome)

    def _line(self, o: CommitOutcome) -> None:
        self.done += 1
        colour = {"ok": "green", "partial": "yellow", "skipped": "dim"}.get(o.status, "red")
        width = len(str(self.total))
        line = Text(f"[{self.done:>{width}}/{self.total}] {o.commit.sha[:10]} ")
        line.append(f"{o.status:<8}", style=colour)
        seconds = f"{o.seconds:6.1f}s" if o.status != "skipped" else " " * 7
        line.append(f" {seconds}  {safe(o.commit.subject)}")
        if o.copied_from:
            line.append(f"  (run of {o.copied_from[:10]} copied: {copy_why(o)})", style="dim")
        if o.note:
            line.append(f"  ({safe(o.note)})", style="dim")
        if o.error and o.status in FAILED:
            line.append(f"\n    {safe(o.error)}", style="red")
        self.console.print(line)
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, completed=self.done)

    def summary(self, s: SweepSummary) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        ran = [o for o in s.outcomes if o.status != "skipped" and not o.copied_from]
        parts = [f"{s.count(k)} {k}" for k in ("ok", "partial", "failed", "timeout", "skipped") if s.count(k)]
        if copied := sum(1 for o in s.outcomes if o.copied_from):
            by_package = sum(1 for o in s.outcomes if o.copied_from and (o.copy_reason or "").startswith("its package"))
            parts.append(f"{copied} of them copied ({by_package} package unchanged, {copied - by_package} changed "
                         "nothing their parent's run read)")
        extract = sum(o.checkout_seconds + o.extract_seconds for o in ran)
        ingest = sum(o.ingest_seconds for o in ran)
        verb = "interrupted after" if s.interrupted else "swept"
        self.console.print(
            Text(f"{verb} {plural(len(s.outcomes), 'commit')} in {s.seconds:.1f}s: {', '.join(parts) or 'nothing'}"
                 + (f"; extraction {extract:.1f}s, ingestion {ingest:.1f}s in all "
                    f"({extract / len(ran):.1f}s + {ingest / len(ran):.2f}s a commit)" if ran else "")))
        for o in s.failed:
            self.console.print(Text(f"  {o.status}: {o.commit.sha[:10]} {safe(o.commit.subject)}"))




def copy_why(outcome: CommitOutcome) -> str:
    reason = outcome.copy_reason or ""
    return "package unchanged" if not reason or reason.startswith("its package") else "changes nothing it read"
