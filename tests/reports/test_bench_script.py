"""The reports benchmark stays runnable, and the log it builds is one the projections
accept in full (so it measures real work, not skipped records)."""

from __future__ import annotations

import orjson

from lsp_server.views import projections
from tests.bench import bench_reports


def test_bench_state_is_a_valid_log_with_covered_milestones():
    state = orjson.loads(orjson.dumps(bench_reports.build_state(1000)))
    view = projections.continuity(state, bench_reports.SCOPE)
    assert view["invalidRecordCount"] == 0
    assert view["totalEvents"] == 1000 + len(state["revisions"]) == 1010
    assert view["head"] == "handoff/0123456789ab@10"
    assert view["transfer"] == "accepted" and view["outcome"] == "covered"
    hist = projections.history(state, bench_reports.SCOPE)
    assert [r["covered"] for r in hist["revisions"]] == [True] * 10


def test_bench_runs_end_to_end_and_prints_its_ratios(capsys):
    bench_reports.main(["--sources", "1500", "--rounds", "1", "--no-write"])
    out = capsys.readouterr().out
    assert "| orjson.loads of the whole state (baseline) |" in out
    assert "× a bare orjson.loads" in out and "% of the" in out
