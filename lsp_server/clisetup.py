"""The ``handoff`` verbs about the setup rather than the record: ``init``, ``status``,
``scopes``, ``doctor``, ``help`` and ``completion`` (the parser of the others is in
``cliverbs.py``)."""

from __future__ import annotations

from typing import Any


def verb_init(args, svc) -> dict[str, Any]:
    """Create the workspace's store (idempotent), its folder ignored by git."""
    folder = svc.workspace / svc.config.state_folder
    existed = svc.store_existed
    with svc.store.transaction():
        pass  # the folder, its lock and its .gitignore, under the lock
    svc.store_existed = True  # said here, not by the generic line
    return {
        "workspace": str(svc.workspace),
        "foundBy": svc.found_by,
        "stateFolder": str(folder),
        "created": not existed,
        "gitignore": (folder / ".gitignore").is_file(),
    }


def human_init(result: dict[str, Any]) -> str:
    if not result["created"]:
        return f"The handoff store is already at {result['stateFolder']}."
    return (
        f"Created the handoff store {result['stateFolder']} (the workspace is "
        f"{result['workspace']}: {result['foundBy']}).\n"
        "It is local working state, ignored by git as a whole (.handoff/.gitignore); "
        "docs/cli.md says how to commit handoffs instead."
    )


def add_setup_verbs(verb: Any) -> None:
    """The sub-commands init (and the other setup verbs)."""
    verb(
        "init",
        "create the handoff store of this workspace (ignored by git)",
        verb_init,
        description="Create the handoff store of the workspace: the nearest folder above "
        "holding .handoff/, else the git top level, else the current folder (--workspace "
        "DIR chooses). The store is local working state, like .venv: its .gitignore "
        "keeps the whole folder out of git. Running it again changes nothing.",
    )


#: Verb → its human output (the verbs of this module).
HUMAN = {"init": human_init}
