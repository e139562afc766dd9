"""Shared fixtures: real temporary workspaces, the service over them, and real agent
sessions: the project's own (``tests/fixtures/sessions/``, recorded by
``tests/fixtures/record_sessions.py``), always there, and an outside folder of
third-party session fixtures (``$HANDOFF_FIXTURES``, or ``shared/fixtures`` beside the
checkout) when one is given. Tests about the third-party sessions' own contents are
collected only when that folder exists (the header says how many were left out);
every other generation test runs on the project's own sessions."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lsp_server.surfaces.service import HandoffService, ServiceConfig

REPO = Path(__file__).resolve().parent.parent
#: The sessions the project recorded itself (see tests/fixtures/sessions/README.md).
OWN_SESSIONS = REPO / "tests" / "fixtures" / "sessions"
#: One real session per agent: pi and Gemini CLI (the real agents), Claude Code and Codex
#: (own writer).
OWN = {
    "pi": OWN_SESSIONS / "pi" / "pets-fix.jsonl",
    "claude": OWN_SESSIONS / "claude" / "pets-fix.own-writer.jsonl",
    "codex": OWN_SESSIONS / "codex" / "pets-fix.own-writer.jsonl",
    "gemini": OWN_SESSIONS / "gemini" / "pets-fix.jsonl",
}
#: A small real pi session (one read, one answer): a short prompt for a slow real model.
OWN_SMALL_PI = OWN_SESSIONS / "pi" / "pets-read.jsonl"


def shared_fixtures() -> Path | None:
    """``$HANDOFF_FIXTURES`` or ``../shared/fixtures`` beside the checkout."""
    env = os.environ.get("HANDOFF_FIXTURES")
    candidate = Path(env) if env else REPO.parent / "shared" / "fixtures"
    return candidate if candidate.is_dir() else None


def sizes(short: int, full: int) -> list:
    """Parameters for a test with a quick default size and a full stress size: the
    default run (``-m "not stress"``, see pyproject.toml) takes ``short``; ``-m stress``
    (run by .ci/run) takes ``full``."""
    return [
        pytest.param(short, id=f"n{short}"),
        pytest.param(full, id=f"stress-n{full}", marks=pytest.mark.stress),
    ]


@pytest.fixture
def fixtures_dir() -> Path:
    """The outside folder of third-party session fixtures. Tests that ask for it are
    not collected when it is absent (see ``pytest_collection_modifyitems``)."""
    found = shared_fixtures()
    assert found is not None, "collected without the session-fixture folder"
    return found


def pytest_collection_modifyitems(config, items):
    """Without an outside session-fixture folder, the tests about those sessions'
    contents are left out of the run (not skipped: there is nothing to run them on);
    the tests of generation on real sessions run on the project's own instead."""
    if shared_fixtures() is not None:
        return
    left, kept = [], []
    for item in items:
        third = "fixtures_dir" in getattr(item, "fixturenames", ()) or item.get_closest_marker(
            "third_party"
        )
        (left if third else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config._handoff_left_out = len(left)
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: tell the controller
            config.workeroutput["handoff_left_out"] = len(left)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """On the pytest-xdist controller: the count of left-out tests a worker collected
    (every worker collects the whole run, so any one of them gives it)."""
    left = getattr(node, "workeroutput", {}).get("handoff_left_out")
    if left:
        node.config._handoff_left_out = left


def pytest_report_header(config):
    found = shared_fixtures()
    if found is not None:
        return f"session fixtures: the project's own and {found}"
    return (
        "session fixtures: the project's own (tests/fixtures/sessions); no outside folder "
        "(HANDOFF_FIXTURES), so the tests about third-party sessions are not collected"
    )


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = getattr(config, "_handoff_left_out", 0)
    if left:
        terminalreporter.write_line(
            f"{left} tests about third-party session fixtures were not collected "
            "(set HANDOFF_FIXTURES to a folder of them to run these too)"
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small real project: an OpenAPI spec and a generated client."""
    root = tmp_path / "ws"
    (root / "client").mkdir(parents=True)
    (root / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (root / "client" / "pets_client.py").write_text("def list_pets(s):\n    return s.get('/pets')\n")
    return root


@pytest.fixture
def svc(workspace: Path) -> HandoffService:
    return HandoffService(workspace, ServiceConfig())


#: The store implementations the domain suite and the walkthrough run against.
BACKENDS = ("tinydb", "postgresql")


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway PostgreSQL cluster for the test session (schema migrated, the
    application role granted); skipped only when no server binaries are installed."""
    from . import pgcluster

    bindir = pgcluster.server_bindir()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found by pg_config, "
            "PATH or /usr/lib/postgresql/*/bin: install Debian's 'postgresql' package"
        )
    cluster = pgcluster.Cluster(bindir)
    try:
        pgcluster.migrated(cluster)
        yield cluster
    finally:
        from lsp_server.store.postgres import close_pools

        close_pools()
        cluster.close()


@pytest.fixture
def pg_store(pg_cluster, monkeypatch):
    """Select the PostgreSQL store for this test (the least-privilege application role)
    with a project id of its own, so tests share the cluster and not their records."""
    import uuid

    monkeypatch.setenv("HANDOFF_STORE", pg_cluster.app_url)
    monkeypatch.setenv("HANDOFF_PROJECT", f"test/{uuid.uuid4().hex}")
    return pg_cluster


@pytest.fixture
def own_cluster(pg_cluster, monkeypatch):
    """A cluster of this test's own (the test stops and starts it), selected as the
    store with a short wait (``HANDOFF_LOCK_TIMEOUT=2``)."""
    from lsp_server.store.postgres import close_pools

    from . import pgcluster

    cluster = pgcluster.Cluster(pg_cluster.bindir)
    try:
        pgcluster.migrated(cluster)
        monkeypatch.setenv("HANDOFF_STORE", cluster.app_url)
        monkeypatch.setenv("HANDOFF_PROJECT", "restart")
        monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "2")
        yield cluster
    finally:
        close_pools()
        cluster.close()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """The store backend of a parameterised test (PostgreSQL selected by environment)."""
    if request.param == "postgresql":
        request.getfixturevalue("pg_store")
    else:
        mp = request.getfixturevalue("monkeypatch")
        mp.delenv("HANDOFF_STORE", raising=False)
    return request.param


@pytest.fixture
def python() -> str:
    return sys.executable
