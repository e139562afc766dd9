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


def human_status(result: dict[str, Any]) -> str:
    scope = result["scope"]
    origin = result["scopeFrom"]
    chosen = "" if origin == "the request" else f" ({origin}; --scope S for another)"
    lines = [f"scope     {scope}{chosen}"]
    if not result["known"]:
        known = result.get("knownScopes") or []
        near = result.get("closest")
        lines.append(
            "          no records in this scope"
            + (f"; did you mean {near}?" if near else "")
            + (
                f" (scopes with records: {', '.join(known[:10])})"
                if known
                else "; none has any yet"
            )
        )
    if result["head"]:
        lines.append(f"head      {result['head']}")
        lines.append(f"transfer  {result['transfer']}, outcome {result['outcome']}")
    else:
        lines.append("head      none (no handoff committed in this scope)")
    stale = result["staleEvidence"]
    if stale:
        said = [f"{_cited(s['citation'])} ({s['reason']})" for s in stale]
        lines.append(f"evidence  {len(stale)} cited since changed or gone: {', '.join(said)}")
    elif result["head"]:
        lines.append("evidence  every cited file as recorded")
    lines.append(f"draft     {result['newestDraft'] or 'none'}")
    found = result["sessions"]
    newest = f", newest {found['newest']}" if found["newest"] else ""
    lines.append(f"sessions  {found['found']} agent session(s) of this workspace{newest}")
    return "\n".join(lines)


def _cited(citation: dict[str, Any]) -> str:
    return citation.get("path") or citation.get("ref") or "?"


def human_scopes(result: dict[str, Any]) -> str:
    listed = result["scopes"]
    if not listed:
        return f"No scope has records yet (a command without --scope uses {result['current']})."
    width = max(len(e["scope"]) for e in listed)
    lines = []
    for e in listed:
        mark = "*" if e["scope"] == result["current"] else " "
        head = e["head"] or "no revision"
        lines.append(f"{mark} {e['scope']:<{width}}  {head}  {e['records']} record(s)")
    if any(e["scope"] == result["current"] for e in listed):
        lines.append(f"(* the scope a command without --scope uses: {result['currentFrom']})")
    else:
        lines.append(
            f"(a command without --scope uses {result['current']}, {result['currentFrom']}; "
            "it has no records)"
        )
    return "\n".join(lines)


def add_setup_verbs(verb: Any, status: Any, scopes: Any) -> None:
    """The sub-commands init, status and scopes (``status`` and ``scopes``: their verbs,
    which ``cliverbs.py`` keeps with every other service call)."""
    verb(
        "status",
        "where the work stands: scope, head, transfer, outcome, stale evidence, draft",
        status,
        description="Where a scope stands, on one screen: the scope (and why it is the "
        "one, when --scope was not given), the head revision, its transfer and outcome, "
        "the cited evidence that changed since, the newest draft and the agent sessions "
        "found for this workspace.",
    )
    verb(
        "scopes",
        "list the scopes that have records",
        scopes,
        description="List the scopes that have records, newest first, with their head "
        "revision; * marks the scope a command without --scope uses.",
    )
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
HUMAN = {"init": human_init, "status": human_status, "scopes": human_scopes}
