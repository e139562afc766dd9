"""The quality benchmark's probes as a test: on every real session with probes (the
project's own, and the outside session fixtures when given), every probe holds, no
statement is false, and the document stays under 900 words."""

from __future__ import annotations

import pytest

from tests.bench import quality


def _probes() -> list[quality.Probe]:
    fixtures = quality.shared_fixtures()
    return quality.own_probes() + (quality.load_probes(fixtures) if fixtures is not None else [])


@pytest.mark.parametrize("probe", _probes(), ids=lambda p: p.session.name)
def test_the_handoff_of_a_real_session_holds_its_probes(probe: quality.Probe) -> None:
    outcome = quality.check(probe)
    assert outcome.error is None, outcome.error
    assert outcome.missed == [], f"facts missing: {outcome.missed}"
    assert outcome.false == [], f"false statements: {outcome.false}"
    assert outcome.words <= quality.WORD_LIMIT


def test_the_probes_are_found(fixtures_dir) -> None:
    probes = quality.load_probes(fixtures_dir)
    assert len(probes) >= 8  # the truth notes' probes at least
    assert all(p.must or p.expect_error or p.not_in_next or p.not_in_goal for p in probes)
