"""The Neovim plugin in a real headless Neovim, attached to the real server: the OpenAPI
walkthrough through :Handoff subcommands, the refused acknowledgement of latest,
:Handoff cancel of a slow generation, drafts, completion and :checkhealth; messages that
stay, focus that stays, refused extra words, previews that re-check and
<CR> that opens; drafts and receipts across a restart; no state outside a workspace
without asking; a fast :checkhealth; server log levels in lsp.log."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from lsp_server.model.errors import HandoffError
from lsp_server.store.embedded import StateStore
from lsp_server.surfaces.service import HandoffService, ServiceConfig

from .conftest import ERROR, INFO, WARN

REVISION = re.compile(r"^handoff/[0-9a-z]+@1$")


def refusal_of_latest_ack(tmp_path: Path) -> str:
    """The message the service itself gives for acknowledging 'latest'."""
    svc = HandoffService(tmp_path / "probe", ServiceConfig())
    (tmp_path / "probe").mkdir(exist_ok=True)
    with pytest.raises(HandoffError) as info:
        svc.call("handoff.acknowledge", {"mode": "latest", "status": "accepted", "checks": {}})
    assert info.value.code == "exact_target_required"
    return info.value.message


def test_openapi_walkthrough_through_handoff_subcommands(run_nvim, workspace, tmp_path):
    (workspace / ".handoff").mkdir()  # a root marker: vim.lsp.enable attaches on :edit
    run = run_nvim("walkthrough", workspace)
    r = run.results
    assert run.unanswered == 0

    # vim.lsp.enable attached the client to the edited file; the contract was prompted.
    assert r["attached"] == 1
    assert r["contract"]["ok"] and r["contract"]["result"]["source"].startswith("source/")
    assert run.prompts[:4] == [
        "Objective: ",
        "In scope (separate items with ;): ",
        "Out of scope (optional, ; separated): ",
        "Acceptance criteria (separate with ;): ",
    ]
    assert r["work"]["ok"], r["work"]

    # Hand off current work: prepared (not committed) in a markdown scratch split.
    assert r["current"]["ok"], r["current"]
    assert "(prepared, not committed)" in r["preview_prepared"]
    assert "complete the OpenAPI client update" in r["preview_prepared"]
    assert "run contract tests" in r["preview_prepared"]
    assert r["preview_options"] == {
        "filetype": "markdown",
        "buftype": "nofile",
        "modifiable": False,
        "windows": 1,
        "current_is_preview": False,
    }
    assert r["continue_prepared"]["result"]["trust"] == "untrusted_history"
    assert r["continue_empty"]["result"]["found"] is False
    assert "latest is empty" in r["preview_empty"]

    # Commit, then the idempotent retry.
    revision = r["commit"]["result"]["revision"]
    assert REVISION.match(revision) and r["commit"]["result"]["idempotent"] is False
    assert r["commit_again"]["result"] | {"idempotent": False} == r["commit"]["result"]
    assert r["commit_again"]["result"]["idempotent"] is True

    # Continue from latest selects the revision; the preview shows it as untrusted.
    assert r["continue_latest"]["result"]["selected"] == revision
    assert f"# Continue (latest) → {revision}" in r["preview_latest"]
    assert "Untrusted history" in r["preview_latest"]

    # Acknowledging latest is refused by the server with its own message, shown at ERROR.
    expected = refusal_of_latest_ack(tmp_path)
    ack_latest = r["ack_latest"]
    assert not ack_latest["ok"]
    assert ack_latest["code"] == "exact_target_required"
    assert ack_latest["message"] == expected
    assert [n["level"] for n in r["ack_latest_notes"]] == [ERROR]
    assert expected in run.whole(r["ack_latest_notes"][0]["msg"])

    # The exact acknowledgement went through the prompts (mode, revision, status, checks).
    ack = r["ack"]["result"]
    assert (ack["status"], ack["target"]) == ("accepted", revision)
    assert run.prompts[4:] == [
        "Acknowledge from",
        "Revision",
        "Acknowledgement",
        "Is the cited evidence available (files and Sources read)?",
        "Does the live workspace match the handoff?",
        "Can you do the next actions (tools, access)?",
        "Has the user authorised you to continue?",
    ]

    # The continuity preview, refreshed by handoff/didChange after the outcome.
    before = r["preview_continuity_before"]
    assert before.startswith("# Work continuity: default")
    assert "| Transfer | accepted |" in before and "| Outcome | none |" in before
    after = r["preview_continuity_after"]
    assert "| Transfer | accepted |" in after and "| Outcome | covered |" in after
    assert "Task Outcome succeeded: contract tests pass against the regenerated client" in after
    assert revision in r["preview_history"] and "covered" in r["preview_history"]
    # :Handoff report source shows the record the handoff cites, rendered for a terminal.
    record = r["preview_source"]
    assert r["report_source"]["ok"] and record.startswith(f"# Source {r['contract']['result']['source']}\n")
    assert "| Kind | Work Contract |" in record and "&amp;" not in record and "file://" not in record
    assert "Work Contract: complete the OpenAPI client update" in record
    # The preview shows record text as written: no HTML entities, no backslash escapes.
    assert "ran make test && tail -n 5 log 2>&1 <ok>" in r["preview_terminal"]
    assert "&amp;" not in r["preview_terminal"] and "&gt;" not in r["preview_terminal"]
    assert r["preview_closed"] is True

    # Completion: subcommands, the committed revision, statuses, report kinds.
    assert {"generate", "contract", "work", "current", "commit", "continue", "ack"} <= set(
        r["complete_subcommands"]
    )
    assert {"outcome", "report", "cancel", "sessions", "prepare"} <= set(r["complete_subcommands"])
    assert r["complete_revisions"] == [revision]
    assert r["complete_ack_status"] == ["accepted", "needs_clarification", "declined"]
    assert r["complete_report"] == ["continuity"]

    # Progress of the reports came through LspProgress / vim.lsp.status(), on the
    # plugin's own work-done tokens (the server makes none for reports).
    begins = [p for p in run.progress if p["kind"] == "begin"]
    assert begins and all(p["cancellable"] for p in begins)
    assert any(p["status"] for p in begins)
    assert all(str(p["token"]).startswith("handoff.nvim/") for p in begins), begins

    # No error besides the refused acknowledgement, no warning (the empty settings went
    # out as an object); the state is real on disk.
    assert run.notes_at(ERROR) == [r["ack_latest_notes"][0]["msg"]]
    assert run.notes_at(WARN) == []
    assert "LSP[handoff]" not in run.messages, run.messages
    data = HandoffService(workspace).call("handoff.report", {"kind": "continuity"})["data"]
    assert (data["transfer"], data["outcome"], data["head"]) == ("accepted", "covered", revision)
    assert data["totalEvents"] == 7  # the last work state, recorded for the preview check


def write_pi_session(path: Path, cwd: Path) -> Path:
    """A small pi session (v3): header and two messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {
            "type": "session",
            "version": 3,
            "id": str(uuid.uuid4()),
            "timestamp": "2026-01-05T10:00:00.000Z",
            "cwd": str(cwd),
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-01-05T10:00:01.000Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Regenerate the pets client from openapi.yaml"}
                ],
                "timestamp": 1767607201000,
            },
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-01-05T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "I regenerated client/pets_client.py."}],
                "timestamp": 1767607202000,
            },
        },
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def marked_processes(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_handoff_cancel_stops_a_slow_generation(run_nvim, workspace, tmp_path):
    marker = f"handoff-slow-{uuid.uuid4().hex}"
    sessions = tmp_path / "sessions"
    session = write_pi_session(sessions / "slow.jsonl", workspace)
    settings = {
        "generation": {
            "provider": "command",
            "command": {
                "argv": [
                    sys.executable,
                    "-c",
                    f"import time,sys; sys.stdin.read(); time.sleep(60)  # {marker}",
                ]
            },
        }
    }
    started = time.monotonic()
    run = run_nvim(
        "cancel",
        workspace,
        settings,
        env={"HANDOFF_SESSION": str(session), "HANDOFF_MARKER": marker},
    )
    r = run.results

    # The provider subprocess ran, with cancellable progress, before the cancel.
    assert r["pids_before"], "the generation subprocess never started"
    assert r["busy_before"] is True
    assert any(p["kind"] == "begin" and p["cancellable"] for p in run.progress)
    # Echoed as one line with the cancel hint, every report too (only "begin" says it
    # is cancellable), the title said once.
    echoed = [
        e["text"]
        for e in r["progress_echoed"]
        if e["text"] and not e["text"].startswith("Handoff: starting")
    ]
    assert echoed and all(t.endswith("(:Handoff cancel)") for t in echoed), echoed
    for t in echoed:
        title = t.split(":", 1)[0]
        assert t.count(title) == 1 or title == "handoff", t

    # :Handoff cancel ended the request as cancelled (not failed), quickly.
    done = r.get("done")
    assert done["ok"] is False and done["kind"] == "cancelled", done
    assert done["code"] == "cancelled"
    assert r["elapsed_ms"] < 10_000
    assert r["busy_after"] is False
    assert [m for m in run.notes_at(WARN) if "cancelled" in m]
    assert run.notes_at(ERROR) == []

    # The subprocess is gone; nothing was recorded or written, no draft opened.
    assert r["buffers_after"] == r["buffers_before"]
    assert [p["kind"] for p in run.progress if p["kind"] != "report"] == ["begin", "end"]
    assert r["gone"] is True
    assert marked_processes(marker) == []
    assert sorted(p.name for p in sessions.iterdir()) == ["slow.jsonl"]
    state = StateStore(workspace / ".handoff").read() if (workspace / ".handoff").exists() else {}
    assert not state.get("generations"), state.get("generations")
    assert not state.get("sources"), state.get("sources")
    assert time.monotonic() - started < 60  # the 60 s sleep was not waited for

    # A second cancel finds nothing running.
    assert r["cancel_again"]["ok"] and r["cancel_again"]["result"]["cancelled"] == 0
    assert "No handoff generation is running." in run.notes_at(INFO)


def test_settings_refusals_and_checkhealth(run_nvim, workspace, tmp_path):
    run = run_nvim("misc", workspace, {"scope": "from-settings"}, marker=False)
    r = run.results
    # No .handoff or .git: asked once (the queued subcommands waited for the answer).
    asked = f"No .handoff or .git here: keep handoff state in {workspace.resolve()}/.handoff?"
    assert run.prompts[0] == asked and run.prompts.count(asked) == 1

    # Back to back, in order: the commit found what current prepared.
    assert [(d["subcommand"], d["ok"]) for d in r["back_to_back"]] == [
        ("contract", True),
        ("work", True),
        ("current", True),
        ("commit", True),
    ], r["back_to_back"]
    assert REVISION.match(r["back_to_back"][3]["result"]["revision"])

    # Usage errors name the problem; they reach no server.
    assert r["usage_notes"][0]["level"] == ERROR
    assert 'unknown subcommand "frobnicate"' in run.whole(r["usage_notes"][0]["msg"])
    assert r["usage_notes"][1]["msg"] == "Handoff report: unknown option --bogus."

    # Extra words are refused (before any prompt or request), naming them.
    assert [(d["ok"], d["kind"]) for d in r["extra_words"]] == [(False, "refused")] * 5
    assert [run.whole(n["msg"]) for n in r["extra_notes"]] == [
        'Handoff current: unexpected "|" "Handoff" "commit": current takes no words '
        "(| does not chain :Handoff commands: run each on a line of its own).",
        'Handoff sessions: unexpected "now": sessions takes no words.',
        'Handoff continue: unexpected "please": continue takes one word.',
        'Handoff ack: unexpected "twice": ack takes at most 3 words.',
        f'Handoff report: unexpected "{r["back_to_back"][3]["result"]["revision"]}": '
        "report takes one word.",
    ]
    assert [n["level"] for n in r["extra_notes"]] == [ERROR] * 5
    # `ack` completes the exact targets only (latest is refused by the server).
    assert r["complete_ack_modes"] == ["exact", "prepared"]

    # A dismissed prompt ends quietly: no notification, nothing recorded.
    assert (r["dismissed"]["ok"], r["dismissed"]["kind"]) == (False, "aborted")
    assert r["dismissed_notes"] == []

    # The server's refusal of a bad status, with its message.
    bad = r["bad_outcome"]
    assert (bad["ok"], bad["code"]) == (False, "invalid_status")
    assert "'finished'" in bad["message"]
    assert f"Handoff outcome: {bad['message']}" in [run.whole(n) for n in run.notes_at(ERROR)]

    # The refusal names the setting to set in vim.g.handoff, not the CLI's --model.
    assert (r["no_model"]["ok"], r["no_model"]["code"]) == (False, "invalid_params")
    assert [run.whole(n["msg"]) for n in r["no_model_notes"]] == [
        "Handoff generate: The openai provider needs a model: set "
        "vim.g.handoff.generation.openai.model."
    ]

    # No agent session: the refusal names the workspace and the folders searched.
    assert (r["no_sessions"]["ok"], r["no_sessions"]["kind"]) == (False, "refused")
    [none] = [run.whole(n["msg"]) for n in r["no_sessions_notes"]]
    home = tmp_path / "home"
    assert none == (
        f"Handoff generate: No agent sessions of {workspace.resolve()} in "
        f"{home / 'pi-agent/sessions'}, {home / '.omp/agent/sessions'}, "
        f"{home / 'claude/projects'}, {home / 'codex/sessions'}, {home / 'data/opencode'}, "
        f"{home / '.gemini/tmp'}, {home / '.qwen/projects'} "
        "(a session belongs to the folder it was started in)."
    ).replace(str(home), "~")

    # Started on demand for the current directory (no root marker), with vim.g.handoff.
    assert Path(r["root_dir"]).resolve() == workspace.resolve()
    assert r["preview_first"].startswith("# Work continuity: from-settings")
    assert r["report_second"]["ok"]
    assert r["preview_second"].startswith("# Work continuity: from-vim-g")
    assert r["settings_sent"] == {"scope": "from-vim-g"}

    # The prompted work state went through, in the configured scope.
    assert r["work"]["ok"] and r["work"]["result"]["scope"] == "from-vim-g"
    assert r["work_prompts"] == [
        "Work state: ",
        "Evidence (workspace paths or source/<id>, comma separated): ",
        "Disposition",
        "Next action (empty to finish): ",
        "Evidence for it: ",
        "Next action (empty to finish): ",
    ]
    work = next(
        rec
        for rec in StateStore(workspace / ".handoff").read()["sources"].values()
        if rec["kind"] == "work_state" and rec["scope"] == "from-vim-g"
    )
    assert work["payload"]["disposition"] == "blocked"
    assert [c["path"] for c in work["payload"]["nextActions"][0]["citations"]] == [
        "client/pets_client.py",
        "openapi.yaml",
    ]

    # :Handoff alone: subcommand, then report kind, picked through vim.ui.select.
    assert r["picked"]["subcommand"] == "report" and r["picked"]["ok"]
    assert r["preview_picked"].startswith("# Handoff history: from-vim-g")
    assert run.prompts[-2:] == ["Handoff", "Report"]


    health = r["health"]
    assert "handoff: language server" in health
    assert f"Server binary: {sys.executable}" in health
    assert re.search(r"Server version: handoff-lsp \d+\.\d+", health), health
    assert re.search(r"handoff.ping answered: version \d+\.\d+", health), health
    assert f"Client 1 running for {workspace}" in health
    assert "State folder" in health
    corrupt = r["health_corrupt"]
    assert "ERROR State folder" in corrupt and "moved aside as state.json.corrupt-20261205T120000" in corrupt
    assert "handoff store repair" in corrupt and "OK State folder" not in corrupt
    assert "ERROR" not in health, health


def fake_pi(bin_dir: Path, out: Path) -> Path:
    """A `pi` that records its arguments and exits (no real agent runs)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "pi"
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(out))}\n', encoding="utf-8")
    exe.chmod(0o755)
    return exe


def test_generate_opens_a_draft_that_starts_a_session_prepares_and_commits(
    run_nvim, workspace, tmp_path
):
    pi_dir = tmp_path / "home" / "pi-agent" / "sessions"
    slug = "--" + str(workspace).strip("/").replace("/", "-") + "--"
    session = write_pi_session(pi_dir / slug / "2026-01-05T10-00-00_s.jsonl", workspace)
    pi_out = tmp_path / "fake-pi.out"
    fake_pi(tmp_path / "bin", pi_out)
    run = run_nvim(
        "drafts",
        workspace,
        {"generation": {"provider": "extractive"}},
        env={
            "HANDOFF_SESSION": str(session),
            "HANDOFF_FAKE_PI_OUT": str(pi_out),
            "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        },
    )
    r = run.results
    assert run.unanswered == 0
    edit = "Edited in Neovim before the handoff."

    # The sessions list (preview and completion) holds the session.
    assert str(session) in r["preview_sessions"]
    assert r["complete_sessions"] == [str(session)]

    # Picked through vim.ui.select, focus typed; the draft is a normal markdown buffer.
    assert run.prompts == ["Agent session to hand off", "Focus (optional): "]
    gen = r["generate"]["result"]
    assert gen["provider"] == "extractive"
    assert gen["sourceSession"]["path"] == str(session)
    draft = r["draft"]
    assert draft["text"] + "\n" == gen["document"]  # the file, read into lines
    assert "## Goal" in draft["text"] and "## Next Steps" in draft["text"]
    assert (draft["buftype"], draft["filetype"]) == ("", "markdown")
    # It is the draft file the server saved (named, durable, nothing unsaved).
    assert draft["modifiable"] and not draft["modified"] and not draft["is_preview"]
    assert Path(draft["name"]) == workspace / gen["draftPath"]

    # Generate wrote no agent session (only the start below did); its message says what
    # comes next.
    assert "newSession" not in gen and "started" not in gen
    generated = [n["msg"] for n in r["generate_notes"] if n["level"] == INFO][-1]
    assert generated == "Handoff: draft ready in a split; edit it, then :Handoff start."
    assert r["generate_focus_kept"] is True
    assert "New agent session" not in generated

    # :Handoff start in the draft: its edited text became a new pi session beside the
    # old one, with the lineage of the generation; the command ran in a :terminal split.
    assert r["complete_agents"] == ["pi", "omp", "claude", "codex", "opencode", "gemini", "qwen"]
    start = r["start"]
    assert start["ok"], start
    started = start["result"]
    assert started["agent"] == "pi"
    assert started["lineage"]["generation"] == gen["generation"]
    assert started["lineage"]["handoff"] == {"kind": "document"}
    new = Path(started["newSession"]["path"])
    assert new.parent == session.parent
    assert sorted(p.name for p in session.parent.iterdir()) == sorted([session.name, new.name])
    text = new.read_text(encoding="utf-8")
    assert edit in text
    header = json.loads(text.splitlines()[0])
    assert header["parentSession"] == str(session)
    assert (
        started["command"]
        == f"cd {shlex.quote(str(workspace))} && pi --session {shlex.quote(str(new))}"
    )
    assert r["terminal"] == {
        "buftype": "terminal",
        "windows": 1,
        "draft_still_shown": True,
        "started": started["command"],
    }
    assert r["fake_pi"] == ["--session", str(new)]
    assert r["guard_gone"] is True  # the agent exited: nothing stops :qa any more
    # One short line (no "Press ENTER") with the command, cut in the middle to fit the
    # 80 columns of the headless Neovim.
    [note] = r["start_notes"]
    assert note["level"] == INFO
    assert "\n" not in note["msg"] and len(note["msg"]) <= r["echospace"], note
    assert note["msg"].startswith("Handoff: started pi in a terminal split: pi --sess")
    assert note["msg"].endswith(new.name[-6:])

    # :Handoff start claude with open = "none": nothing opened, the command shown (and
    # put in the configured register); Claude Code reads the saved text.
    claude = r["start_claude"]["result"]
    assert claude["agent"] == "claude" and claude.get("newSession") is None
    assert claude["command"] == (
        f'cd {shlex.quote(str(workspace))} && claude "$(cat {claude["documentPath"]})"'
    )
    assert edit in (workspace / claude["documentPath"]).read_text(encoding="utf-8")
    assert r["start_claude_windows"] == 0
    assert r["register_a"] == claude["command"]
    assert r["draft_started"] == "claude"
    # The command without the `cd` to the current directory, cut in the middle to fit
    # the 80 columns of the headless Neovim (whole in the register).
    [note] = r["start_claude_notes"]
    assert note["msg"].startswith('Handoff: started Claude Code; run: claude "$(cat .h')
    assert note["msg"].endswith(f'{claude["documentPath"][-6:]})"')
    assert "\n" not in note["msg"] and len(note["msg"]) <= r["echospace"], note

    # Outside a draft buffer: refused, naming what to do.
    assert (r["start_elsewhere"]["ok"], r["start_elsewhere"]["kind"]) == (False, "refused")
    assert [run.whole(n["msg"]) for n in r["start_elsewhere_notes"]] == [
        "Handoff start: Not a draft buffer: run :Handoff start in a buffer :Handoff generate "
        "opened or a Markdown handoff (or :Handoff start --revision REV)."
    ]

    # The edited draft was prepared (its text is the document), then committed.
    assert r["prepare"]["ok"], r["prepare"]
    document = r["prepare"]["result"]["prepared"]["content"]["document"]
    assert document.endswith(edit)
    assert edit in r["preview_prepared"]
    revision = r["commit"]["result"]["revision"]
    assert REVISION.match(revision)
    assert r["continue"]["result"]["selected"] == revision
    assert r["complete_start_revision"] == [revision]
    from_revision = r["start_revision"]["result"]
    assert from_revision["agent"] == "codex"
    assert from_revision["lineage"]["handoff"] == {"kind": "revision", "revision": revision}

    # The lineage report shows both starts; the store holds the generation and them.
    assert r["lineage"]["ok"], r["lineage"]
    assert "# Session lineage" in r["preview_lineage"]
    assert new.name in r["preview_lineage"]
    records = StateStore(workspace / ".handoff").read()["generations"].values()
    kinds = sorted(rec.get("kind", "generation") for rec in records)
    assert kinds == ["generation", "start", "start", "start"]
    assert run.notes_at(ERROR) == [r["start_elsewhere_notes"][0]["msg"]]


def test_confirmations_stay_in_the_message_area(run_nvim, workspace):
    run = run_nvim("messages", workspace, env={"HANDOFF_REAL_NOTIFY": "1"})
    r = run.results

    # Feedback while the server starts, replaced by the command's confirmation.
    texts = [e["text"] for e in r["first_events"]]
    # (one line: the long path cut in the middle)
    assert texts[0].startswith("Handoff: starting python for /") and texts[0].endswith("/ws…")
    assert texts[-1].startswith("Work Contract recorded as source/")
    # A report ends with a line saying where it is (not a stale "Rendering…").
    assert r["report_area"] == "Handoff continuity: in the preview (g? lists its keys)."

    # A visible preview re-rendered quietly: the confirmation is what the UI shows.
    visible = r["visible"]
    assert visible["note"].startswith("Work state recorded as source/")
    assert visible["refreshed"] is True
    assert visible["area"] == visible["note"], r["events"]

    # Closed with `q`, the preview is not re-rendered (no request, no progress echo, no
    # empty echo): the confirmation stays; the preview is marked stale.
    hidden = r["hidden"]
    assert hidden["note"].startswith("Work Contract recorded as source/")
    assert hidden["closed"] is True and hidden["renders"] == 0 and hidden["stale"] is True
    assert hidden["area"] == hidden["note"], r["events2"]
    # Shown again, it re-renders (the second contract is in it).
    assert r["reshown"]["stale"] is False

    committed = r["committed"]
    assert re.match(r"^Committed handoff/[0-9a-z]+@1\.$", committed["note"])
    assert committed["area"] == committed["note"]

    # Every notification is one line that fits the command line (no "Press ENTER").
    assert run.notes and all(
        "\n" not in n["msg"] and len(n["msg"]) <= r["echospace"] for n in run.notes
    ), run.notes


def test_a_finished_generation_never_steals_focus(run_nvim, workspace, tmp_path):
    session = write_pi_session(tmp_path / "sessions" / "s.jsonl", workspace)
    pi_out = tmp_path / "fake-pi.out"
    fake_pi(tmp_path / "bin", pi_out)
    run = run_nvim(
        "focus",
        workspace,
        {"generation": {"provider": "extractive"}},
        env={
            "HANDOFF_SESSION": str(session),
            "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        },
    )
    r = run.results
    before = r["before"]
    assert before["mode"] == "n" and before["buf"].endswith("notes.md")
    assert r["generate"]["ok"] and r["generate_started"]["ok"], r

    # When each generation ended and after it: still typing in notes.md, in the same
    # window, in insert mode; the draft got a split of its own.
    first, second = r["at_done"]
    for seen in (first, r["after"]):
        assert (seen["win"], seen["buf"], seen["mode"]) == (before["win"], before["buf"], "i")
        assert seen["windows"] == before["windows"] + 1 and seen["draft_windows"] == 1
    # With generation.startSession the agent's terminal also opened beside, unfocused.
    for seen in (second, r["after_started"]):
        assert (seen["win"], seen["buf"], seen["mode"]) == (before["win"], before["buf"], "i")
    # The second draft took the first one's window: one draft split, not one per generate.
    assert r["after_started"]["draft_windows"] == 1
    assert r["after_started"]["terminal_windows"] == 1
    assert r["typed"] == ["Typing in notes"]
    assert run.notes_at(ERROR) == []


def test_previews_recheck_evidence_on_write_and_on_R(run_nvim, workspace):
    run = run_nvim("evidence", workspace)
    r = run.results
    fresh = "Every cited file and Source could be read just now, with the recorded hashes."
    assert r["current"]["ok"], r["current"]
    assert fresh in r["before"] and "- changed:" not in r["before"]
    # :w of the cited file: the open preview says it changed.
    assert "- changed: client/pets_client.py" in r["after_write"]
    assert fresh not in r["after_write"]
    assert r["uncited_renders"] == 0
    # Restored outside Neovim (no BufWritePost): `R` re-checks.
    assert fresh in r["after_R"] and "- changed:" not in r["after_R"]
    [keys] = r["keys"]
    assert keys["level"] == INFO
    assert keys["msg"] == "Handoff preview: q close · R re-check · <CR> open · g? keys"
    # `_` and `*` of record text are shown, not concealed as emphasis.
    assert "rename _list_pets_ and keep *args* as is" in r["emphasis"]["line"]
    assert r["emphasis"]["conceallevel"] == 0
    assert run.notes_at(ERROR) == []


def test_drafts_and_receipts_survive_a_restart(run_nvim, workspace, tmp_path):
    session = write_pi_session(tmp_path / "sessions" / "s.jsonl", workspace)
    (workspace / ".git").mkdir()  # a workspace root
    settings = {"generation": {"provider": "extractive"}}
    before = run_nvim("restart_before", workspace, settings, env={"HANDOFF_SESSION": str(session)})
    b = before.results
    gen = b["generate"]["result"]

    # The draft is the file the server saved, in a named buffer: not [No Name], saved
    # with :w (so :qa does not ask), opened beside without taking the focus.
    draft = workspace / gen["draftPath"]
    opened = b["draft_opened"]
    assert Path(opened["name"]) == draft
    assert (opened["modified"], opened["filetype"], opened["focus_kept"]) == (
        False,
        "markdown",
        True,
    )
    assert b["draft_saved_modified"] is False and b["unnamed_modified_buffers"] == 0
    assert b["modified_buffers"] == []  # nothing holds :qa up
    assert draft.read_text(encoding="utf-8").endswith("Saved before the restart.\n")
    revision = b["commit"]["result"]["revision"]
    receipt = b["ack"]["result"]["receipt"]
    unclear = b["ack_unclear"]["result"]["receipt"]

    after = run_nvim(
        "restart_after",
        workspace,
        settings,
        env={"HANDOFF_DRAFT": str(draft), "HANDOFF_RECEIPT": receipt, "HANDOFF_UNCLEAR": unclear},
    )
    r = after.results
    # A new Neovim and server: the saved draft is prepared with its saved text and
    # starts a session with the generation's lineage.
    assert r["prepare"]["ok"], r["prepare"]
    document = r["prepare"]["result"]["prepared"]["content"]["document"]
    assert document.endswith("Saved before the restart.")
    assert "Saved before the restart." in r["preview_prepared"]
    assert r["start"]["ok"], r["start"]
    assert r["start"]["result"]["lineage"]["generation"] == gen["generation"]

    # --no-receipt: recorded, and said plainly that it covers nothing (WARN).
    [note] = r["outcome_none_notes"]
    assert note["level"] == WARN
    assert note["msg"] == "Outcome recorded; it covers nothing (no receipt cited)."
    assert r["outcome_none"]["ok"] and r["outcome_none"]["result"].get("covers") is None
    # A receipt that is not an acceptance: recorded, and said that it covers nothing.
    assert r["outcome_unclear"]["ok"] and r["outcome_unclear"]["result"].get("covers") is None
    [note] = r["outcome_unclear_notes"]
    assert (note["level"], note["msg"]) == (
        WARN,
        "Outcome recorded; it covers nothing (receipt not accepted).",
    )
    # Then the receipts come from the store: the accepted one only, newest first, then
    # "none"; the outcome cites it and covers the revision.
    [menu] = r["menus"]
    assert menu["prompt"] == "Acknowledgement receipt to cite"
    assert len(menu["labels"]) == 2
    assert menu["labels"][0].startswith(f"{receipt}  accepted {revision}")
    assert menu["labels"][1] == "none  (the outcome covers no handoff)"
    assert not any(unclear in label for label in menu["labels"])
    outcome = r["outcome"]["result"]
    assert outcome["covers"] == revision
    [note] = r["outcome_notes"]
    assert (note["level"], note["msg"]) == (
        INFO,
        f"Outcome recorded: covers {revision}.",
    )
    data = HandoffService(workspace).call("handoff.report", {"kind": "continuity"})["data"]
    assert (data["outcome"], data["head"]) == ("covered", revision)
    assert after.notes_at(ERROR) == []


def test_enter_in_a_preview_opens_the_file_revision_or_session(run_nvim, workspace, tmp_path):
    pi_dir = tmp_path / "home" / "pi-agent" / "sessions"
    slug = "--" + str(workspace).strip("/").replace("/", "-") + "--"
    session = write_pi_session(pi_dir / slug / "2026-01-05T10-00-00_s.jsonl", workspace)
    (workspace / ".git").mkdir()
    run = run_nvim("follow", workspace, {"generation": {"provider": "extractive"}})
    r = run.results
    revision = r["revision"]
    # On a revision: that handoff in the preview.
    assert revision in r["revision_line"]
    assert r["revision_preview"].startswith(f"# Handoff {revision}")
    # On a cited file: opened in the window you came from.
    assert r["file_opened"] == {"win_is_work": True, "name": "openapi.yaml"}
    # path:LINE is a file at that line; plain words are nothing to open.
    [target] = r["targets"]
    assert (target["kind"], target["lnum"]) == ("file", 2)
    assert Path(target["value"]) == workspace / "client" / "pets_client.py"
    assert r["nothing"] == []
    # On a session: a focus asked for, then a generate from it with that focus.
    assert str(session) in r["session_line"]
    assert run.prompts[-1] == "Focus (optional): "
    gen = r["generate"]
    assert gen["ok"], gen
    assert gen["result"]["sourceSession"]["path"] == str(session)
    assert "the parser" in gen["result"]["document"].split("## Goal", 1)[1][:2000]
    assert run.notes_at(ERROR) == []


def test_no_state_outside_a_workspace_without_asking_and_a_fast_checkhealth(
    run_nvim, workspace, tmp_path
):
    calls = tmp_path / "server-calls.log"
    wrapper = tmp_path / "bin" / "handoff-lsp"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(calls))}\n'
        f'exec {shlex.quote(sys.executable)} -m lsp_server "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    run = run_nvim("outside", workspace, marker=False, env={"HANDOFF_WRAPPER": str(wrapper)})
    r = run.results

    # Asked before anything is written; "no" refuses, starts nothing, writes nothing.
    asked = f"No .handoff or .git here: keep handoff state in {workspace.resolve()}/.handoff?"
    assert run.prompts == [asked, asked]
    assert (r["refused"]["ok"], r["refused"]["kind"]) == (False, "refused")
    assert "nothing is written outside a workspace" in r["refused"]["message"]
    assert r["state_after_no"] is False and r["clients_after_no"] == 0
    # "yes": the state lives there, and the next subcommand is not asked again.
    assert r["contract"]["ok"] and r["state_after_yes"] is True and r["report"]["ok"]

    # :checkhealth: --version ran once, then came from the cache, then from the running
    # server (which was started once, by the contract).
    version = re.compile(r"Server version: handoff-lsp \d+\.\d+\S* \((.+)\)")
    assert version.search(r["health_first"]).group(1) == "--version"
    assert version.search(r["health_cached"]).group(1) == "cached"
    assert version.search(r["health_running"]).group(1) == "the running server"
    assert "no root marker here: :Handoff asks before keeping state" in r["health_first"]
    lines = calls.read_text(encoding="utf-8").splitlines()
    assert lines.count("--version") == 1, lines
    assert len(lines) == 2, lines  # --version, then the one server


def test_server_log_lines_reach_lsp_log_at_their_level(run_nvim, workspace, tmp_path):
    run = run_nvim("loglevels", workspace)
    r = run.results
    assert r["refused"]["code"] == "exact_target_required" and r["report"]["ok"]
    lines = r["log"].splitlines()
    refused = [line for line in lines if "handoff.acknowledge refused" in line]
    assert refused, r["log"][-3000:]
    # INFO records are INFO lines, sent as window/logMessage; none came as stderr.
    assert all(line.startswith("[INFO]") for line in refused), refused
    assert not [line for line in lines if "stderr" in line and " INFO " in line], r["log"][-3000:]


def test_a_handoff_document_gets_the_servers_findings_as_diagnostics(run_nvim, workspace):
    doc = workspace / "HANDOFF.md"
    doc.write_text("## Progress\n\n- `client/gone.py` (created)\n- `client/pets_client.py` (edited)\n")
    run = run_nvim("checks", workspace, {}, env={"HANDOFF_DOC": str(doc)})
    r = run.results
    assert r["attached"] is True
    (d,) = [d for d in r["diagnostics"] if d["code"] != "unverifiable"]
    assert (d["lnum"], d["code"], d["source"], d["severity"]) == (2, "stale", "handoff", 2)
    assert "client/gone.py is not in the workspace now" in d["message"]
    assert "**stale** (file `client/gone.py`)" in r["hover"]
    assert r["lenses"] == ["1 stale · 1 unverifiable", "Start in pi", "Start in Claude Code", "Start in Codex",
                            "Start in opencode", "Start in Gemini CLI",
                            "Start in Qwen Code"]
    assert r["loclist"] >= 1
    assert r["actions"][0] == "Drop line 3"
    assert r["after_edit"] == ["## Progress", "", "- `client/pets_client.py` (edited)"]
    assert r["after_fix"] == 0
    assert r["opted"] == [True, False, True, True, False, False]


def test_refusals_fit_one_line_at_80_columns_and_handoff_log_has_them_whole(run_nvim, workspace):
    (workspace / "HANDOFF.md").write_text("## Progress\n\n- `client/pets_client.py` (edited)\n")
    run = run_nvim("refusals", workspace)
    r = run.results
    assert r["columns"] == 80
    refused = r["refused"]
    assert len(refused) >= 5, refused
    for n in refused:  # one line within the command line's room: no hit-enter prompt
        assert "\n" not in n["msg"] and len(n["msg"]) <= r["echospace"], n
    cut = [n for n in refused if n["msg"].endswith("(:Handoff log)")]
    assert cut, refused  # the long ones say where the rest is
    assert not [e for e in r["events"] if e["kind"] == "return_prompt"], r["events"]
    log = r["log_text"]
    assert log.startswith("# Handoff messages")
    assert "An acknowledgement binds an exact target" in log
    for n in cut:  # each cut message is whole in the log
        assert run.whole(n["msg"]) in log, (n, log)
    qa = r["qa_with_agent"]
    assert qa["ok"] is False and ("E37" in qa["err"] or "E162" in qa["err"]), qa
    assert qa["name"].endswith("handoff://Claude Code is running (job 7; :qa! stops it)")
    assert r["restart"]["ok"] is True
    assert r["restarted"] == {"old_stopped": True, "new_id": True, "attached": True}
