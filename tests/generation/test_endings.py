"""How a session's last turn ended, each rule by name: the next step the agent names
(inline, announced as it hands back, or listed after finished work), a plan awaiting leave
to start, work the user put first, failures only the user can clear or that failed
again, and files changed after the last test run."""

from __future__ import annotations

from .test_extractive import assistant, result, section, user
from .test_ledger import bash, edit, generated


def one_edit(request: str, path: str, report: str) -> list[dict]:
    """A request, one edit of ``path`` and the agent's report: the shape most endings need."""
    return [
        user(request),
        assistant("", edit("e1", path)),
        result("e1", "edit", "Successfully replaced text"),
        assistant(report),
    ]


def test_work_the_agent_names_as_left_is_not_done_after_a_constraint(tmp_path, workspace) -> None:
    """The user added a constraint mid-request and the agent acknowledged it, saying
    inline what remains ("Remaining: run the contract tests"): the request is still in
    progress and its next step is the agent's, not "done, wait for the user"."""
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Regenerate the pets client from openapi.yaml and keep the contract tests green."),
            assistant(
                "I regenerated client/pets_client.py from openapi.yaml. Next: run the contract tests."
            ),
            user("Do not touch the server stubs; they are out of scope."),
            assistant("Understood. Remaining: run the contract tests against the new client."),
        ],
    )
    assert f.agent_next == ["run the contract tests against the new client."]
    assert f.final is not None and f.final.status == "in progress"
    assert "run the contract tests against the new client" in f.final.reason
    steps = section(doc, "Next Steps")
    assert "lists next: run the contract tests against the new client" in steps
    assert "nothing in it is left open" not in steps
    assert "Wait for the user's next request" not in steps


def test_an_inline_next_step_that_names_nothing_is_no_step() -> None:
    from lsp_server.generation.signals import listed_next

    assert listed_next("All green. Remaining: none.") == []
    assert listed_next("**Next:** wire the CLI flag") == ["wire the CLI flag"]
    # A cue mid-sentence is prose, not a step; a list after a cue line wins over inline.
    assert listed_next("The next: step is unclear") == []
    assert listed_next("Next: tidy up.\n\nNext steps:\n- add tests\n- update docs") == [
        "add tests",
        "update docs",
    ]


def test_a_plan_that_asks_leave_to_start_waits_for_the_user(tmp_path, workspace) -> None:
    """A plan and "Shall I proceed?" with none of the work done: the agent waits for the
    user's go-ahead; "Shall I…?" offers more only after the work was done."""
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Migrate the project from webpack to vite"),
            assistant(
                "Here is my plan:\n1. Add vite.config.ts\n2. Replace the webpack scripts\n"
                "3. Remove the webpack dependencies\n\nShall I proceed?"
            ),
        ],
    )
    assert f.final is not None and f.final.status == "waiting for the user"
    assert f.final.question == "Shall I proceed?"
    steps = section(doc, "Next Steps")
    assert "Get the user's answer to the agent's last question: “Shall I proceed?”" in steps
    assert "nothing in it is left open" not in steps
    assert "the agent answered" not in doc


def test_an_earlier_plan_awaiting_leave_to_start_stays_open(tmp_path, workspace) -> None:
    """The user went on to another errand without the go-ahead: the plan still waits."""
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Migrate the project from webpack to vite"),
            assistant("My plan: add vite.config.ts, then swap the scripts. Want me to go ahead?"),
            user(
                "Separately: write a short CONTRIBUTING.md that explains how to run the linters "
                "and the unit tests locally."
            ),
            assistant("", edit("e1", "CONTRIBUTING.md")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("CONTRIBUTING.md now explains the linters and the unit tests."),
        ],
    )
    first, _ = f.tasks
    assert first.status == "waiting for the user" and first.question == "Want me to go ahead?"
    assert "An earlier request is still open: “Migrate the project" in section(doc, "Next Steps")


def test_words_on_a_proposed_plan_answer_the_leave_to_start(tmp_path, workspace) -> None:
    """After "Want me to proceed?", the user's words on the plan (what to change in it)
    are the answer: they continue the task, which is not left waiting."""
    f, _ = generated(
        tmp_path,
        workspace,
        [
            user("Split main.ts into modules"),
            assistant(
                "Proposal: move selectSession into model-resolver.ts and checkForNewVersion "
                "into version-check.ts; main.ts keeps the mode routing. Want me to proceed with "
                "this refactoring?"
            ),
            user(
                "checkForNewVersion only runs in interactive mode, so keep it there; "
                "selectSession in model-resolver is fine. Rest looks good."
            ),
            assistant("", edit("e1", "src/model-resolver.ts")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("Moved selectSession into model-resolver.ts; main.ts keeps the routing."),
        ],
    )
    assert len(f.tasks) == 1 and f.tasks[0].status == "done"


def test_work_the_user_put_first_does_not_finish_the_request_it_preceded(
    tmp_path, workspace
) -> None:
    """ "Actually stop, fix the rounding bug first": the report that follows speaks for the
    rounding fix; the refactor it was put before is not said to be finished."""
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Refactor the payment module into smaller files"),
            assistant("", edit("e1", "src/payment/index.ts")),
            result("e1", "edit", "Successfully replaced text"),
            user("Actually stop, just fix the rounding bug in src/payment/total.ts first"),
            assistant("", edit("e2", "src/payment/total.ts")),
            result("e2", "edit", "Successfully replaced text"),
            assistant("Fixed the rounding: totals now round half-even in src/payment/total.ts."),
        ],
    )
    assert f.tasks[-1].deferral is not None
    steps = section(doc, "Next Steps")
    assert "nothing in it is left open" not in steps
    assert (
        "Check whether the request it was put before still needs doing: “Refactor the payment "
        "module into smaller files”" in steps
    )


def test_a_limit_without_other_work_first_is_no_deferral() -> None:
    from lsp_server.generation.facts import Request
    from lsp_server.generation.ledger import Task

    task = Task(Request(text="Add retries to the HTTP client", entry=None, position=0))
    task.replies.append(Request(text="no, don't use tenacity", entry=None, position=3))
    assert task.deferral is None


def test_a_next_step_announced_as_the_agent_hands_back_is_not_done(tmp_path, workspace) -> None:
    """ "I'll run the benchmark now." and nothing after it: the announced step was not
    taken in the session; "Let me know if…" announces nothing."""
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Speed up the CSV import in src/importer.py"),
            assistant("", edit("e1", "src/importer.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant(
                "I switched the importer to batch inserts of 500 rows. I'll run the benchmark "
                "now to confirm the speedup."
            ),
        ],
    )
    assert f.agent_next == ["run the benchmark now to confirm the speedup"]
    assert f.final is not None and f.final.status == "in progress"
    assert "nothing in it is left open" not in section(doc, "Next Steps")
    f, _ = generated(
        tmp_path,
        workspace,
        one_edit(
            "Fix the typo in README.md",
            "README.md",
            "Fixed the typo. Let me know if you want anything else.",
        ),
    )
    assert f.agent_next == [] and f.final is not None and f.final.status == "done"
    # A done word before the announcement speaks for what came before it: the PR the
    # user asked for was still to open.
    f, doc = generated(
        tmp_path,
        workspace,
        one_edit(
            "Fix the date parsing bug and open a PR",
            "src/dates.py",
            "The fix is done and all tests pass. I'll open the PR now.",
        ),
    )
    assert f.agent_announced and f.final is not None and f.final.status == "in progress"
    assert "suggests next" not in section(doc, "Next Steps")


def test_steps_listed_after_finished_work_are_the_agents_words_not_a_claim_about_the_user(
    tmp_path, workspace
) -> None:
    f, doc = generated(
        tmp_path,
        workspace,
        one_edit(
            "Fix the date parsing bug",
            "src/dates.py",
            "The fix is done.\n\nNext steps:\n- add a changelog entry",
        ),
    )
    assert f.final is not None and f.final.status == "done"
    steps = section(doc, "Next Steps")
    assert "The agent's last message suggests next (its words): add a changelog entry" in steps
    assert "not asked for by the user" not in steps


def test_a_failure_only_the_user_can_clear_says_what_the_agent_asked(tmp_path, workspace) -> None:
    f, doc = generated(
        tmp_path,
        workspace,
        [
            user("Deploy the staging build"),
            assistant("", bash("b1", "make deploy-staging")),
            result(
                "b1",
                "bash",
                "Error: AWS credentials not found\n\nCommand exited with code 2",
                error=True,
            ),
            assistant(
                "The deploy failed: there are no AWS credentials here. You'll need to run "
                "`aws configure` or export AWS_PROFILE, then I can retry."
            ),
        ],
    )
    assert f.final is not None and f.final.status == "blocked"
    assert f.final.question is not None and f.final.question.startswith("You'll need to run")
    steps = section(doc, "Next Steps")
    assert "the agent asked the user: “You'll need to run `aws configure`" in steps
    assert "Fix the failure of" not in steps


def test_a_step_that_failed_again_is_one_open_failure(tmp_path, workspace) -> None:
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Make the flaky login test pass reliably"),
            assistant("", bash("b1", "pytest tests/test_login.py")),
            result("b1", "bash", "F\n1 failed\n\nCommand exited with code 1", error=True),
            assistant("", edit("e1", "tests/test_login.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("", bash("b2", "pytest tests/test_login.py")),
            result("b2", "bash", "F\n1 failed\n\nCommand exited with code 1", error=True),
            assistant("I wasn't able to make it pass: the auth server rate-limits the test."),
        ],
    )
    assert section(doc, "Next Steps").count("Fix the failure of `pytest tests/test_login.py`") == 1


def test_a_file_changed_after_the_last_test_run_is_named_in_the_rerun_step(
    tmp_path, workspace
) -> None:
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Make the parser accept trailing commas"),
            assistant("", edit("e1", "src/parser.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("", bash("b1", "pytest -q")),
            result("b1", "bash", "....\n4 passed in 0.2s"),
            assistant("", edit("e2", "src/parser.py")),
            result("e2", "edit", "Successfully replaced text"),
            assistant("Trailing commas are accepted now; I also tidied the error message."),
        ],
    )
    assert (
        "Re-run `pytest -q` and compare with `4 passed in 0.2s` (changed after that run: "
        "`src/parser.py`)." in section(doc, "Next Steps")
    )


def test_tests_said_to_pass_in_a_session_that_ran_no_command_are_to_run(
    tmp_path, workspace
) -> None:
    """ "Added the test; it passes." with no command run in the session: nothing shows
    the pass. A session that ran a command (it may be the test run) gets no such step."""
    _, doc = generated(
        tmp_path,
        workspace,
        one_edit(
            "Add a unit test for parse_date",
            "tests/test_dates.py",
            "Added tests/test_dates.py; the test passes.",
        ),
    )
    step = "Run the tests: the agent's last message says they pass, but the session ran no command."
    assert step in section(doc, "Next Steps")
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Add a unit test for parse_date"),
            assistant("", edit("e1", "tests/test_dates.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("", bash("b1", "make check")),
            result("b1", "bash", "ok"),
            assistant("Added tests/test_dates.py; the test passes."),
        ],
    )
    assert step not in section(doc, "Next Steps")
