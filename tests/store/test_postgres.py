"""The PostgreSQL store across "machines": two workspace clones of one repository, real
processes, one throwaway database; killed connections, a restarted database, the
append-only tables, the schema guard, and the connection string kept out of messages."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import orjson
import psycopg
import pytest

from lsp_server.model import lifecycle as lc
from lsp_server.model.errors import HandoffError
from lsp_server.store.pgschema import SCHEMA_VERSION, migrate
from lsp_server.store.postgres import PgStore, PgTransaction
from lsp_server.store.project import normalise_remote, project_id
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..conftest import sizes
from ..helpers import SCOPE, prepare, record_contract, refused
from ..pgcluster import APP_ROLE

REPO = Path(__file__).resolve().parents[2]


def clone(root: Path, remote: str) -> Path:
    """A workspace checkout with the test project's files and a git remote."""
    root.mkdir(parents=True)
    (root / "client").mkdir()
    (root / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (root / "client" / "pets_client.py").write_text("def list_pets(s):\n    return s.get('/pets')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    return root


@pytest.fixture
def clones(pg_store, tmp_path, monkeypatch):
    """Two clones of one repository (one cloned over https, one over ssh) sharing the
    database; the project id comes from their remotes, not from the environment."""
    monkeypatch.delenv("HANDOFF_PROJECT")
    name = f"pets-{uuid.uuid4().hex[:8]}"
    a = clone(tmp_path / "laptop", f"https://tok:secret@git.example.com/team/{name}.git")
    b = clone(tmp_path / "ci-agent", f"git@git.example.com:team/{name}.git")
    assert project_id(a) == project_id(b) == f"git.example.com/team/{name}"
    return a, b


def spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.worker", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )


def test_project_id_is_the_remote_without_scheme_user_or_dot_git():
    assert normalise_remote("https://u:p@GitHub.com/o/r.git") == "github.com/o/r"
    assert normalise_remote("ssh://git@github.com:22/o/r.git") == "github.com/o/r"
    assert normalise_remote("git@github.com:o/r.git") == "github.com/o/r"
    assert normalise_remote("git@github.com:o/r") == "github.com/o/r"
    assert normalise_remote("not a url") is None


def test_eight_processes_in_two_clones_race_one_base_exactly_one_wins(clones, tmp_path):
    a, b = clones
    svc_a, svc_b = HandoffService(a), HandoffService(b)
    contract = record_contract(svc_a)
    base = svc_a.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc_a, contract)})
    go = tmp_path / "go"
    procs, outs = [], []
    for i in range(8):
        ws, svc = (a, svc_a) if i % 2 == 0 else (b, svc_b)
        prepared = prepare(svc, contract, state=f"worker {i} on {ws.name} finished")
        assert prepared["base"] == base["revision"]
        pf, out = tmp_path / f"prepared{i}.json", tmp_path / f"out{i}.json"
        pf.write_bytes(orjson.dumps(prepared))
        procs.append(spawn("commit", str(ws), str(pf), str(go), str(out)))
        outs.append(out)
    time.sleep(1.0)  # let every worker reach the barrier
    go.touch()
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    results = [orjson.loads(o.read_bytes()) for o in outs]
    wins = [r for r in results if "revision" in r]
    conflicts = [r for r in results if r.get("error") == "revision_conflict"]
    assert len(wins) == 1 and len(conflicts) == 7, results
    assert all(
        c["data"]["expected"] == base["revision"] and c["data"]["current"] == wins[0]["revision"]
        for c in conflicts
    )
    assert len(svc_b.store.read()["revisions"]) == 2
    for svc in (svc_a, svc_b):  # both machines see the winner as the head
        latest = svc.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
        assert latest["selected"] == wins[0]["revision"]


@pytest.mark.parametrize("count", sizes(25, 200))
def test_eight_writers_in_two_clones_append_and_none_is_lost(clones, tmp_path, count):
    a, b = clones
    go = tmp_path / "go"
    procs = [spawn("append", str(a if i % 2 else b), f"writer-{i}", str(count), str(go))
             for i in range(8)]
    time.sleep(1.0)
    go.touch()
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read().decode()
    sources = list(HandoffService(a).store.read()["sources"].values())
    assert len(sources) == 8 * count
    seqs = sorted(s["seq"] for s in sources)
    assert seqs == list(range(seqs[0], seqs[0] + 8 * count))  # unique and contiguous
    for i in range(8):
        mine = [s["payload"]["summary"] for s in sources if s["scope"] == f"writer-{i}"]
        assert sorted(mine) == sorted(f"writer-{i} #{n}" for n in range(count))


def test_a_connection_killed_mid_commit_leaves_nothing_partial(pg_store, workspace, monkeypatch):
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    first = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    before = svc.store.read()
    prepared = prepare(svc, contract, state="second round")
    real_set_head = PgTransaction.set_head
    killed = []

    def set_head_after_kill(self, scope, expected, head):
        # The revision row is written; the head is not yet moved: kill the connection.
        pid = self.conn.info.backend_pid
        with psycopg.connect(pg_store.owner_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        killed.append(pid)
        return real_set_head(self, scope, expected, head)

    monkeypatch.setattr(PgTransaction, "set_head", set_head_after_kill)
    err = refused(svc.call, "handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert killed and err.code == "store_busy"
    assert pg_store.app_url.split("@")[0].split(":")[-1] not in err.message  # no password
    monkeypatch.setattr(PgTransaction, "set_head", real_set_head)
    after = svc.store.read()
    assert after == before  # no revision, no head move, no sequence number used
    assert after["scopes"]["1"]["head"] == first["revision"]
    again = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})  # same service
    assert again["number"] == 2 and again["idempotent"] is False
    retried = svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
    assert retried["idempotent"] is True and retried["revision"] == again["revision"]


def test_a_writer_process_killed_mid_transaction_leaves_nothing(pg_store, workspace, tmp_path):
    svc = HandoffService(workspace)
    record_contract(svc)
    before = svc.store.read()
    code = (
        "import os, signal, sys\n"
        "from lsp_server.surfaces.service import HandoffService\n"
        "from lsp_server.model import lifecycle as lc\n"
        f"svc = HandoffService({str(workspace)!r})\n"
        "with svc.store.transaction() as tx:\n"
        "    lc.append_source(tx, 'openapi-client', 'task_outcome', {'status': 'partial',"
        " 'summary': 'never', 'checks': []})\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    assert svc.store.read() == before
    # The project's row lock died with the connection: the next write goes through.
    assert svc.call(
        "handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": "after"}
    )["seq"] == before["_meta"]["1"]["nextSeq"]


def test_database_restarted_under_load_is_store_busy_then_recovers(own_cluster, workspace):
    services = [HandoffService(workspace) for _ in range(4)]  # four long-lived "servers"
    stop = threading.Event()
    acked: list[int] = []
    refusals: list[str] = []
    unexpected: list[BaseException] = []

    def load(svc: HandoffService, n: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                out = svc.call(
                    "handoff.recordOutcome",
                    {"scope": f"load-{n}", "status": "partial", "summary": f"{n}/{i}"},
                )
                acked.append(out["seq"])
            except HandoffError as exc:
                refusals.append(exc.code)
                time.sleep(0.05)
            except BaseException as exc:  # anything else is a failure of the test
                unexpected.append(exc)
                return

    threads = [threading.Thread(target=load, args=(s, n)) for n, s in enumerate(services)]
    for t in threads:
        t.start()
    while len(acked) < 20:
        time.sleep(0.05)
    own_cluster.stop("fast")
    down = len(refusals)
    while len(refusals) < down + 4:
        time.sleep(0.05)
    own_cluster.start()
    up = len(acked)
    deadline = time.monotonic() + 120
    while len(acked) < up + 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not unexpected, unexpected
    assert refusals and set(refusals) == {"store_busy"}
    assert len(acked) >= up + 20  # every service recovered without being restarted
    stored = sorted(s["seq"] for s in services[0].store.read()["sources"].values())
    assert set(acked) <= set(stored)  # every acknowledged write is there
    assert len(stored) == len(set(stored))


def test_sources_revisions_and_receipts_are_append_only(pg_store, workspace):
    svc = HandoffService(workspace)
    contract = record_contract(svc)
    svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc, contract)})
    for url, why in ((pg_store.app_url, "permission denied"), (pg_store.owner_url, "append-only")):
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in (
                "UPDATE handoff_sources SET kind = 'x'",
                "DELETE FROM handoff_sources",
                "UPDATE handoff_revisions SET digest = 'x'",
                "DELETE FROM handoff_revisions",
                "DELETE FROM handoff_generations",
                "TRUNCATE handoff_sources",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
                    conn.execute(statement)
                assert why in str(info.value), statement
    assert len(svc.store.read()["sources"]) == 1


def test_newer_schema_is_refused_and_left_untouched(pg_cluster, tmp_path, monkeypatch):
    other = f"newer_{uuid.uuid4().hex[:8]}"
    with pg_cluster.connect() as conn:
        conn.execute(f"CREATE DATABASE {other}")
    url = pg_cluster.url("postgres", db=other)
    with psycopg.connect(url) as conn:
        migrate(conn, "test")
        conn.execute("UPDATE handoff_schema SET version = %s", (SCHEMA_VERSION + 1,))
        conn.commit()
    monkeypatch.setenv("HANDOFF_STORE", url)
    monkeypatch.setenv("HANDOFF_PROJECT", "p")
    svc = HandoffService(clone(tmp_path / "ws", "https://example.com/p.git"))
    for command, params in (
        ("handoff.contract", {"scope": SCOPE, "objective": "o", "inScope": ["i"],
                              "acceptance": ["a"]}),
        ("handoff.report", {"scope": SCOPE, "kind": "continuity"}),
    ):
        err = refused(svc.call, command, params)
        assert err.code == "store_corrupt" and err.data["reason"] == "newer_schema"
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM handoff_schema").fetchone()[0] == SCHEMA_VERSION + 1
        assert conn.execute("SELECT count(*) FROM handoff_projects").fetchone()[0] == 0


def test_the_connection_string_is_never_in_messages_or_logs(pg_cluster, workspace, caplog,
                                                           monkeypatch):
    password = "pw-" + uuid.uuid4().hex
    url = f"postgresql://{APP_ROLE}:{password}@127.0.0.1:{pg_cluster.port}/handoff"
    monkeypatch.setenv("HANDOFF_STORE", url)
    monkeypatch.setenv("HANDOFF_PROJECT", "secret-test")
    monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "2")
    caplog.set_level(logging.DEBUG)
    svc = HandoffService(workspace)
    assert password not in repr(svc.store) and password not in svc.store.describe()
    err = refused(record_contract, svc)  # a wrong password: refused, named without it
    assert err.code == "store_busy"
    assert password not in err.message and password not in orjson.dumps(err.data).decode()
    assert f"127.0.0.1:{pg_cluster.port}/handoff" in err.message
    assert password not in caplog.text


def test_a_store_from_a_clone_sees_evidence_changed_in_its_own_checkout(clones):
    """Evidence is workspace-relative: the other machine checks it against its own files."""
    a, b = clones
    svc_a, svc_b = HandoffService(a), HandoffService(b)
    contract = record_contract(svc_a)
    rev = svc_a.call("handoff.commit", {"scope": SCOPE, "prepared": prepare(svc_a, contract)})
    (b / "client" / "pets_client.py").write_text("changed on the other machine\n")
    view = svc_b.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert view["selected"] == rev["revision"]
    reasons = {u["reason"] for u in view["unreadableEvidence"]}
    assert reasons == {"changed"}
    fine = svc_a.call("handoff.continue", {"scope": SCOPE, "mode": "latest"})
    assert fine["unreadableEvidence"] == []


def test_pg_store_is_what_the_service_holds(pg_store, workspace):
    store = HandoffService(workspace, ServiceConfig()).store
    assert isinstance(store, PgStore) and store.backend == "postgresql"
    with store.transaction() as tx:
        lc.append_source(tx, SCOPE, "task_outcome", {"status": "partial", "summary": "s",
                                                     "checks": []})
    assert store.snapshot().latest_source(SCOPE, "task_outcome")["payload"]["summary"] == "s"


def test_the_state_key_follows_another_machines_commits_by_notification(clones):
    a, b = clones
    watcher, writer = HandoffService(a).store, HandoffService(b).store
    first = watcher.state_key()  # starts listening
    deadline = time.monotonic() + 30
    while not watcher._listening and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watcher._listening
    record_contract(HandoffService(b))
    while watcher.notifications == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watcher.notifications == 1
    assert watcher.state_key() == writer.checked_state_key() != first


def test_a_bad_store_setting_is_refused_on_use_and_never_falls_back(workspace, monkeypatch):
    monkeypatch.setenv("HANDOFF_STORE", "mysql://somewhere/db")
    svc = HandoffService(workspace)  # the service starts; its commands are refused
    err = refused(record_contract, svc)
    assert err.code == "invalid_params" and "postgresql://" in err.message
    assert svc.store.state_key() is None
    assert not (workspace / ".handoff" / "state.json").exists()  # no silent local store
    monkeypatch.setenv("HANDOFF_STORE", "postgresql://nowhere.invalid/db")
    monkeypatch.setenv("HANDOFF_PROJECT", "spaces are not allowed")
    err = refused(record_contract, HandoffService(workspace))
    assert err.code == "invalid_params" and "project id" in err.message


def test_the_application_role_cannot_migrate_and_is_told_who_can(pg_cluster, workspace,
                                                                monkeypatch):
    name = f"empty_{uuid.uuid4().hex[:8]}"
    with pg_cluster.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = pg_cluster.app_url.rsplit("/", 1)[0] + f"/{name}"
    monkeypatch.setenv("HANDOFF_STORE", url)
    monkeypatch.setenv("HANDOFF_PROJECT", "p")
    err = refused(record_contract, HandoffService(workspace))
    assert err.code == "store_busy" and err.data["reason"] == "privilege"
    assert "handoff store migrate" in err.message


def test_the_store_and_project_settings_are_parsed_and_bad_ones_cost_a_warning():
    from lsp_server.settings import parse_settings

    good, problems = parse_settings(
        {"handoff": {"store": "postgresql://app@db/handoff", "project": "example.com/t/r"}}
    )
    assert problems == []
    config = good.service_config()
    assert config.store == "postgresql://app@db/handoff" and config.project == "example.com/t/r"
    bad, problems = parse_settings(
        {"handoff": {"store": "mysql://root:hunter2@db/x", "project": "two words"}}
    )
    assert bad.store is None and bad.project is None and len(problems) == 2
    assert not any("hunter2" in p for p in problems)  # the value is never echoed


def test_the_owner_on_an_empty_database_migrates_it_on_first_use(pg_cluster, workspace,
                                                                 monkeypatch):
    name = f"auto_{uuid.uuid4().hex[:8]}"
    with pg_cluster.connect() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = pg_cluster.url("postgres", db=name)
    monkeypatch.setenv("HANDOFF_STORE", url)
    monkeypatch.setenv("HANDOFF_PROJECT", "p")
    svc = HandoffService(workspace)
    assert record_contract(svc).startswith("source/")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM handoff_schema").fetchone()[0] == SCHEMA_VERSION
