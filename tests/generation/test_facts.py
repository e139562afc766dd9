"""The session-fact rules, each by name, on transcripts written here in each agent's
real format and on the shared real sessions (read in place)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lsp_server.generation.asks import request_text
from lsp_server.generation.gatherer import gather
from lsp_server.generation.providers.extractive import extract
from lsp_server.generation.readers import read_session
from lsp_server.generation.shell import analyse, main_step
from lsp_server.generation.transcript import Message
from lsp_server.model.errors import HandoffError
from lsp_server.surfaces.service import HandoffService

from .test_extractive import assistant, pi_session, result, section, user


def bash(cid: str, command: str) -> tuple[str, str, dict]:
    return (cid, "bash", {"command": command})


def session(tmp_path: Path, workspace: Path, messages: list[dict]):
    t = read_session(pi_session(tmp_path, workspace, messages))
    return t, gather(t, workspace)


# -- the goal and the user's words ----------------------------------------------------


def test_goal_skips_a_slash_command_a_shell_line_and_injected_text(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("/mode"),
            user("!ls -la"),
            user("<environment_context><cwd>/w</cwd></environment_context>"),
            user("Make the importer skip blank lines in data/input.csv"),
            assistant("", ("e1", "edit", {"path": "importer.py", "oldText": "a", "newText": "b"})),
            result("e1", "edit", "Successfully replaced text"),
            assistant("Done: blank lines are skipped."),
        ],
    )
    assert f.goal is not None and f.goal.text.startswith("Make the importer skip blank lines")
    goal = section(extract(t, workspace, None, f), "Goal")
    assert "/mode" not in goal and "environment_context" not in goal and "!ls" not in goal


def test_a_slash_command_with_arguments_gives_its_arguments_as_the_request() -> None:
    m = Message(
        "user",
        "<command-message>orchestrator is running…</command-message>\n"
        "<command-name>/orchestrator</command-name>\n"
        "<command-args>update @CLAUDE.md to the latest state</command-args>",
    )
    assert request_text(m) == ("update @CLAUDE.md to the latest state", "/orchestrator")
    assert (
        request_text(
            Message("user", "<command-name>/exit</command-name><command-args></command-args>")
        )
        is None
    )


def test_thinking_keywords_and_compaction_prompts_are_not_the_goal() -> None:
    assert request_text(Message("user", "@plan.md really ULTRATHINK this")) == (
        "@plan.md really this",
        None,
    )
    assert (
        request_text(
            Message("user", "Your task is to create a detailed summary of the conversation so far")
        )
        is None
    )
    assert (
        request_text(
            Message(
                "user", "This session is being continued from a previous conversation that ran out"
            )
        )
        is None
    )


def test_the_goal_on_a_real_slash_command_session_is_the_request_not_the_command(
    fixtures_dir,
) -> None:
    path = (
        fixtures_dir
        / "sessions/claude/d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    )
    t = read_session(path)
    doc = extract(t, Path("/nonexistent-workspace"), None)
    goal = section(doc, "Goal")
    assert "CLAUDE.md" in goal
    assert "/orchestrator" not in goal and "Split complex tasks" not in goal
    assert "slash command `/orchestrator`" in section(doc, "Critical Context")


def test_a_queued_prompt_is_a_later_request(tmp_path, workspace) -> None:
    rows = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "cwd": str(workspace),
            "message": {"role": "user", "content": "Add a --verbose flag to cli.py"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Edit",
                        "input": {"file_path": "cli.py", "old_string": "a", "new_string": "b"},
                    }
                ],
            },
        },
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "sessionId": "s",
            "content": "also print the version with --version and document it in README.md please",
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "u2",
            "sessionId": "s",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Edit",
                        "input": {"file_path": "README.md", "old_string": "a", "new_string": "b"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u3",
            "parentUuid": "a2",
            "sessionId": "s",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}],
            },
        },
    ]
    path = tmp_path / "claude.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    t = read_session(path)
    f = gather(t, workspace)
    queued = [r for r in f.requests if r.queued]
    assert [r.text for r in queued] == [
        "also print the version with --version and document it in README.md please"
    ]
    assert queued[0] in f.redirections
    assert "(typed while the agent worked)" in section(extract(t, workspace, None, f), "Goal")


def test_a_status_question_is_not_a_redirection(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Write a changelog entry for 2.1 in CHANGELOG.md"),
            assistant("", ("w1", "write", {"path": "CHANGELOG.md", "content": "## 2.1\n"})),
            result("w1", "write", "ok"),
            user("what is this session's name?"),
            assistant("", bash("b1", "echo $SESSION")),
            result("b1", "bash", "s42"),
            assistant("It is s42."),
        ],
    )
    assert f.redirections == []
    assert "session's name" not in section(extract(t, workspace, None, f), "Goal")


# -- steps and their final outcomes ------------------------------------------------------


def test_a_failure_resolved_by_a_differently_spelled_retry_is_not_open(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Push the fix and make the auth tests pass"),
            assistant("", bash("p1", f"cd {workspace} && git push 2>&1")),
            result(
                "p1",
                "bash",
                "fatal: The current branch fix has no upstream branch.\nCommand exited with code 128",
                error=True,
            ),
            assistant("", bash("p2", "git push --set-upstream origin fix")),
            result(
                "p2",
                "bash",
                "branch 'fix' set up to track 'origin/fix'.\n * [new branch]      fix -> fix",
            ),
            assistant("", bash("t1", f"python3 -m pytest {workspace}/tests/test_auth.py -q")),
            result(
                "t1", "bash", "1 failed, 3 passed in 0.2s\nCommand exited with code 1", error=True
            ),
            assistant("", bash("t2", "FOO=1 pytest tests/test_auth.py 2>&1 | tail -3")),
            result("t2", "bash", "4 passed in 0.2s"),
            assistant("All green and pushed."),
        ],
    )
    assert f.open_failures == []
    assert {r.key for r in f.failed_runs} == {"git push", "pytest tests/test_auth.py"}
    assert all(r.resolved_by and r.resolved_by.startswith("a later") for r in f.failed_runs)
    doc = extract(t, workspace, None, f)
    assert "no upstream" not in section(doc, "Next Steps") and "1 failed" not in section(
        doc, "Next Steps"
    )
    assert "`fix` → `fix`" in section(doc, "Done")


def test_grep_no_match_is_not_a_failure(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Find where the retry limit is set and raise it to 5 in config.py"),
            assistant("", bash("g1", "rg -n RETRY_LIMIT src")),
            result("g1", "bash", "Command exited with code 1", error=True),
            assistant("", bash("g2", "grep -rn 'retries' config.py")),
            result("g2", "bash", "", error=True),
        ],
    )
    assert [r.outcome for r in f.runs] == ["no-match", "no-match"]
    assert f.open_failures == [] and f.final.status != "blocked"
    assert "rg -n" not in section(extract(t, workspace, None, f), "Next Steps")


def test_a_masked_pipeline_failure_shows_in_its_output(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Build the site"),
            assistant("", bash("b1", "npm run build 2>&1 | tail -5")),
            result(
                "b1", "bash", "src/app.ts(3,1): error TS2304: Cannot find name 'x'.\nFound 1 error."
            ),
            assistant("", bash("b2", "npm run lint | tail -2")),
            result("b2", "bash", "lint done"),
        ],
    )
    build, lint = f.runs
    assert build.masked and build.outcome == "failed" and "TS2304" in (build.error or "")
    assert lint.masked and lint.outcome == "unknown"  # tail's exit 0 says nothing of lint's
    doc = extract(t, workspace, None, f)
    assert "Ran `npm run build" not in section(doc, "Done")
    assert "TS2304" in section(doc, "Next Steps")
    assert analyse("set -o pipefail; npm test | tail", None)[-1].masked  # the step still pipes…
    assert not gather_masked("set -o pipefail; npm test | tail")  # …but pipefail keeps its status


def gather_masked(command: str) -> bool:
    from lsp_server.generation.gatherer import _Gatherer
    from lsp_server.generation.transcript import Transcript

    g = _Gatherer(Transcript(Path("x"), "pi", "x"), None)
    run = g.run_for(command, Message("assistant"), None, 0)
    return run.masked


def test_apply_patch_through_a_shell_is_a_change(tmp_path, workspace) -> None:
    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/app.py\n@@\n-x = 1\n+def x(): ...\n*** Add File: src/new.py\n+y\n*** End Patch\nPATCH"
    rows = [
        {"timestamp": "t", "type": "session_meta", "payload": {"id": "r1", "cwd": str(workspace)}},
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "rename x in src/app.py"}],
            },
        },
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "call_id": "c0",
                "arguments": json.dumps(
                    {"command": ["bash", "-lc", "rg -n x src && sed -n '1,40p' src/app.py"]}
                ),
            },
        },
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c0",
                "output": json.dumps(
                    {"output": "src/app.py:1:x = 1", "metadata": {"exit_code": 0}}
                ),
            },
        },
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "call_id": "c1",
                "arguments": json.dumps({"command": ["bash", "-lc", patch]}),
            },
        },
        {
            "timestamp": "t",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": json.dumps(
                    {
                        "output": "Success. Updated the following files:\nM src/app.py\nA src/new.py",
                        "metadata": {"exit_code": 0},
                    }
                ),
            },
        },
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    t = read_session(path)
    f = gather(t, workspace)
    assert {p: c.verbs for p, c in f.changes.items()} == {
        "src/app.py": {"edited": 1},
        "src/new.py": {"created": 1},
    }
    done = section(extract(t, workspace, None, f), "Done")
    assert "`src/app.py` (edited" in done and "`src/new.py` (created" in done
    assert "rg -n" not in done and "sed -n" not in done  # looking is not doing


def test_git_mv_rm_and_here_doc_writes_are_changes() -> None:
    changes = [
        c
        for s in analyse(
            "git mv a.py b.py && rm -rf build && cat > notes.md <<EOF\nx > y\nEOF", "/w"
        )
        for c in s.changes
    ]
    assert changes == [("moved", "a.py → b.py"), ("deleted", "build"), ("written", "notes.md")]
    assert (
        main_step(analyse("cd /w/app && git add . && git commit -m 'fix #3' 2>&1", "/w")).key
        == "git commit"
    )


def test_test_runs_keep_their_last_counts(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Make the suite pass"),
            assistant("", bash("m1", "mix test 2>&1 | tail -3")),
            result("m1", "bash", "Finished in 3.1 seconds\n14 doctests, 410 tests, 2 failures"),
            assistant("", bash("m2", "mix test")),
            result("m2", "bash", "Finished in 3.0 seconds\n14 doctests, 410 tests, 0 failures"),
        ],
    )
    first, last = f.tests
    assert first.outcome == "failed" and first.counts == "14 doctests, 410 tests, 2 failures"
    assert last.outcome == "ok" and last.counts == "14 doctests, 410 tests, 0 failures"
    assert first.resolved_by is not None


def test_git_events_keep_their_results(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Commit and open a PR"),
            assistant("", bash("c1", "git add -A && git commit -m 'feat: x'")),
            result("c1", "bash", "[feat/x 64f1b9a] feat: x\n 2 files changed, 10 insertions(+)"),
            assistant("", bash("c2", "gh pr create --fill && gh pr merge 53 --merge")),
            result("c2", "bash", "https://github.com/o/r/pull/53\n"),
        ],
    )
    assert [(g.kind, g.detail) for g in f.git_events] == [
        ("commit", "`64f1b9a` on `feat/x`: feat: x"),
        ("pr", "pr create https://github.com/o/r/pull/53"),
        ("pr", "pr merge #53"),
    ]


def test_files_changed_after_the_last_commit_are_said_uncommitted(tmp_path, workspace) -> None:
    edit = ("e1", "edit", {"path": "src/user.ts", "oldText": "a", "newText": "b"})
    later = ("e2", "edit", {"path": "CHANGELOG.md", "oldText": "a", "newText": "b"})
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Fix the null check in src/user.ts and commit it"),
            assistant("", edit),
            result("e1", "edit", "Successfully replaced text"),
            assistant("", bash("c1", "git commit -am 'fix null check'")),
            result("c1", "bash", "[main 4f3a2b1] fix null check\n 1 file changed"),
            user("great, also add a CHANGELOG entry for it"),
            assistant("", later),
            result("e2", "edit", "Successfully replaced text"),
            assistant("Added the CHANGELOG entry."),
        ],
    )
    done = section(extract(t, workspace, None, f), "Done")
    assert "Changed after the session's last commit, and not committed in it: `CHANGELOG.md`" in done
    assert "`src/user.ts`" not in done.split("not committed in it:")[1]


def test_a_git_look_makes_no_git_event_and_a_chained_commit_still_does(tmp_path, workspace) -> None:
    """Only a commit, push, pull, merge or forge step has an event to read; ``git
    status`` / ``git log`` output that looks like one is not read (nor is a look that
    mentions a pull request's URL)."""
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Commit the fix"),
            assistant("", bash("s1", "git status && git log --oneline -3")),
            result(
                "s1",
                "bash",
                "[main 1234567] looks like a commit line\nhttps://github.com/o/r/pull/9\n",
            ),
            assistant("", bash("c1", "git status && git commit -am 'fix: y'")),
            result("c1", "bash", "On branch main\n[main 89abcde] fix: y\n 1 file changed"),
        ],
    )
    assert [(g.kind, g.detail) for g in f.git_events] == [
        ("commit", "`89abcde` on `main`: fix: y"),
    ]


# -- the final state ---------------------------------------------------------------------


def test_a_finished_session_says_so_and_proposes_verification(fixtures_dir) -> None:
    path = (
        fixtures_dir / "sessions/claude/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    )
    t = read_session(path)
    f = gather(t, None)
    assert f.final.status == "done"
    assert f.goal is not None and "bd show spotter-dov" in f.goal.text  # across the compaction
    nxt = section(extract(t, Path("/nonexistent-workspace"), None, f), "Next Steps")
    assert "finished" in nxt and "Re-run" in nxt
    for stale in ("no upstream branch", "Pre-commit validation failed", "Access.get/2"):
        assert stale not in nxt


def test_a_request_the_agent_s_harness_failed_on_says_the_failure(tmp_path) -> None:
    """The user's last message unanswered because the model API failed (Qwen Code's
    ``api_error``, Gemini CLI's ``error`` message, Codex's ``error`` event): the state
    says the turn failed and how, once however often it was retried."""
    own = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
    t = read_session(own / "qwen" / "subagent-apierror.0.24.4.jsonl")
    f = gather(t, None)
    assert f.final.status == "waiting for the agent"
    assert f.final.reason.endswith("the agent's turn failed (“500 stub internal error”)")
    # Gemini CLI writes the failure as a message of type ``error``.
    log = tmp_path / "session.jsonl"
    records = [
        {"sessionId": "s", "projectHash": "h", "startTime": "2026-12-01T10:00:00Z"},
        {"id": "u1", "type": "user", "content": [{"text": "add a --verbose flag"}]},
        {"id": "e1", "type": "error", "content": "[API Error: quota exceeded]"},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    f = gather(read_session(log), None)
    assert "the agent's turn failed (“[API Error: quota exceeded]”)" in f.final.reason
    # No failure after it: unanswered, nothing more is claimed.
    log.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    f = gather(read_session(log), None)
    assert f.final.reason == "the user's last message was not answered in the session"


def test_a_file_that_could_not_be_read_is_not_among_the_files_read() -> None:
    """A read tool's call counts once its result is no error: Qwen Code's read of a
    missing file ("File not found") is not a file the agent read."""
    own = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
    f = gather(read_session(own / "qwen" / "fix-calc.0.15.10.jsonl"), None)
    assert not any(name.endswith("missing.txt") for name in f.reads)
    assert any(name.endswith("calc.py") for name in f.reads)


def test_an_unanswered_last_message_is_the_next_step(fixtures_dir) -> None:
    t = read_session(fixtures_dir / "sessions/claude/apanloco__random__session.jsonl")
    f = gather(t, None)
    assert f.final.status == "waiting for the agent"
    nxt = section(extract(t, Path("/nonexistent-workspace"), None, f), "Next Steps")
    assert nxt.splitlines()[1].startswith("1. Carry out the user's last message, “yes please”")
    assert "session.jsonl" in nxt and "Dockerfile" not in nxt


def test_a_session_cut_off_mid_call_says_what_ran(fixtures_dir) -> None:
    t = read_session(
        fixtures_dir / "sessions/codex/kunalcode12__Empire-of-bits-vorld__codex-session.jsonl"
    )
    f = gather(t, None)
    assert f.final.status == "in progress" and f.cut_off
    nxt = section(extract(t, Path("/nonexistent-workspace"), None, f), "Next Steps")
    assert "Check the result of" in nxt.splitlines()[1] and "codex" in nxt.splitlines()[1]
    assert "bash --version" not in nxt and "history.jsonl" not in nxt


def test_a_subagent_file_is_refused_naming_its_parent(fixtures_dir, tmp_path) -> None:
    path = fixtures_dir / "sessions/claude/iansherr__claude-code-log__agent-a4ca7529859c158c2.jsonl"
    with pytest.raises(HandoffError) as err:
        HandoffService(tmp_path).call(
            "handoff.generate", {"session": str(path), "startSession": False}
        )
    assert err.value.code == "nothing_to_hand_off"
    assert err.value.data["reason"] == "subagent"
    assert err.value.data["parentSession"] == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert "ef958aa1-0e93-49f0-bb71-150f63befcd1" in err.value.message
    assert not (tmp_path / ".handoff").exists()


# -- what reaches the document ---------------------------------------------------------


def test_noise_never_reaches_the_document(tmp_path, workspace) -> None:
    minified = "!function(e){var t={};function n(r){if(t[r])return t[r].exports}" * 12
    html = "<div class='a'><span>x</span><p>y</p></div>"
    b64 = "QUJD" * 40
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Fix the bundle"),
            assistant("", bash("b1", "node build.js")),
            result(
                "b1",
                "bash",
                f"{minified}\n{html}\n{b64}\n\x1b[31m<tool_use_error>Error: bundle.js not found</tool_use_error>\x1b[0m\nCommand exited with code 1",
                error=True,
            ),
        ],
    )
    doc = extract(t, workspace, None, f)
    assert "Error: bundle.js not found" in doc
    for noise in ("!function(e)", "<span>", b64[:40], "\x1b[", "<tool_use_error>"):
        assert noise not in doc


def test_the_tools_own_state_folder_is_not_the_users_change(tmp_path, workspace) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".handoff").mkdir()
    (workspace / ".handoff" / "state.json").write_text("{}")
    (workspace / "app.py").write_text("x\n")
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Write app.py and note it"),
            assistant(
                "",
                ("w1", "write", {"path": ".handoff/notes.md", "content": "x"}),
                ("w2", "write", {"path": "app.py", "content": "x"}),
            ),
            result("w1", "write", "ok"),
            result("w2", "write", "ok"),
        ],
    )
    assert list(f.changes) == ["app.py"]
    critical = section(extract(t, workspace, None, f), "Critical Context")
    assert "`app.py` [??]" in critical and ".handoff" not in critical


def test_key_decisions_never_come_from_narration(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Speed up the parser"),
            assistant("Let me fix the test by using a dict instead of a list."),
            assistant(
                "I'll use orjson instead of json because the profile shows json.loads at 60% of the time."
            ),
        ],
    )
    decisions = section(extract(t, workspace, None, f), "Key Decisions")
    assert "Let me fix the test" not in decisions
    assert "I'll use orjson instead of json because" in decisions
    t2, f2 = session(
        tmp_path,
        workspace,
        [user("Speed up the parser"), assistant("Now I'll switch to a set instead.")],
    )
    assert section(extract(t2, workspace, None, f2), "Key Decisions").strip() == "- None recorded."


def test_a_compaction_summary_is_used_by_its_sections(tmp_path, workspace) -> None:
    path = pi_session(
        tmp_path, workspace, [user("Port the CLI to click"), assistant("Working on it.")]
    )
    lines = path.read_text().splitlines()
    summary = (
        "## Goal\nPort the CLI from argparse to click, keeping every flag.\n\n"
        "## Key Decisions\n- Use click groups because subcommands share options\n\n"
        "## Next Steps\n- Wire the --dry-run flag (stale by now)\n"
    )
    lines.append(
        json.dumps(
            {
                "type": "compaction",
                "id": "c9",
                "parentId": "e1",
                "summary": summary,
                "firstKeptEntryId": "e1",
                "tokensBefore": 9000,
            }
        )
    )
    lines.append(
        json.dumps(
            {
                "type": "message",
                "id": "e9",
                "parentId": "c9",
                "message": assistant("Finished: the CLI runs on click now."),
            }
        )
    )
    path.write_text("\n".join(lines) + "\n")
    t = read_session(path)
    doc = extract(t, workspace, None)
    assert "Port the CLI from argparse to click, keeping every flag." in section(doc, "Goal")
    assert "Use click groups because subcommands share options" in section(doc, "Key Decisions")
    assert "--dry-run" not in section(doc, "Next Steps")


def test_a_focus_pulls_in_a_fact(tmp_path, workspace) -> None:
    messages = [
        user("Fix the flaky login test"),
        assistant("", ("r1", "read", {"path": "src/session_store.py"})),
        result("r1", "read", "class SessionStore: ..."),
        assistant(
            "", ("e1", "edit", {"path": "tests/test_login.py", "oldText": "a", "newText": "b"})
        ),
        result("e1", "edit", "ok"),
    ]
    t, f = session(tmp_path, workspace, messages)
    plain = extract(t, workspace, None, f)
    focused = extract(t, workspace, "the session store", f)
    assert "Related to the focus" not in plain
    critical = section(focused, "Critical Context")
    assert "Related to the focus: the agent read `src/session_store.py`" in critical
    assert "src/session_store.py" in section(focused, "Next Steps").splitlines()[1]


def test_every_fact_keeps_its_session_entries(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Create hello.txt"),
            assistant("", ("w1", "write", {"path": "hello.txt", "content": "hi"})),
            result("w1", "write", "ok"),
        ],
    )
    data = f.to_json()
    assert data["goal"]["entries"] == ["e0"]
    assert data["changes"] == [{"path": "hello.txt", "how": {"created": 1}, "entries": ["e1"]}]
    assert data["finalState"]["status"] in ("in progress", "done")


def test_generate_returns_the_facts_with_entries(fixtures_dir, tmp_path) -> None:
    path = (
        fixtures_dir / "sessions/claude/marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    )
    out = HandoffService(tmp_path).call(
        "handoff.generate", {"session": str(path), "startSession": False}
    )
    facts = out["facts"]
    assert facts["finalState"]["status"] == "done" and facts["finalState"]["entries"]
    commit = next(g for g in facts["git"] if g["kind"] == "commit" and "64f1b9a" in g["detail"])
    assert commit["entries"] and len(commit["entries"][0]) == 36  # a Claude Code uuid


# -- the title, the prompt, redacted words and subagent files --------------------------


def test_the_title_and_the_prompts_first_request_skip_a_slash_command(tmp_path, workspace) -> None:
    t, _ = session(
        tmp_path,
        workspace,
        [user("/mode"), user("Rename the CLI flag --out to --output"), assistant("On it.")],
    )
    assert t.title == "Rename the CLI flag --out to --output"
    first = t.first_request()
    assert first is not None and first.text == "Rename the CLI flag --out to --output"
    from lsp_server.generation.prompt import build_prompt

    assert "[user]\nRename the CLI flag --out to --output" in build_prompt(t, None, 4000).text


def test_a_redacted_placeholder_is_not_quoted_as_the_goal(tmp_path, workspace) -> None:
    t, f = session(tmp_path, workspace, [user("[REDACTED_PROMPT]"), assistant("[REDACTED_TEXT]")])
    doc = extract(t, workspace, None, f)
    assert "[REDACTED_PROMPT]" not in section(doc, "Goal") + section(doc, "Next Steps")
    assert "redacted in the session file" in section(doc, "Goal")


def test_sessions_do_not_list_a_subagent_file(fixtures_dir, homes, place, workspace) -> None:
    place(
        fixtures_dir
        / "sessions/claude/iansherr__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
        "claude",
        workspace,
    )
    place(
        fixtures_dir / "sessions/claude/iansherr__claude-code-log__agent-a4ca7529859c158c2.jsonl",
        "claude",
        workspace,
        name="agent-a4ca7529859c158c2.jsonl",
    )
    listed = HandoffService(workspace).call("handoff.sessions", {})["sessions"]
    assert [Path(s["path"]).name for s in listed] == [
        "iansherr__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "src/a.ts:3: error: cannot find name",
        "error[E0425]: cannot find value",
        "npm ERR! code 1",
        "Error: boom",
        "FAILED tests/test_a.py::test_x",
        "FAIL src/a.test.ts",
        "fatal: not a git repository",
        "Traceback (most recent call last):",
        "webpack failed to compile",
        "Build failed in 2s",
        "process exited with code 2",
        "Found 3 errors.",
        "✗ lint",
        "✘ 2 problems",
    ],
)
def test_a_masked_pipeline_failure_is_seen_in_every_form_it_prints(text: str) -> None:
    from lsp_server.generation.signals import _FAILURE_MARK, failure_marked

    assert failure_marked("output\n" + text)
    assert bool(_FAILURE_MARK.search("output\n" + text))


def test_the_failure_words_admit_every_failure_mark_of_the_real_sessions(sessions: Path) -> None:
    """The cheap word check before the failure pattern never hides one of its matches."""
    from lsp_server.generation.signals import _FAILURE_MARK, failure_marked, readable

    texts = [
        readable(m.text)
        for path in sorted(sessions.rglob("*.jsonl"))
        for m in read_session(path).history
        if m.role == "tool"
    ]
    assert texts
    marked = [t for t in texts if _FAILURE_MARK.search(t)]
    assert marked, "the sessions show failures"
    assert [t for t in texts if failure_marked(t)] == marked
