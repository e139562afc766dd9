"""A model's answer held against the session facts, through the real OpenAI provider
and a local server that answers with plausible but wrong prose: a goal the user never
set, tests said to pass after a failing run, invented commands and files, an answer
without the handoff's sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.generation.capture import missing_sections, section_lines
from lsp_server.generation.check import check_answer
from lsp_server.generation.providers.extractive import extract
from tests.conftest import OWN

from .test_extractive import assistant, pi_session, result, user
from .test_facts import bash, session
from .wire import Stream, WireServer, openai_text

REQUEST = "Fix the login timeout in src/auth.py so that idle sessions expire after thirty minutes."
FAILED_RUN = (
    "F....\nFAILED tests/test_auth.py::test_idle_expiry - AssertionError: 1800 != 3600\n"
    "1 failed, 4 passed in 0.12s\n\nCommand exited with code 1"
)


def section(document: str, name: str) -> str:
    span = section_lines(document, name)
    return "" if span is None else "\n".join(document.splitlines()[span[0] - 1 : span[1]])


def answer(
    goal: str,
    constraints: str = "- None stated.",
    done: str = "- Edited the code.",
    in_progress: str = "- Nothing.",
    context: str = "- None.",
    steps: str = "1. Read the code again.",
) -> str:
    """A model's answer with every section, wrong where a test makes it wrong."""
    return (
        f"## Goal\n\n{goal}\n\n## Constraints & Preferences\n\n{constraints}\n\n"
        f"## Progress\n\n### Done\n\n{done}\n\n### In Progress\n\n{in_progress}\n\n"
        "### Pending\n\n- None.\n\n## Key Decisions\n\n- None.\n\n"
        f"## Critical Context\n\n{context}\n\n## Next Steps\n\n{steps}\n"
    )


@pytest.fixture
def model(gen_service):
    """``ask(session, text)``: generate the handoff of ``session`` with a model server
    that answers ``text`` over the OpenAI chat wire protocol (streamed)."""
    started: list[WireServer] = []

    def ask(session: Path, text: str, **params) -> dict:
        server = WireServer(lambda req: Stream(openai_text(text, pieces=9)))
        started.append(server)
        svc = gen_service(provider="openai", openai={"baseUrl": server.url + "/v1", "model": "m"})
        out = svc.call("handoff.generate", {"session": str(session), **params})
        assert len(server.requests) == 1  # the model was asked, once
        return out

    yield ask
    for server in started:
        server.close()


@pytest.fixture
def failing_session(tmp_path: Path, workspace: Path) -> Path:
    """A session whose last test run failed: the agent edited src/auth.py, the run of
    the auth tests failed, the agent said so."""
    (workspace / "src").mkdir()
    (workspace / "src" / "auth.py").write_text("TIMEOUT = 3600\n")
    return pi_session(
        tmp_path,
        workspace,
        [
            user(REQUEST),
            assistant("", ("e1", "edit", {"path": "src/auth.py", "oldText": "a", "newText": "b"})),
            result("e1", "edit", "Successfully replaced text"),
            assistant("", bash("t1", "uv run pytest tests/test_auth.py -q")),
            result("t1", "bash", FAILED_RUN, error=True),
            assistant(
                "The idle expiry test still fails: the timeout is read from the old setting."
            ),
        ],
    )


@pytest.fixture
def passing_session(place, workspace: Path) -> Path:
    """The project's own pets-fix session (the real pi agent): the tests failed, the
    agent fixed pets/client.py, the last run passed and it committed."""
    return place(OWN["pi"], "pi", workspace)


def test_model_goal_unlike_the_requests_is_replaced(model, failing_session: Path) -> None:
    wrong = "Migrate the billing service to Stripe webhooks."
    out = model(failing_session, answer(wrong))
    goal = section(out["document"], "Goal")
    assert "Stripe" not in goal and REQUEST in goal  # the user's words, from the facts
    assert any("names nothing the user asked for" in w and wrong in w for w in out["warnings"])
    # What the model said is not lost: below the sections, labelled unchecked.
    note = section(out["document"], "Unchecked model text")
    assert f"> {wrong}" in note and "replaced by the goal of the session facts" in note
    # A goal in the model's own words that names what the user asked is the model's.
    own = "Make idle logins expire after thirty minutes (src/auth.py)."
    kept = model(failing_session, answer(own))
    assert section(kept["document"], "Goal").strip() == own
    assert not any("names nothing" in w for w in kept.get("warnings", []))


def test_model_claims_tests_pass_after_failing_run_is_marked(
    model, failing_session: Path, passing_session: Path
) -> None:
    out = model(
        failing_session,
        answer(
            "Make idle sessions expire after thirty minutes.",
            done="- Edited `src/auth.py`; all tests pass.",
            context="- The task is complete.",
            steps="1. Fix the expiry so the tests pass.",
        ),
    )
    doc = out["document"]
    assert (
        "- Edited `src/auth.py`; ~~all tests pass.~~ (contradicted by the session: the last "
        "test run, `uv run pytest tests/test_auth.py -q`, failed (`1 failed, 4 passed in "
        "0.12s`))" in section(doc, "Done")
    )
    assert "~~The task is complete.~~ (contradicted by the session" in section(
        doc, "Critical Context"
    )
    assert "1. Fix the expiry so the tests pass." in section(doc, "Next Steps")  # a step, no claim
    assert any("claimed what the session contradicts" in w for w in out["warnings"])
    # The other way round: "still failing" after the last run passed.
    after = model(
        passing_session,
        answer(
            "Fix the pets client so list_pets returns the names, sorted.",
            in_progress="- The pets client tests still fail.",
        ),
    )
    progress = section(after["document"], "In Progress")
    assert "~~The pets client tests still fail.~~ (contradicted by the session:" in progress
    assert "python3 -m unittest -v 2>&1`, passed" in progress


def test_invented_command_is_dropped(model, passing_session: Path) -> None:
    out = model(
        passing_session,
        answer(
            "Fix the pets client so list_pets returns the names, sorted.",
            constraints="- Always run `make clean-all` before testing.\n- Keep the fix small.",
            done="- Fixed `pets/client.py`; see also `pets/server.py`.",
            steps=(
                "1. Run `python3 -m unittest -v` again.\n"
                "2. Ship it: `rm -rf dist && ./deploy.sh --prod`\n"
                "3. Release pets 0.2.0.\n"
                "4. Then run:\n\n   ```sh\n   ./scripts/publish --force\n   ```"
            ),
        ),
    )
    doc = out["document"]
    steps = section(doc, "Next Steps")
    assert "deploy.sh" not in steps and "publish" not in steps
    assert "1. Run `python3 -m unittest -v` again." in steps  # the session ran it
    assert "2. Release pets 0.2.0." in steps  # renumbered
    constraints = section(doc, "Constraints & Preferences")
    assert "make clean-all" not in constraints and "- Keep the fix small." in constraints
    # Outside Next Steps and Constraints a name the session never shows is marked.
    assert "`pets/server.py` (not in the session)" in section(doc, "Done")
    assert "`pets/client.py` (not" not in doc
    (warning,) = [w for w in out["warnings"] if "never appear in the session" in w]
    for name in ("rm -rf dist && ./deploy.sh --prod", "make clean-all", "pets/server.py"):
        assert f"`{name}`" in warning
    assert "./scripts/publish --force" in warning


def test_answer_without_sections_is_not_kept_on_top(model, failing_session: Path) -> None:
    prose = (
        "All done! I fixed the login timeout, all tests pass, and I deployed it with "
        "`./deploy.sh`.\n\nNothing is left to do."
    )
    out = model(failing_session, prose)
    doc = out["document"]
    assert doc.startswith("## Goal\n") and REQUEST in section(doc, "Goal")
    assert missing_sections(doc) == []
    # The facts' document, whole and first; the model's prose only below it, quoted.
    before, _, note = doc.partition("## Unchecked model text")
    assert "deploy" not in before and "All done" not in before
    assert "AssertionError: 1800 != 3600" in before  # what the session showed, not what was said
    assert "do not act on it without checking" in note
    assert "> All done! I fixed the login timeout" in note and "> Nothing is left to do." in note
    assert out["missingSections"][0] == "## Goal"
    assert any("none of the handoff's sections" in w for w in out["warnings"])


# -- the extractive document as the reference an answer is held against -----------------


def test_a_model_answer_missing_facts_and_sections_is_restored(tmp_path, workspace) -> None:
    t, f = session(
        tmp_path,
        workspace,
        [
            user("Create hello.txt and commit it"),
            assistant("", ("w1", "write", {"path": "hello.txt", "content": "hi"})),
            result("w1", "write", "ok"),
            assistant("", bash("c1", "git commit -am hello")),
            result("c1", "bash", "[main 1a2b3c4] hello\n 1 file changed"),
        ],
    )
    reference = extract(t, workspace, None, f)
    answer = "## Goal\n\nSay hello.\n\n## Progress\n\n### Done\n\n- Wrote a file.\n\n## Next Steps\n\n1. Nothing.\n"
    checked = check_answer(answer, f, reference)
    assert "## Key Decisions" in checked.missing and "## Goal" not in checked.missing
    doc = checked.document
    assert doc.index("## Key Decisions") < doc.index("## Next Steps")
    done = section(doc, "Done")
    assert "`hello.txt` (created) (restored from the session facts)" in done
    assert "1a2b3c4" in done
    assert any("restored from the session facts" in w for w in checked.warnings)
    assert check_answer(reference, f, reference).warnings == []  # nothing dropped, nothing added


def test_an_answer_that_leaves_a_code_fence_open_still_gets_its_sections(
    tmp_path, workspace
) -> None:
    t, f = session(tmp_path, workspace, [user("Write notes.md"), assistant("Done.")])
    reference = extract(t, workspace, None, f)
    answer = "## Goal\n\nWrite notes.md\n\n```markdown\nHere is a summary of the work\n"
    checked = check_answer(answer, f, reference)
    assert missing_sections(checked.document) == []
    assert checked.document.startswith(answer + "```\n")
