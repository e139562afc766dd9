"""The commit path without repeated work (issue 22, round six).

A transaction reuses the parse of the live file and journal this process last read or
wrote, only when their bytes are the same, and never changes that parse. A change of
records and counters is one fsync'd journal line, not a rewrite of the live file; the
journal is folded into the live file when it is full, when the tail is due to be
sealed, or when the change is one a line does not carry; a torn last line (a writer
killed mid-append) is not part of the state and is cut by the next append; a damaged
line followed by whole ones is refused, and nothing is written."""

from __future__ import annotations

import os

import orjson
import pytest

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import StateStore
from lsp_server.store.embedded import store as store_module
from lsp_server.store.embedded.appending import journal_line
from lsp_server.store.embedded.layout import JOURNAL_FILE, SCHEMA_VERSION
from lsp_server.store.embedded.segments import build_index
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from ..helpers import SCOPE, fold_journal, live_state, record_contract, refused


def outcome(svc: HandoffService, summary: str) -> str:
    out = svc.call("handoff.recordOutcome", {"scope": SCOPE, "status": "partial", "summary": summary})
    return out["source"]


def summaries(state: dict) -> list[str]:
    return [rec["payload"].get("summary") for rec in state["sources"].values() if rec["kind"] == "task_outcome"]


def files(workspace):
    folder = workspace / ".handoff"
    journal = folder / JOURNAL_FILE
    return (folder / "state.json").read_bytes(), journal.read_bytes() if journal.exists() else b""


def test_a_transaction_reuses_the_parse_of_the_live_file_it_wrote_and_leaves_it_unchanged(
    workspace, monkeypatch
):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "first")
    before = svc.store.snapshot().live
    frozen = orjson.dumps(before)
    checks = []
    real = StateStore._shape_problem
    monkeypatch.setattr(StateStore, "_shape_problem", lambda self, data: checks.append(1) or real(self, data))
    outcome(svc, "second")
    assert checks == []  # the bytes were the ones this process wrote: not parsed again
    assert orjson.dumps(before) == frozen  # the older snapshot did not change
    after = svc.store.snapshot().live
    assert after is not before and summaries(after) == ["first", "second"]
    assert live_state(workspace) == after  # what a fresh process reads


def test_a_live_file_rewritten_with_the_same_size_and_mtime_is_parsed_again_by_a_transaction(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "aaaa")
    fold_journal(workspace)
    svc.store.snapshot()  # this process has read the folded file
    path = workspace / ".handoff" / "state.json"
    st = os.stat(path)
    raw = path.read_bytes()
    edited = raw.replace(b'"summary":"aaaa"', b'"summary":"bbbb"')
    assert edited != raw and len(edited) == len(raw)
    with open(path, "r+b") as fh:  # the same inode, size and mtime: only the bytes differ
        fh.write(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    outcome(svc, "cccc")
    assert summaries(live_state(workspace)) == ["bbbb", "cccc"]


def test_a_commit_appends_to_the_journal_and_leaves_the_live_file_as_it_was(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "one")
    state, journal = files(workspace)
    outcome(svc, "two")
    state_after, journal_after = files(workspace)
    assert state_after == state  # not rewritten
    assert journal_after.startswith(journal) and journal_after.count(b"\n") == journal.count(b"\n") + 1
    # A fresh process reads the live file with its journal applied.
    fresh = HandoffService(workspace, ServiceConfig())
    assert summaries(fresh.store.snapshot().live) == ["one", "two"]
    assert orjson.loads(state)["_meta"]["1"]["schema"] == SCHEMA_VERSION


def test_a_full_journal_is_folded_into_the_live_file_and_emptied(workspace, monkeypatch):
    monkeypatch.setenv("HANDOFF_JOURNAL_BYTES", "1500")
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    rewrites, sizes = 0, []
    state, _ = files(workspace)
    for n in range(12):
        outcome(svc, f"round {n}")
        now, journal = files(workspace)
        rewrites += now != state
        state = now
        sizes.append(len(journal))
        assert len(journal) <= 1500
    assert rewrites >= 2 and 0 in sizes  # folded (and emptied) more than once
    assert summaries(live_state(workspace)) == [f"round {n}" for n in range(12)]


def test_a_change_to_the_manifest_or_store_id_writes_the_live_file_whole(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = 2048  # a few records and the tail is sealed
    record_contract(svc)
    seen_journal_ids = set()
    for n in range(12):
        outcome(svc, f"round {n} " + "x" * 200)
        state = orjson.loads((workspace / ".handoff/state.json").read_bytes())
        seen_journal_ids.add(state["_meta"]["1"]["journal"])
    state = live_state(workspace)
    assert state["_meta"]["1"]["segments"]  # sealed: the manifest changed
    assert len(seen_journal_ids) >= 2  # each whole write names a new journal
    assert summaries(svc.store.read()) == [f"round {n} " + "x" * 200 for n in range(12)]


def floor_looks(monkeypatch) -> list[int]:
    """Count the transactions that look for the highest sequence number in the log."""
    from lsp_server.store.embedded import transaction

    calls: list[int] = []
    real = transaction.seq_floor

    def counted(store, live):
        calls.append(1)
        return real(store, live)

    monkeypatch.setattr(transaction, "seq_floor", counted)
    return calls


def seqs_of(state: dict) -> list[int]:
    return [rec["seq"] for table in ("sources", "revisions", "generations") for rec in state[table].values()]


def test_another_writers_journal_lines_keep_the_counter_checked_without_a_scan(workspace, monkeypatch):
    first = HandoffService(workspace, ServiceConfig())
    other = HandoffService(workspace, ServiceConfig())
    record_contract(first)
    looks = floor_looks(monkeypatch)
    outcome(other, "other's first")  # a state this process did not write: looked for once
    assert len(looks) == 1
    for n in range(3):
        outcome(first, f"first {n}")  # journal lines of another writer...
        outcome(other, f"other {n}")  # ...checked line by line, not by a scan
    assert len(looks) == 1  # ``first`` wrote the state it started from: no look at all
    state = live_state(workspace)
    assert len(set(seqs_of(state))) == len(seqs_of(state)) and state["_meta"]["1"]["nextSeq"] > max(seqs_of(state))


@pytest.mark.parametrize("line", ["rewound", "above"])
def test_a_journal_line_that_leaves_the_counter_below_the_log_makes_the_next_transaction_look(
    workspace, monkeypatch, line
):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "checked")
    folder = workspace / ".handoff"
    live = orjson.loads((folder / "state.json").read_bytes())
    journal_id = live["_meta"]["1"]["journal"]
    state = svc.store.read()
    counter = state["_meta"]["1"]["nextSeq"]
    rec = {**next(iter(state["sources"].values())), "id": "by hand", "seq": counter + 5}
    change = (
        {"ops": [], "meta": {"nextSeq": 1}}
        if line == "rewound"
        else {"ops": [["sources", "990", rec]], "meta": {"nextSeq": counter}}
    )
    with open(folder / JOURNAL_FILE, "ab") as fh:  # a whole line no handoff writer wrote
        fh.write(journal_line(journal_id, change))
    looks = floor_looks(monkeypatch)
    outcome(svc, "after")
    assert len(looks) == 1
    state = live_state(workspace)
    seqs = seqs_of(state)
    assert len(set(seqs)) == len(seqs) and state["_meta"]["1"]["nextSeq"] > max(seqs)


def test_journal_lines_of_an_earlier_live_file_are_not_applied(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "kept")
    folder = workspace / ".handoff"
    stale = journal_line("000000000000", {"ops": [["sources", "99", {"id": "x"}]], "meta": {"nextSeq": 1}})
    with open(folder / JOURNAL_FILE, "ab") as fh:
        fh.write(stale)
    state = HandoffService(workspace, ServiceConfig()).store.snapshot().live
    assert "99" not in state["sources"] and state["_meta"]["1"]["nextSeq"] > 2
    assert summaries(state) == ["kept"]


@pytest.mark.parametrize("cut", [1, 17, -1], ids=["one-byte", "mid-line", "no-newline"])
def test_a_torn_last_journal_line_is_not_state_and_the_next_append_cuts_it(workspace, cut):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "whole")
    path = workspace / ".handoff" / JOURNAL_FILE
    whole = path.read_bytes()
    outcome(svc, "torn")
    line = path.read_bytes()[len(whole) :]
    path.write_bytes(whole + line[: cut if cut > 0 else len(line) + cut])  # a killed append
    fresh = HandoffService(workspace, ServiceConfig())
    assert summaries(fresh.store.snapshot().live) == ["whole"]
    outcome(fresh, "after")
    assert summaries(live_state(workspace)) == ["whole", "after"]
    assert path.read_bytes().startswith(whole) and path.read_bytes().count(b"\n") == whole.count(b"\n") + 1


def test_a_damaged_journal_line_followed_by_whole_ones_is_refused_and_nothing_is_written(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    for n in range(3):
        outcome(svc, f"round {n}")
    folder = workspace / ".handoff"
    path = folder / JOURNAL_FILE
    raw = path.read_bytes()
    at = raw.index(b"round 1")
    path.write_bytes(raw[:at] + b"R" + raw[at + 1 :])  # same size, one byte changed
    before = files(workspace)
    fresh = HandoffService(workspace, ServiceConfig())
    err = refused(outcome, fresh, "after")
    assert err.code == "store_corrupt" and err.data["reason"] == "journal_damaged"
    assert "line 2" in err.message and str(path) in err.message
    assert files(workspace) == before
    with pytest.raises(HandoffError):
        fresh.store.snapshot()


def test_a_schema_2_store_is_read_as_is_and_its_first_write_names_a_journal(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    outcome(svc, "before")
    fold_journal(workspace)
    path = workspace / ".handoff" / "state.json"
    state = orjson.loads(path.read_bytes())
    state["_meta"]["1"]["schema"] = 2
    del state["_meta"]["1"]["journal"]
    del state["_meta"]["1"]["manifest"]
    state["_meta"]["1"]["segments"] = []  # schema 2 lists its segments inline
    path.write_bytes(orjson.dumps(state))
    (workspace / ".handoff" / JOURNAL_FILE).unlink()
    fresh = HandoffService(workspace, ServiceConfig())
    assert summaries(fresh.store.snapshot().live) == ["before"]
    assert path.read_bytes() == orjson.dumps(state)  # a read changes nothing
    outcome(fresh, "after")
    written = orjson.loads(path.read_bytes())["_meta"]["1"]
    assert written["schema"] == SCHEMA_VERSION and isinstance(written["journal"], str)
    assert summaries(live_state(workspace)) == ["before", "after"]


def test_a_reader_without_the_lock_reads_again_when_the_journal_was_folded_meanwhile(
    workspace, monkeypatch
):
    """A writer may fold the journal into a new live file between a reader's two reads:
    the reader would pair the old live file with a journal whose lines name the new one,
    and lose the old journal's records. It reads again instead."""
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    for n in range(3):
        outcome(svc, f"round {n}")
    reader = StateStore(workspace / ".handoff")
    real = StateStore._read_journal
    folded = []

    def fold_first(self):
        if not folded:
            folded.append(1)
            svc.store.fold_journal()
            outcome(svc, "round 3")
        return real(self)

    monkeypatch.setattr(StateStore, "_read_journal", fold_first)
    state = reader.snapshot().live
    assert folded and summaries(state) == [f"round {n}" for n in range(4)]


def test_the_store_key_changes_with_every_journal_append(workspace):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    keys = set()
    for n in range(4):
        outcome(svc, f"round {n}")
        keys.add(svc.store.state_key())
    assert len(keys) == 4


def test_a_journal_that_is_a_symlink_is_refused(workspace, tmp_path):
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    path = workspace / ".handoff" / JOURNAL_FILE
    outside = tmp_path / "elsewhere.journal"
    outside.write_bytes(b"")
    path.unlink(missing_ok=True)
    path.symlink_to(outside)
    err = refused(outcome, HandoffService(workspace, ServiceConfig()), "x")
    assert err.code == "store_corrupt" and err.data["reason"] == "symlink"
    assert outside.read_bytes() == b""


def test_journal_bytes_zero_writes_the_live_file_whole_every_time(workspace, monkeypatch):
    monkeypatch.setenv("HANDOFF_JOURNAL_BYTES", "0")
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    for n in range(3):
        outcome(svc, f"round {n}")
    assert not (workspace / ".handoff" / JOURNAL_FILE).exists()
    assert summaries(orjson.loads((workspace / ".handoff/state.json").read_bytes())) == [
        f"round {n}" for n in range(3)
    ]


def test_the_live_tails_index_extended_write_by_write_equals_one_built_from_scratch(workspace, monkeypatch):
    extended = []
    real = store_module.extend_index
    monkeypatch.setattr(store_module, "extend_index", lambda *a: extended.append(1) or real(*a))
    svc = HandoffService(workspace, ServiceConfig())
    svc.store.seal_bytes = 6000  # seals on the way: the tail starts over
    contract = record_contract(svc)
    for n in range(14):
        outcome(svc, f"round {n}")
        record_contract(svc, "other-scope")
        draft = {
            "objective": "o",
            "state": {"text": f"state {n}", "citations": [{"kind": "source", "ref": contract}]},
            "disposition": "continuable",
            "nextActions": [{"text": "go on", "citations": [{"kind": "source", "ref": contract}]}],
        }
        prepared = svc.call("handoff.prepare", {"scope": SCOPE, "draft": draft})["prepared"]
        svc.call("handoff.commit", {"scope": SCOPE, "prepared": prepared})
        live = svc.store.snapshot().live
        kept = svc.store.snapshot()._tail_index()
        tables = {"sources": live["sources"], "revisions": live["revisions"]}
        assert kept == build_index(tables)
    assert svc.store.snapshot().live["_meta"]["1"]["segments"]  # it did seal
    assert len(extended) > 20  # most indexes were extended, not built again


def test_a_reader_that_misses_a_new_stores_first_write_reads_it_instead_of_calling_it_lost(
    workspace, monkeypatch
):
    """The first write puts the live file, then the marker, in place: a reader that
    found no live file and then the marker (the write landed in between) reads again."""
    svc = HandoffService(workspace, ServiceConfig())
    record_contract(svc)
    real = store_module.read_regular
    missed = []

    def before_the_first_write(path):
        if path == svc.store.path and not missed:
            missed.append(1)
            raise FileNotFoundError(path)
        return real(path)

    monkeypatch.setattr(store_module, "read_regular", before_the_first_write)
    state = StateStore(workspace / ".handoff").snapshot().live
    assert missed and len(state["sources"]) == 1


def test_a_live_table_insert_copies_the_table_and_keeps_tinydbs_ids():
    from tinydb.table import Document

    from lsp_server.store.embedded.live import LiveTable, SnapshotStorage, TinyDB

    parsed = {"_meta": {"1": {"idFloor": {"sources": 7}}}, "sources": {"2": {"id": "a"}, "5": {"id": "b"}}}
    table_before = parsed["sources"]
    db = TinyDB(dict(parsed), storage=SnapshotStorage)
    db.table_class = LiveTable
    sources = db.table("sources", cache_size=0)
    assert sources.insert({"id": "c"}) == 8  # above the sealed floor and the live ids
    assert sources.insert({"id": "d"}) == 9
    assert parsed["sources"] is table_before and list(table_before) == ["2", "5"]  # unchanged
    assert list(db.storage.data["sources"]) == ["2", "5", "8", "9"]
    assert db.storage.dirty
    assert sources.insert(Document({"id": "e"}, doc_id=20)) == 20  # TinyDB's own path
    with pytest.raises(ValueError):
        sources.insert(Document({"id": "f"}, doc_id=20))
    assert [d["id"] for d in sources.all()] == ["a", "b", "c", "d", "e"]


def test_another_writers_journal_lines_leave_the_parse_a_transaction_started_from_unchanged(workspace):
    """Tables a transaction leaves alone are shared with the parse it copied: the lines
    of another writer are applied to copies of the tables they change."""
    first = HandoffService(workspace, ServiceConfig())
    other = HandoffService(workspace, ServiceConfig())
    record_contract(first)
    outcome(first, "first's")
    before = first.store.snapshot().live
    frozen = orjson.dumps(before)
    outcome(other, "other's")  # a journal line ``first`` has not read
    outcome(first, "first's again")  # applies it, then appends its own
    assert orjson.dumps(before) == frozen
    after = first.store.snapshot().live
    assert summaries(after) == ["first's", "other's", "first's again"]
    assert live_state(workspace) == after


def test_document_ids_stay_distinct_and_rising_when_writers_take_turns(workspace):
    """The top id a transaction knows from the table it copied (``live._TOPS``) is the
    one a scan of the table finds, whoever wrote last."""
    first = HandoffService(workspace, ServiceConfig())
    other = HandoffService(workspace, ServiceConfig())
    record_contract(first)
    for n in range(4):
        outcome(first, f"first {n}")
        outcome(first, f"first {n} again")
        outcome(other, f"other {n}")
    ids = [int(k) for k in live_state(workspace)["sources"]]
    assert ids == sorted(set(ids))
    assert summaries(live_state(workspace))[-3:] == ["first 3", "first 3 again", "other 3"]
