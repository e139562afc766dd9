"""The benchmark summary judges the session-reading target on each format's median of
its per-run generate / orjson ratios, the worst format deciding."""

from __future__ import annotations

from tests.bench.__main__ import Verdict, _session_speed

HEADER = "| format | size | generate | generate per run |\n|---|---:|---:|---:|\n"


def _judged(rows: str) -> Verdict:
    v = Verdict("session reading", "≤ 3×")
    _session_speed(v, HEADER + rows)
    return v


def test_session_target_is_judged_on_the_worst_median_of_the_paired_runs():
    v = _judged(
        "| pi | 100 MB | 0.97 s | ×2.05 / ×2.55 / ×5.42 |\n"
        "| claude | 101 MB | 0.89 s | ×1.82 / ×3.10 / ×3.30 |\n"
        "| codex | 100 MB | 1.38 s | ×1.31 / ×1.98 / ×2.80 |\n"
    )
    assert v.met is False  # Claude Code's median is above 3× although pi's max is worse
    assert v.measured.startswith("3.10× (Claude Code")
    assert "pi ×2.55" in v.detail and "Codex ×1.98" in v.detail


def test_session_target_met_when_every_median_is_within_3x_whatever_the_maxima():
    v = _judged(
        "| pi | 100 MB | 0.97 s | ×2.05 / ×2.55 / ×5.42 |\n"
        "| claude | 101 MB | 0.89 s | ×1.82 / ×2.46 / ×5.74 |\n"
    )
    assert v.met is True and v.measured.startswith("2.55× (pi")
