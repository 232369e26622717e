"""The real-emitter corpus (issue 44): builds tests/svod_emitter (a Rust crate printing what Svod prints through the
real tracing-subscriber, rayon, libtest and panic hook), runs its scenarios, and reads each log's truth.

A scenario is one row of SCENARIOS: the cargo command, its environment, how stdout and stderr are written (one file
or two), and whether the process is killed mid-line. `run` writes the log(s) and returns them with the truth the
program wrote (`SVOD_EMITTER_TRUTH`, see tests/svod_emitter/src/truth.rs) and what libtest printed. `Expected`
turns a truth into the runs, outcomes, panics and kernels a reader must store, and `locate` finds, for every stage the
program printed, the file and line it landed on (each stream keeps its order: the k-th event in stdout is the k-th
event record; see truth.rs), so a test can check the kernel each stored stage was filed under.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CRATE = REPO / "tests" / "svod_emitter"
TARGET = REPO / ".cache" / "svod_emitter" / "target"
CARGO_HOME_BIN = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin"  # rustup's
TRACE = "svod_schedule::optimizer=trace,svod_schedule::rangeify=debug,svod_codegen=trace"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


class CargoMissing(RuntimeError):
    """No cargo: the corpus cannot be built. A failure, never a skip (CI installs it: .ci/tools)."""


def cargo() -> str:
    found = shutil.which("cargo") or (str(CARGO_HOME_BIN / "cargo") if (CARGO_HOME_BIN / "cargo").exists() else None)
    if found is None:
        raise CargoMissing("cargo is not installed: the Svod emitter corpus cannot be built (run .ci/tools)")
    return found


def base_env() -> dict[str, str]:
    """The environment without the knobs a scenario sets (so this shell's RUST_BACKTRACE or RUST_LOG leaks in
    nowhere)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUST_", "SVOD_", "CARGO_TERM", "NO_COLOR"))}
    env["CARGO_TARGET_DIR"] = str(TARGET)
    env["PATH"] = f"{Path(cargo()).parent}:{env.get('PATH', '')}"
    return env


@dataclass
class Build:
    """The built corpus: each test binary and example by name, and how long the build took."""

    binaries: dict[str, Path]
    seconds: float


def build() -> Build:
    """`cargo test --no-run` and `cargo build --examples`, offline (the crate's .cargo/config.toml), into .cache."""
    started = time.monotonic()
    binaries: dict[str, Path] = {}
    for args in (["test", "--no-run"], ["build", "--examples"]):
        proc = subprocess.run([cargo(), *args, "--message-format=json"], cwd=CRATE, env=base_env(),
                              capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuntimeError(f"cargo {' '.join(args)} failed:\n{proc.stderr[-4000:]}")
        for line in proc.stdout.splitlines():
            message = json.loads(line)
            if message.get("reason") == "compiler-artifact" and message.get("executable"):
                kinds = message["target"]["kind"]
                key = ("example:" if "example" in kinds else "") + message["target"]["name"]
                binaries[key] = Path(message["executable"])
    return Build(binaries, time.monotonic() - started)


@dataclass(frozen=True)
class Scenario:
    """One way to run the corpus. `command`: cargo's arguments (`test --test ops sum_rows -- --nocapture`) or, with
    `binary`, the built binary's own arguments; `join`: `merged` (2>&1 into one file) or `apart` (two files)."""

    name: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    join: str = "merged"
    kill: bool = False  # SIGKILL the process group once it stalls (SVOD_EMITTER_STALL) mid-line
    binary: str | None = None  # run this built binary directly instead of cargo
    program: str | None = None  # an example: one run named after the program
    nextest: str | None = None  # `cargo nextest run` as that era prints it (NEXTEST_ERAS), over `binary`'s tests
    success_output: bool = True  # nextest's --success-output immediate (else passing tests' output is hidden)
    # the log cannot prove which test printed what (libtest's threads, no thread names): each test's run, outcome
    # and panic are still demanded exactly; a stage may be stored unattributed in one extra run with no test
    tests_unproven: bool = False
    # the user tells ingest-svod the run's SVOD_THREADS (`--svod-threads`), as the problems' advice asks: a log without
    # thread ids cannot show one optimizing thread (a pool also prints kernels one after another, in any order)
    state_threads: bool = True

    @property
    def stated(self) -> list[str]:
        """ingest-svod's `--svod-threads N` for this scenario (none when not stated or SVOD_THREADS unset)."""
        threads = self.env.get("SVOD_THREADS")
        return ["--svod-threads", threads] if self.state_threads and threads else []

    @property
    def captured(self) -> bool:
        """The runner kept passing tests' output (libtest without --nocapture; nextest without success output)."""
        if self.nextest is not None:
            return not self.success_output
        return self.program is None and "--nocapture" not in self.command


def _test(filters: str, *libtest: str, test: str = "ops") -> tuple[str, ...]:
    return ("test", "--test", test, *([filters] if filters else []), "--", *libtest)


ON = {"RUST_LOG": TRACE, "SVOD_PER_STAGE_UOPS": "1"}
SEEDED = ("--exact", "seeded::program_under_test", "--test-threads=1", "--nocapture")  # the `random` binary's one test
SCENARIOS = [
    Scenario("ops-one-thread", _test("sum_rows", "--nocapture", "--test-threads=1"), ON | {"SVOD_THREADS": "1"}),
    Scenario("ops-default-threads", _test("sum_rows", "--nocapture", "--test-threads=1"), ON),
    Scenario("ops-libtest-threads", _test("", "--nocapture"), ON | {"SVOD_THREADS": "1"}, tests_unproven=True),
    Scenario("ops-dump-stage", _test("two_programs::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_DUMP_STAGE": "1", "SVOD_THREADS": "2"}),
    # libtest's --color=always (terminfo's setaf/sgr0 around ok/FAILED) and cargo's coloured status lines
    Scenario("ops-color-always", _test("sum_rows", "--nocapture", "--test-threads=1", "--color=always"),
             ON | {"SVOD_THREADS": "1", "CARGO_TERM_COLOR": "always"}),
    Scenario("ops-canonical", _test("sum_rows::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_DUMP_CANONICAL_STAGE": "", "SVOD_THREADS": "1"}),
    Scenario("ops-canonical-threads", _test("sum_rows::clang", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_DUMP_CANONICAL_STAGE": "", "SVOD_DUMP_STAGE": "", "SVOD_THREADS": "2"}),
    Scenario("ops-apart", _test("sum_rows", "--nocapture", "--test-threads=1"), ON | {"SVOD_THREADS": "2"},
             join="apart"),
    # stdout and stderr in two files, two realizes: each stream's schedule documents mark its programs, the k-th of
    # one is the k-th of the other (a kernel's events and its dumps one kernel, not two)
    Scenario("ops-apart-canonical", _test("two_programs::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_DUMP_CANONICAL_STAGE": "", "SVOD_DUMP_STAGE": "2", "SVOD_THREADS": "1"}, join="apart"),
    # ... and where stderr shows no realize's start (only [per-stage] lines), nothing ties its lines to a realize
    Scenario("ops-apart-two-programs", _test("two_programs::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "1"}, join="apart"),
    # Svod's pool ran the kernels one after another, kernel 1 before kernel 0 (SVOD_EMITTER_KERNEL_0_AFTER_1: what a
    # loaded machine printed in CI), four of the five sharing a bare name: what one thread prints, in another order.
    # SVOD_THREADS=4 proves no order: no block is filed on a kernel of its shape by its place (seed 118's program)
    Scenario("random-kernel-0-after-1", SEEDED,
             ON | {"SVOD_THREADS": "4", "SVOD_EMITTER_KERNEL_0_AFTER_1": "1", "SVOD_EMITTER_SEED": "118"},
             binary="random"),
    # ... and with thread ids on the events: every block on a worker, none on the test's thread (not inline)
    Scenario("random-kernel-0-after-1-ids", SEEDED,
             ON | {"SVOD_THREADS": "4", "SVOD_EMITTER_KERNEL_0_AFTER_1": "1", "SVOD_EMITTER_SEED": "118",
                   "SVOD_EMITTER_FORMAT": "json+ids"}, binary="random", state_threads=False),
    # one thread, unstated, thread ids shown: every optimize-phase event on the thread that printed the schedule
    Scenario("random-one-thread-ids", SEEDED,
             ON | {"SVOD_THREADS": "1", "SVOD_EMITTER_SEED": "118", "SVOD_EMITTER_FORMAT": "json+ids"},
             binary="random", state_threads=False),
    Scenario("ops-debug-level", _test("sum_rows::llvm", "--nocapture", "--test-threads=1"),
             {"RUST_LOG": "svod_schedule::optimizer=debug", "SVOD_THREADS": "1"}),
    Scenario("ops-full-format", _test("sum_rows::clang", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "1", "SVOD_EMITTER_FORMAT": "full"}),
    Scenario("ops-compact-thread-ids", _test("sum_rows::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "2", "SVOD_EMITTER_FORMAT": "compact+ids+names-ansi"}),
    Scenario("ops-json-thread-names", _test("sum_rows::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "2", "SVOD_EMITTER_FORMAT": "json+ids+names"}),
    # libtest's threads with tracing's thread names: an event on a test's thread names its test; the [per-stage]
    # lines and rayon's unnamed workers' events still prove none
    Scenario("ops-libtest-threads-names", _test("", "--nocapture"),
             ON | {"SVOD_THREADS": "1", "SVOD_EMITTER_FORMAT": "json+ids+names"}, tests_unproven=True),
    Scenario("ops-captured", _test("", "--test-threads=1"), ON | {"SVOD_THREADS": "1"}),
    Scenario("ops-captured-threads", _test(""), ON),
    # every test binary in one log: one `Running` section per process, each with its own name counter
    Scenario("all-binaries", ("test", "--no-fail-fast", "--", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "1"}),
    Scenario("onnx-skips", _test("", "--nocapture", "--test-threads=1", test="onnx_light"),
             ON | {"SVOD_THREADS": "1"}),
    Scenario("failures-one-thread", _test("", "--nocapture", "--test-threads=1", test="failures"),
             ON | {"SVOD_THREADS": "1"}),
    Scenario("failures-worker-panic", _test("optimizer_panic", "--nocapture", "--test-threads=1", test="failures"),
             ON | {"SVOD_THREADS": "2"}),
    Scenario("failures-backtrace", _test("", "--nocapture", "--test-threads=1", test="failures"),
             ON | {"SVOD_THREADS": "2", "RUST_BACKTRACE": "1"}),
    Scenario("failures-backtrace-full", _test("assert_body", "--nocapture", test="failures"),
             ON | {"SVOD_THREADS": "1", "RUST_BACKTRACE": "full"}),
    Scenario("failures-captured", _test("", test="failures"), ON | {"SVOD_THREADS": "1"}),
    # rayon's workers inherit the capture of the test thread that started the pool (std::thread::spawn passes the
    # output capture on): what they print goes to that test's buffer, whichever test is running
    Scenario("failures-captured-threads", _test("", "--test-threads=1", test="failures"), ON | {"SVOD_THREADS": "2"}),
    Scenario("failures-libtest-threads", _test("", "--nocapture", test="failures"), ON | {"SVOD_THREADS": "2"},
             tests_unproven=True),
    Scenario("example-full-ansi", ("run", "--example", "realize"), ON | {"SVOD_THREADS": "1"}, program="realize"),
    Scenario("example-default-threads", ("run", "--example", "realize"), ON, program="realize"),
    Scenario("example-apart", ("run", "--example", "realize"), ON | {"SVOD_THREADS": "2"}, join="apart",
             program="realize"),
    Scenario("example-main-panic", ("run", "--example", "realize"),
             ON | {"SVOD_THREADS": "2", "SVOD_EMITTER_PANIC": "main"}, program="realize"),
    Scenario("example-worker-panic", ("run", "--example", "realize"),
             ON | {"SVOD_THREADS": "2", "SVOD_EMITTER_PANIC": "optimizer", "RUST_BACKTRACE": "1"},
             program="realize"),
    Scenario("nextest-current", ("sum_rows", "optimizer_panic"), ON | {"SVOD_THREADS": "2"}, nextest="current",
             binary="ops+failures"),
    Scenario("nextest-old", ("sum_rows", "optimizer_panic"), ON | {"SVOD_THREADS": "2"}, nextest="old",
             binary="ops+failures"),
    Scenario("nextest-failures-only", ("sum_rows", "assert_body"), ON | {"SVOD_THREADS": "1"}, nextest="current",
             binary="ops+failures", success_output=False),
    Scenario("killed-mid-line", _test("sum_rows::llvm", "--nocapture", "--test-threads=1"),
             ON | {"SVOD_THREADS": "1", "SVOD_EMITTER_STALL": "30"}, kill=True),
]
BY_NAME = {s.name: s for s in SCENARIOS}


@dataclass
class Result:
    scenario: Scenario
    logs: list[Path]  # one file (merged) or stdout then stderr
    truth: list[dict]
    returncode: int
    libtest: dict[str, str]  # test -> ok | FAILED | ignored, as the runner printed it

    def texts(self) -> list[str]:
        return [p.read_text(encoding="utf-8", errors="replace") for p in self.logs]


def run(scenario: Scenario, where: Path, build: Build | None = None, seed: int | None = None) -> Result:
    """Run `scenario` once, its log(s) and truth under `where`."""
    where.mkdir(parents=True, exist_ok=True)
    truth_path = where / f"{scenario.name}.truth.jsonl"
    truth_path.unlink(missing_ok=True)
    env = base_env() | scenario.env | {"SVOD_EMITTER_TRUTH": str(truth_path)}
    if seed is not None:
        env["SVOD_EMITTER_SEED"] = str(seed)
    if scenario.nextest is not None:
        assert build is not None
        return _nextest(scenario, where, build, env, truth_path)
    if scenario.binary is not None:
        assert build is not None
        argv = [str(build.binaries[scenario.binary]), *scenario.command]
    else:
        argv = [cargo(), *scenario.command]
    if scenario.join == "merged":
        logs = [where / f"{scenario.name}.log"]
        out = open(logs[0], "wb")  # noqa: SIM115
        err = subprocess.STDOUT
    else:
        logs = [where / f"{scenario.name}.stdout.log", where / f"{scenario.name}.stderr.log"]
        out, err = open(logs[0], "wb"), open(logs[1], "wb")  # noqa: SIM115
    try:
        proc = subprocess.Popen(argv, cwd=CRATE, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        if scenario.kill:
            deadline = time.monotonic() + 300
            while not _stalled(truth_path):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{scenario.name}: the program never reached its stall point")
                time.sleep(0.02)
            os.killpg(proc.pid, signal.SIGKILL)
        returncode = proc.wait(timeout=600)
    finally:
        out.close()
        if err is not subprocess.STDOUT:
            err.close()
    truth = [json.loads(line) for line in truth_path.read_text().splitlines() if line.strip()]
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs)
    return Result(scenario, logs, truth, returncode, libtest_results(text))


def _stalled(truth: Path) -> bool:
    return truth.exists() and '"kind":"stall"' in truth.read_text()


RESULT = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)$")
STARTED = re.compile(r"^test (\S+) \.\.\. ")
WORD = re.compile(r"^(ok|FAILED|ignored)$")


def libtest_results(text: str) -> dict[str, str]:
    """What libtest said of each test: `test NAME ... RESULT`, or under one test thread with `--nocapture`,
    `test NAME ... ` then the test's own output, then the result word on a line of its own."""
    results: dict[str, str] = {}
    pending: str | None = None
    for raw in text.splitlines():
        line = ANSI.sub("", raw)
        if m := RESULT.match(line):
            results[m.group(1)] = m.group(2)
            pending = None
        elif m := STARTED.match(line):
            pending = m.group(1)
        elif pending is not None and (m := WORD.match(line)):
            results[pending] = m.group(1)
            pending = None
    return results


# ---------------------------------------------------------------------------------------------- what must be stored


@dataclass
class Run:
    """One run the reader must store: a test (or the program), how it ended, its panic, its kernels."""

    test: str
    outcome: str | None  # ok | FAILED | skipped | None (killed inside it)
    panic: dict | None = None  # the truth's panic record
    kernels: dict[tuple[int, int], str | None] = field(default_factory=dict)  # (schedule, index) -> final name
    skip_line: str | None = None


def expected(result: Result) -> dict[str, Run]:
    """The runs of the log, from the truth (and, for the outcome, libtest's word where it printed one)."""
    runs: dict[str, Run] = {}
    program = result.scenario.program
    text = ANSI.sub("", "".join(result.texts()))
    for record in result.truth:
        test = record.get("test") or program
        kind = record["kind"]
        if kind in ("test-start", "program-start"):
            runs[test] = Run(test, None)
        elif kind in ("test-end", "program-end"):
            runs[test].outcome = record["outcome"]
            runs[test].skip_line = record.get("skip_line")
        elif kind == "panic" and test in runs and runs[test].panic is None:
            # a panic whose message never reached the log (a rayon worker writing into the capture of the test
            # that started the pool, after that test ended) is a failure the log cannot place
            # (the hook writes its line in pieces, the location's file, line and column apart: another thread's
            # event may land in it)
            reached = f"' ({record['tid']}) panicked at " in text or record["message"].split("\n")[0] in text
            runs[test].panic = record if reached else None
            runs[test].outcome = "FAILED"
        elif kind == "kernel":
            runs[test].kernels[(record["schedule"], record["index"])] = record["name"]
        elif kind in ("event", "per-stage", "dump-stage") and record.get("kernel") is not None:
            runs[test].kernels.setdefault((record["schedule"], record["kernel"]), None)
    for run in runs.values():  # a skip line the runner kept (captured output) is not in the log: the log says ok
        if run.outcome == "skipped" and run.skip_line and run.skip_line not in text:
            run.outcome = "ok"
    for test, said in result.libtest.items():
        if test in runs and said == "FAILED":
            runs[test].outcome = "FAILED"
    return runs


# ------------------------------------------------------------------------------ where each printed stage landed

EVENT_START = re.compile(r'\{"timestamp":"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s')
PER_STAGE = re.compile(r"\[per-stage\] ")
DUMP = re.compile(r"\[dump-stage\] ")
CANONICAL = re.compile(r"\[dump-canonical\] ")
TOKENS = {"out": [("events", EVENT_START)],
          "err": [("per-stage", PER_STAGE), ("dump-stage", DUMP), ("dump-canonical", CANONICAL)]}
RECORD_KINDS = {"events": ("event", "schedule-event", "code"), "per-stage": ("per-stage",),
                "dump-stage": ("dump-stage",), "dump-canonical": ("dump-canonical",)}


class Unlocatable(AssertionError):
    """The log's records cannot all be found at their lines: two stderr writers (the panic hook and Svod's
    `eprintln!`s, neither holding the other out) interleaved piece by piece."""


# std's default panic hook writes to raw stderr without stderr's lock (std/src/panicking.rs `default_hook`,
# `panic_output`): its `thread 'NAME' (TID) panicked at FILE:L:C:` line and message in one write when they fit its
# 512-byte buffer, else piece by piece (Svod's messages carry a UOp tree), and any backtrace line by line; so another
# thread's `eprintln!` dump header can land inside the panic line, and the panic's pieces inside that header.
PANIC_HOOK = re.compile(r"panicked at|stack backtrace:")


@dataclass(frozen=True)
class Landed:
    record: dict
    file: int  # position among the ingested paths
    line: int  # 1-based
    shared: bool = False  # a tearing: another record starts on this line too, or this one starts after other text
    # (another stream's pieces); the reader puts it back on a line of its own, one or two lines on


def _starts(text: str, pattern: re.Pattern[str]) -> list[int]:
    lines = [ANSI.sub("", raw) if "\x1b" in raw else raw for raw in text.split("\n")]
    if pattern in (DUMP, CANONICAL):
        return _dump_headers(lines, pattern)
    return [number for number, line in enumerate(lines, start=1) for _ in pattern.findall(line)]


def _mid_line(text: str, pattern: re.Pattern[str]) -> set[int]:
    """The lines where a record of this kind starts after other text: another stream's pieces cut in before it."""
    lines = [ANSI.sub("", raw) if "\x1b" in raw else raw for raw in text.split("\n")]
    return {number for number, line in enumerate(lines, start=1)
            if (m := pattern.search(line)) and m.start() > 0 and pattern not in (DUMP, CANONICAL)}


def _dump_headers(lines: list[str], pattern: re.Pattern[str]) -> list[int]:
    """The lines `[dump-stage] LABEL :` starts on (not its `: end`). `eprintln!` writes `[dump-stage] `, the label
    and ` :` apart, so another thread's whole event line can come between them: that event is cut out and the
    header read on across the line break."""
    headers = []
    for number, line in enumerate(lines, start=1):
        for m in pattern.finditer(line):
            tail, following = line[m.end():], number
            while (cut := EVENT_START.search(tail)) and following < len(lines):
                tail = tail[:cut.start()] + lines[following]
                following += 1
            if re.match(r"\S+ :\s*$", tail) or (re.match(r"\S+ :", tail) and not re.match(r"\S+ : end", tail)):
                headers.append(number)
    return headers


def locate(result: Result) -> list[Landed]:
    """Each printed record's file and line, in a log where everything printed reached the file (`--nocapture` or a
    program). Checks the corpus itself: as many starts of each kind in the file(s) as the truth has records."""
    texts = result.texts()
    landed: list[Landed] = []
    torn: set[tuple[int, int]] = set()
    for kind_name, pattern in [*TOKENS["out"], *TOKENS["err"]]:
        stream = "out" if (kind_name, pattern) in TOKENS["out"] else "err"
        position = 0 if result.scenario.join == "merged" or stream == "out" else 1
        starts = _starts(texts[position], pattern)
        torn |= {(position, line) for line in _mid_line(texts[position], pattern)}
        records = [r for r in result.truth if r["kind"] in RECORD_KINDS[kind_name]]
        if result.scenario.kill and kind_name == "per-stage":
            starts = starts[:len(records)]  # the cut line's record was never written (it stalled inside it)
        if len(starts) != len(records) and PANIC_HOOK.search(texts[position]):
            raise Unlocatable(f"{result.scenario.name}: {len(starts)} {kind_name} starts in the log but "
                              f"{len(records)} in the truth: the panic hook's lines (and any backtrace) and Svod's "
                              "stderr interleaved piece by piece, past what this locator reads")
        if len(starts) != len(records):
            raise AssertionError(f"{result.scenario.name}: {len(starts)} {kind_name} starts in the log but "
                                 f"{len(records)} in the truth: the corpus or its harness is wrong")
        landed += [Landed(r, position, line) for r, line in zip(records, starts, strict=True)]
    starting = Counter((entry.file, entry.line) for entry in landed)
    return [replace(entry, shared=True) if starting[(entry.file, entry.line)] > 1 or (entry.file, entry.line) in torn
            else entry for entry in landed]


def stage_records(landed: Iterable[Landed]) -> list[Landed]:
    return [entry for entry in landed if entry.record["kind"] in ("event", "per-stage", "dump-stage", "dump-canonical")
            and entry.record.get("kernel") is not None]


# -------------------------------------------------------------------------------------------- random scenarios


def draw(seed: int) -> Scenario:
    """A scenario drawn from `seed`, run on the built `random` test binary directly (no cargo): Svod's switches,
    the subscriber's format, thread counts, capture, how the streams are written, RUST_BACKTRACE. The binary draws
    its program from the same seed (tests/svod_emitter/tests/random.rs: kernels, backend, two programs, failure)."""
    rng = random.Random(seed)
    env = {"SVOD_THREADS": str(rng.choice([1, 2, 4])),
           "RUST_LOG": rng.choice([TRACE] * 6 + ["svod_schedule::optimizer=debug", "svod_schedule::optimizer=trace"])}
    if rng.random() < 0.6:
        env["SVOD_PER_STAGE_UOPS"] = "1"
    if (dump := rng.choice([None] * 6 + ["1", "2", ""])) is not None:
        env["SVOD_DUMP_STAGE"] = dump
    if rng.random() < 0.15:
        env["SVOD_DUMP_CANONICAL_STAGE"] = rng.choice(["", "o", "p", "f", "l", "1"])
    if (fmt := rng.choice([None] * 6 + ["full", "compact", "json+ids+names", "full+ids+names-ansi"])) is not None:
        env["SVOD_EMITTER_FORMAT"] = fmt
    if (backtrace := rng.choice([None, None, "1", "full"])) is not None:
        env["RUST_BACKTRACE"] = backtrace
    libtest = ["--exact", "seeded::program_under_test", "--test-threads=1"]
    if rng.random() < 0.8:
        libtest.append("--nocapture")
    join = rng.choice(["merged"] * 3 + ["apart"])
    return Scenario(f"random-{seed}", tuple(libtest), env, join=join, binary="random", state_threads=rng.random() < 0.5)


# ------------------------------------------------------------------------------------------------------ nextest
# nextest is not packaged here: its report is laid out from its source around the emitter's real test processes,
# run as nextest runs them (one process per test, `BIN --exact NAME --nocapture`, stdout and stderr captured apart).
# Formats (facts from nextest-rs/nextest, nextest-runner/src/reporter/displayer/imp.rs):
# * current: bdb177eb9b314648ca3271d2536f28b6dfec12c2, `output_spec_for_finished`: `  stdout ───` / `  stderr ───`
#   headers, the output indented four spaces by indent_write (no indent on an empty line); status lines
#   `        PASS [   0.450s] (1/5) BINARY-ID TEST` (status right-aligned in 12), `    Starting N tests across M
#   binaries`, `     Summary [   1.005s] N tests run: P passed, F failed, S skipped`.
# * older: 000c2a46343cfcdb57732d6c404f7ebaae9dd610 (as tests/svod_runners.py read it), `output_spec_for_test`: a
#   four-wide bar, `STDOUT:` padded to 19, then the binary id and the test (`──── STDOUT:             BIN TEST`),
#   the output unindented.
# Both end a block with an empty line (unit_output.rs `write_child_execution_output`).
NEXTEST_ERAS = ("current", "old")


def _nextest_header(era: str, stream: str, binary: str, test: str) -> str:
    if era == "old":
        return f"──── {stream.upper() + ':':<19} {binary} {test}"
    return f"  {stream} ───"


def _nextest_body(era: str, text: str) -> list[str]:
    lines = text.rstrip("\n").split("\n") if text else []
    return lines if era == "old" else ["    " + line if line else "" for line in lines]


def _nextest(scenario: Scenario, where: Path, build: Build, env: dict[str, str], truth_path: Path) -> Result:
    """Each test of the binaries (`ops+failures`) whose name contains one of `scenario.command`, one process each,
    then the report nextest prints of them."""
    tests: list[tuple[str, Path, str]] = []  # (binary id, binary, test)
    for name in (scenario.binary or "").split("+"):
        listed = subprocess.run([str(build.binaries[name]), "--list", "--format", "terse"], capture_output=True,
                                text=True, env=env, cwd=CRATE, timeout=120).stdout
        for line in listed.splitlines():
            test = line.removesuffix(": test")
            if line.endswith(": test") and any(f in test for f in scenario.command):
                tests.append((f"svod_emitter::{name}", build.binaries[name], test))
    width = len(str(len(tests)))
    report = [f"    Starting {len(tests)} tests across {len({b for b, _p, _t in tests})} binaries"]
    results: dict[str, str] = {}
    for n, (binary_id, binary, test) in enumerate(tests, start=1):
        proc = subprocess.run([str(binary), "--exact", test, "--nocapture"], capture_output=True, env=env,
                              cwd=CRATE, timeout=300)
        passed = proc.returncode == 0
        results[test] = "ok" if passed else "FAILED"
        status = "PASS" if passed else "FAIL"
        report.append(f"{status:>12} [   0.{400 + n:03d}s] ({n:>{width}}/{len(tests)}) {binary_id} {test}")
        if scenario.success_output or not passed:
            for stream, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                report.append(_nextest_header(scenario.nextest or "current", stream, binary_id, test))
                report += _nextest_body(scenario.nextest or "current", data.decode("utf-8", "replace"))
            report.append("")
    failed = [t for t, r in results.items() if r == "FAILED"]
    report += ["────────────", f"     Summary [   1.{len(tests):03d}s] {len(tests)} tests run: "
               f"{len(tests) - len(failed)} passed, {len(failed)} failed, 0 skipped"]
    for n, (binary_id, _binary, test) in enumerate(tests, start=1):
        if test in failed:
            report.append(f"{'FAIL':>12} [   0.{400 + n:03d}s] ({n:>{width}}/{len(tests)}) {binary_id} {test}")
    log = where / f"{scenario.name}.log"
    log.write_text("\n".join(report) + "\n", encoding="utf-8")
    truth = [json.loads(line) for line in truth_path.read_text().splitlines() if line.strip()]
    return Result(scenario, [log], truth, 1 if failed else 0, results)


def bench_log(where: Path, kernels: int = 300, threads: int | None = None, build: Build | None = None) -> Path:
    """A log of real size from the emitter (for bench/bench_svod_log.py): one test realizing `kernels` kernels at
    trace level with `[per-stage]` lines and every stage dumped, `SVOD_THREADS=threads` (None: Svod's default)."""
    env = {"RUST_LOG": TRACE, "SVOD_PER_STAGE_UOPS": "1", "SVOD_DUMP_STAGE": "", "SVOD_EMITTER_KERNELS": str(kernels)}
    if threads is not None:
        env["SVOD_THREADS"] = str(threads)
    scenario = Scenario(f"bench-{kernels}-{threads or 'default'}",
                        ("--exact", "seeded::program_under_test", "--nocapture", "--test-threads=1"), env,
                        binary="random")
    return run(scenario, where, build or globals()["build"](), seed=1).logs[0]
