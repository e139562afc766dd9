"""The user's constraints, each rule by name: directives short or in other languages, the
task's own first sentence, questions, and words that only look like a negation."""

from __future__ import annotations

from .test_extractive import assistant, result, section, user
from .test_ledger import edit, generated


def test_short_and_non_english_directives_are_constraints(tmp_path, workspace) -> None:
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Build the settings page for the admin app"),
            assistant("I could write the API and the UI together.", edit("e1", "api.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("I started with the API."),
            user("stick to the API, I'll do the UI myself"),
            assistant("Understood, API only."),
            user("no escribas código todavía"),
            assistant("De acuerdo."),
            user("no, that's too hacky"),
            assistant("I will take another approach."),
        ],
    )
    constraints = section(doc, "Constraints & Preferences")
    assert "stick to the API, I'll do the UI myself" in constraints
    assert "no escribas código todavía" in constraints
    assert "no, that's too hacky" in constraints
    assert "Build the settings page for the admin app" not in constraints


def test_an_english_non_prefix_is_no_negation(tmp_path, workspace) -> None:
    """Italian "non" before a word limits the work; the English prefix ("non-ASCII",
    "non-blocking") says what a thing is, not what not to do."""
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Fix the parser.\nNon-ASCII: Grüße, naïve café, 日本語 in the test input."),
            assistant("Fixed.", edit("e1", "parser.py")),
            result("e1", "edit", "Successfully replaced text"),
            user("non toccare i test"),
            assistant("Va bene."),
        ],
    )
    constraints = section(doc, "Constraints & Preferences")
    assert "non toccare i test" in constraints
    assert "Non-ASCII" not in constraints


def test_the_first_sentence_of_a_longer_goal_is_the_task_not_a_constraint(
    tmp_path, workspace
) -> None:
    """ "Update the client … and keep the tests green. Do not change the API." — the first
    sentence is the task (shown as the Goal); the second limits it. A first sentence that
    opens with a directive ("Always use pnpm.") is a constraint still."""
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user(
                "Update the Pets client to openapi.yaml 2.0.0 and keep the contract tests "
                "green. Do not change the API itself."
            ),
            assistant("", edit("e1", "client/pets_client.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("Updated the client."),
        ],
    )
    said = section(doc, "Constraints & Preferences")
    assert "“Do not change the API itself.”" in said
    assert "Update the Pets client" not in said
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Always use pnpm, never npm. Add a lint script to package.json."),
            assistant("", edit("e1", "package.json")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("Added the lint script."),
        ],
    )
    assert "“Always use pnpm, never npm.”" in section(doc, "Constraints & Preferences")


def test_the_users_questions_are_not_constraints(tmp_path, workspace) -> None:
    _, doc = generated(
        tmp_path,
        workspace,
        [
            user("Speed up the importer"),
            assistant("", edit("e1", "importer.py")),
            result("e1", "edit", "Successfully replaced text"),
            assistant("Made the importer stream rows."),
            user("should we keep the old batch mode around?"),
            assistant("Yes, behind a flag."),
        ],
    )
    assert "keep the old batch mode" not in section(doc, "Constraints & Preferences")
