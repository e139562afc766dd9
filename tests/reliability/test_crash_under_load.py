"""A test of the crash tests: they pass with two busy loops hogging the CPU beside
them, and they count exactly the same kills and landed operations as on an idle
machine (the kills land at named points, not after a delay). Part of ``-m stress``."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .support import REPO

TESTS = [
    "tests/reliability/test_crash.py",
    "tests/reliability/test_crash_generation.py",
    "tests/store/test_layout_crash.py::test_sigkill_while_sealing_never_loses_or_duplicates_a_record",
    "tests/store/test_concurrency_and_crash.py::test_sigkill_at_every_write_point_never_leaves_a_broken_state_file",
]


def run_crash_tests() -> str:
    """Run the crash tests in one process (``-n 0``: their ``-s`` lines are parsed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-n", "0", *TESTS],
        cwd=REPO, capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return "\n".join(re.findall(r"^(?:\.)?((?:commit|outcome|generation(?: \(\w+\))?): .*)$", proc.stdout, re.M))


@pytest.mark.stress
def test_the_crash_tests_pass_and_count_the_same_beside_two_busy_loops():
    idle = run_crash_tests()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        busy = run_crash_tests()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert busy == idle and busy.count("kills") == 4  # commit, outcome, generation × 2 write paths
