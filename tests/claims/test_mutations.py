"""The mutation benchmark of the claim checker (issue 37) as a gate: false claims planted
in every real session's draft are caught, and the unchanged drafts are left alone."""

from __future__ import annotations

from pathlib import Path

from tests.bench.claims import KINDS, run


def test_planted_false_claims_are_caught_and_unchanged_drafts_are_left_alone(fixtures_dir: Path):
    results = run(fixtures_dir)
    planted = [v for r in results for v in r.caught.values()]
    assert len(results) >= 20 and len(planted) >= 50
    assert sum(planted) / len(planted) >= 0.90, [(r.name, r.missed) for r in results if r.missed]
    for kind in KINDS:
        assert any(kind in r.caught for r in results), kind  # every mutation was planted somewhere
    lines = sum(r.lines for r in results)
    assert sum(r.flagged for r in results) / lines <= 0.05
