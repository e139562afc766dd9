"""Shared helpers of the benchmarks: percentiles, the machine, and one result format.

A benchmark module ``tests/bench/bench_<area>.py`` builds a ``BenchResult`` and calls
``emit(result)``: it prints the tables as Markdown and, when the runner
(``python -m tests.bench``) sets ``HANDOFF_BENCH_JSON``, also writes them as JSON there
so the runner can mark each target met or not in ``docs/performance.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

RESULT_ENV = "HANDOFF_BENCH_JSON"


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (0..100), nearest rank."""
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


@dataclass
class Target:
    """One target of issue 9: a ratio measured in this run against its limit."""

    name: str
    measured: float | None
    limit: float
    unit: str = "×"
    detail: str = ""
    #: Why it is not met and what would fix it (filled in when not met).
    plan: str = ""
    #: "le": met when measured <= limit; "ge": met when measured >= limit.
    direction: str = "le"

    @property
    def met(self) -> bool:
        if self.measured is None:
            return False
        if self.direction == "ge":
            return self.measured >= self.limit
        return self.measured <= self.limit


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""

    def markdown(self) -> str:
        out = [f"#### {self.title}", ""]
        if self.note:
            out += [self.note, ""]
        out.append("| " + " | ".join(self.columns) + " |")
        out.append("|" + "|".join("---" for _ in self.columns) + "|")
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        return "\n".join(out)


@dataclass
class BenchResult:
    area: str
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for t, target in zip(out["targets"], self.targets, strict=True):
            t["met"] = target.met
        return out


def target_line(t: Target) -> str:
    if t.measured is None:
        value = "not measured"
    elif t.unit == "%":
        value = f"{t.measured:.1f} %"
    else:
        value = f"{t.measured:.2f}{t.unit}"
    op = "≥" if t.direction == "ge" else "≤"
    limit = f"{t.limit:g} %" if t.unit == "%" else f"{t.limit:g}{t.unit}"
    state = "met" if t.met else "NOT MET"
    return f"{t.name}: {value} (target {op} {limit}) → {state}"


def emit(result: BenchResult) -> None:
    """Print the result as Markdown; write JSON for the runner when asked to."""
    print(f"### {result.area}\n")
    for table in result.tables:
        print(table.markdown() + "\n")
    for t in result.targets:
        print("- " + target_line(t) + (f" ({t.detail})" if t.detail else ""))
    for note in result.notes:
        print(f"- {note}")
    print(flush=True)
    dest = os.environ.get(RESULT_ENV)
    if dest:
        Path(dest).write_bytes(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2))


def finished_note(quick: bool, seconds: float, runs: int | None = None) -> str:
    """The note that closes a result: sizes, how many runs, how long, when, the cores."""
    return (
        f"{'Quick sizes; ' if quick else ''}{f'{runs} runs, ' if runs else ''}{seconds:.0f} s "
        f"in all, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores."
    )


def result_markdown(result: BenchResult, command: str, after: str = "") -> str:
    """A result as a section of ``docs/performance.md``: its heading, the command that
    made it, its tables and notes, then ``after``."""
    lines = [f"### {result.area}", "", f"`{command}`", ""]
    for table in result.tables:
        lines += [table.markdown(), ""]
    lines += [f"- {note}" for note in result.notes]
    if after:
        lines += ["", after]
    return "\n".join(lines)


def write_doc_section(doc: Path, name: str, text: str) -> None:
    """Put ``text`` between the ``<!-- name: begin -->`` and ``end`` markers of ``doc``
    (appended with them at the end when they are not there yet)."""
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    content = doc.read_text(encoding="utf-8") if doc.exists() else "# Performance\n"
    section = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in content and end in content:
        head, rest = content.split(begin, 1)
        content = head + section + rest.split(end, 1)[1]
    else:
        content = content.rstrip() + "\n\n" + section + "\n"
    doc.write_text(content, encoding="utf-8")


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    info = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                kb = int(line.split()[1])
                info["memory"] = f"{kb / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["df", "-T", "-h", str(Path.cwd())], capture_output=True, text=True, timeout=5
        ).stdout.splitlines()
        if len(out) > 1:
            parts = out[1].split()
            info["filesystem"] = f"{parts[1]} on {parts[0]}"
    except (OSError, subprocess.SubprocessError):
        pass
    info["executable"] = sys.executable
    return info
