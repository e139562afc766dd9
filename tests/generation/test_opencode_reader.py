"""opencode sessions: database rows (1.2 and later) and JSON storage files (before).

The database's tables and columns are those the real opencode 1.18.33 created in an
empty data folder (``opencode session list``); the rows are written here. The JSON
storage form is tested from its documented layout only (no older binary was run).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lsp_server.generation.discovery import list_sessions
from lsp_server.generation.readers import read_session, sniff_format
from lsp_server.model.errors import HandoffError

SESSION_COLUMNS = (
    "id, project_id, workspace_id, parent_id, slug, directory, path, title, version, "
    "share_url, summary_additions, summary_deletions, summary_files, summary_diffs, "
    "metadata, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, "
    "tokens_cache_write, revert, permission, agent, model, time_created, time_updated, "
    "time_compacting, time_archived"
)

USER = {"id": "msg_01", "role": "user", "time": {"created": 1000}}
ASSISTANT = {
    "id": "msg_02",
    "role": "assistant",
    "parentID": "msg_01",
    "modelID": "stub-model",
    "finish": "tool-calls",
    "time": {"created": 2000},
}
PARTS = {
    "msg_01": [{"id": "prt_01", "type": "text", "text": "fix the failing test"}],
    "msg_02": [
        {"id": "prt_02", "type": "step-start"},
        {"id": "prt_03", "type": "text", "text": "running it"},
        {
            "id": "prt_04",
            "type": "tool",
            "tool": "bash",
            "callID": "call_1",
            "state": {
                "status": "completed",
                "input": {"command": "pytest -q"},
                "output": "1 failed",
                "metadata": {"exit": 1},
            },
        },
        {"id": "prt_05", "type": "hologram"},
    ],
}


def _db(folder: Path, cwd: str, junk: bool = False) -> Path:
    db = folder / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE session ({SESSION_COLUMNS})")
    con.execute("CREATE TABLE message (id, session_id, time_created, time_updated, data)")
    con.execute("CREATE TABLE part (id, message_id, session_id, time_created, time_updated, data)")
    con.execute(
        "INSERT INTO session (id, project_id, parent_id, directory, title, version,"
        " time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ("ses_a", "proj", None, cwd, "Fix the test", "1.18.33", 1000, 3000),
    )
    for msg in (USER, ASSISTANT):
        con.execute(
            "INSERT INTO message VALUES (?, 'ses_a', ?, ?, ?)",
            (msg["id"], msg["time"]["created"], 0, json.dumps(msg)),
        )
        for part in PARTS[msg["id"]]:
            con.execute(
                "INSERT INTO part VALUES (?, ?, 'ses_a', 0, 0, ?)",
                (part["id"], msg["id"], json.dumps(part)),
            )
    if junk:
        con.execute("INSERT INTO part VALUES ('prt_99', 'msg_02', 'ses_a', 0, 0, '{not json')")
    con.commit()
    con.close()
    return db


def _check(t) -> None:
    assert t.format == "opencode" and t.id == "ses_a"
    assert t.title == "Fix the test" and t.model == "stub-model"
    assert [m.role for m in t.history] == ["user", "assistant", "tool"]
    assert t.history[0].text == "fix the failing test"
    assert t.history[1].tool_calls[0].name == "bash"
    assert t.history[2].exit_code == 1 and t.history[2].is_error
    assert t.history[2].command == "pytest -q" and t.history[2].text == "1 failed"
    assert t.message_count == 3
    assert t.stats.unknown_entries == 1  # the part type no opencode writes


def test_a_database_row_is_a_session_read_read_only(tmp_path: Path) -> None:
    db = _db(tmp_path, "/ws", junk=True)
    path = Path(f"{db}#ses_a")
    assert sniff_format(path) == "opencode"
    t = read_session(path)
    _check(t)
    assert t.cwd == "/ws" and t.started_at == "1970-01-01T00:00:01Z"
    assert t.stats.junk_lines == 1


def test_a_missing_row_is_a_clear_error(tmp_path: Path) -> None:
    db = _db(tmp_path, "/ws")
    with pytest.raises(HandoffError) as err:
        read_session(Path(f"{db}#ses_nope"))
    assert err.value.code == "session_not_found" and "ses_nope" in str(err.value)


def test_a_json_storage_session_is_its_info_file(tmp_path: Path) -> None:
    """Documented layout of opencode before 1.2 (not run: no older binary here)."""
    storage = tmp_path / "opencode" / "storage"
    info = storage / "session" / "proj" / "ses_a.json"
    info.parent.mkdir(parents=True)
    info.write_text(
        json.dumps(
            {
                "id": "ses_a",
                "projectID": "proj",
                "directory": "/ws",
                "title": "Fix the test",
                "parentID": "ses_root",
                "version": "1.1.0",
                "time": {"created": 1000, "updated": 3000},
            },
            indent=2,
        )
    )
    for msg in (USER, ASSISTANT):
        mfile = storage / "message" / "ses_a" / f"{msg['id']}.json"
        mfile.parent.mkdir(parents=True, exist_ok=True)
        mfile.write_text(json.dumps({**msg, "sessionID": "ses_a"}, indent=2))
        for part in PARTS[msg["id"]]:
            pfile = storage / "part" / msg["id"] / f"{part['id']}.json"
            pfile.parent.mkdir(parents=True, exist_ok=True)
            pfile.write_text(json.dumps(part))
    (storage / "part" / "msg_02" / "prt_98.json").write_text('{"type": "te')  # truncated
    assert sniff_format(info) == "opencode"
    t = read_session(info)
    _check(t)
    assert t.subagent_of == "ses_root" and t.parent_session is None
    assert t.stats.junk_lines == 1


def test_jsonl_files_are_not_taken_for_opencode(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text('{"type": "session", "id": "x", "cwd": "/ws"}\n')
    assert sniff_format(f) == "pi"


def test_discovery_finds_the_workspace_s_rows_under_xdg_data_home(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _db(tmp_path / "data", str(ws))
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    found = [s for s in list_sessions(ws, env) if s["agent"] == "opencode"]
    assert [(s["id"], s["format"]) for s in found] == [("ses_a", "opencode")]
    assert found[0]["path"].endswith("opencode.db#ses_a")
    assert list_sessions(tmp_path / "elsewhere", env) == []


REAL = Path(__file__).parents[1] / "fixtures" / "sessions" / "opencode" / "opencode.db"


def test_the_real_opencode_1_18_33_database_is_read_and_found(tmp_path: Path) -> None:
    """A database the real opencode 1.18.33 wrote (``opencode run`` against the local
    OpenAI-compatible stub of ``wire.py``, workspace ``/tmp/oc/ws``)."""
    data = tmp_path / "data" / "opencode"
    data.mkdir(parents=True)
    db = data / "opencode.db"
    db.write_bytes(REAL.read_bytes())
    session = "ses_db93967a9ffeQqp3zjDnIOf37a"
    t = read_session(Path(f"{db}#{session}"))
    assert (t.id, t.cwd, t.model, t.title) == (session, "/tmp/oc/ws", "stub-model", "All done.")
    assert [(m.role, m.text) for m in t.history] == [
        ("user", '"Fix the failing test in a.txt"'),
        ("assistant", "All done."),
    ]
    assert t.stats.junk_lines == 0 and t.stats.unknown_entries == 0
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    # The recorded cwd is /tmp/oc/ws: a workspace there lists it, any other does not.
    assert list_sessions(tmp_path, env) == []


def test_the_real_opencode_1_1_65_json_storage_is_read_and_found(tmp_path: Path) -> None:
    """The form before 1.2, as the real opencode 1.1.65 wrote it (``opencode run``
    against the local stub of ``wire.py`` doing scripted work: read, a failing check, an
    edit, the check passing; workspace ``/tmp/oc11/run/ws``): found under
    ``XDG_DATA_HOME`` by its info file and read whole."""
    import json
    import shutil

    storage = tmp_path / "data" / "opencode" / "storage"
    shutil.copytree(REAL.parent / "storage-1.1.65", storage)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (info,) = (storage / "session" / "global").glob("ses_*.json")
    moved = json.loads(info.read_text())
    assert moved["directory"] == "/tmp/oc11/run/ws"
    moved["directory"] = str(workspace)  # the session moves to this test's workspace
    info.write_text(json.dumps(moved))
    env = {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    (found,) = list_sessions(workspace, env)
    assert (found["agent"], found["path"]) == ("opencode", str(info))
    t = read_session(info)
    assert t.format == "opencode" and t.cwd == str(workspace) and t.model == "stub-model"
    assert t.stats.junk_lines == 0 and t.stats.unknown_entries == 0
    assert t.history[0].text.strip() == '"Fix add in calc.py and check it"'
    tools = [(m.tool_name, m.exit_code, m.is_error) for m in t.history if m.role == "tool"]
    assert tools == [
        ("read", None, False),
        ("bash", 3, True),
        ("edit", None, False),
        ("bash", 0, False),
    ]
    assert t.written_paths == ["/tmp/oc11/run/ws/calc.py"]
    assert t.history[-1].text == "Fixed add in calc.py; the check passes now."
