"""The ``handoff`` verbs about the setup rather than the record: ``init``, ``status``,
``scopes``, ``doctor``, ``help`` and ``completion`` (the parser of the others is in
``parser.py``)."""

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


def verb_doctor(args, svc) -> dict[str, Any]:
    """Check the setup, each check with what to do when it fails."""
    import platform
    import shutil
    import sys
    from pathlib import Path

    from ...model.errors import HandoffError

    checks: list[dict[str, Any]] = []

    def add(name: str, state: str, detail: str, fix: str | None = None) -> None:
        checks.append(
            {"check": name, "state": state, "detail": detail, **({"fix": fix} if fix else {})}
        )

    python_ok = sys.version_info >= (3, 11)
    add(
        "python",
        "ok" if python_ok else "fail",
        f"Python {platform.python_version()} ({sys.executable})",
        None if python_ok else "handoff needs Python 3.11 or newer",
    )
    scripts = Path(sys.executable).parent
    for program in ("handoff", "handoff-lsp"):
        found = shutil.which(program)
        add(
            f"{program} on PATH",
            "ok" if found else "fail",
            found or "not found",
            None if found else f"add {scripts} to PATH (the editors start handoff-lsp from it)",
        )
    add("workspace", "ok", f"{svc.workspace} ({svc.found_by})")
    _store_checks(svc, add, HandoffError)
    try:
        listed = svc.call("handoff.sessions", {})
        folders = listed["searched"]
        count = len(listed["sessions"])
        detail = f"{count} session(s) of this workspace; searched: {', '.join(folders) or 'none'}"
        add(
            "agent sessions",
            "ok" if count else "note",
            detail,
            None
            if count
            else (
                "run an agent (pi, Claude Code, Codex) in this workspace, or pass 'handoff "
                "generate --session FILE'"
            ),
        )
    except HandoffError as exc:
        add("agent sessions", "fail", exc.message)
    editors = [f"{name} ({path})" for name in ("code", "nvim") if (path := shutil.which(name))]
    add(
        "editors",
        "ok" if editors else "note",
        ", ".join(editors) or "neither code nor nvim on PATH",
        None if editors else "see docs/vscode.md and docs/neovim.md",
    )
    return {"ok": all(c["state"] != "fail" for c in checks), "checks": checks}


def _store_checks(svc, add: Any, refusal: type[Exception]) -> None:
    """The store's health (as ``handoff store check``), its git policy, PostgreSQL."""
    from ...store.check import check_store

    folder = svc.workspace / svc.config.state_folder
    if svc.store.backend == "postgresql":
        from ...store.ops import check_pg

        try:
            result = check_pg(svc.store)
            problems = [p["message"] for p in result.get("problems", [])]
            add(
                "postgresql",
                "fail" if problems else "ok",
                svc.store.describe(),
                "; ".join(problems) or None,
            )
        except refusal as exc:
            extra = getattr(exc, "data", {}).get("extra")
            hint = (
                f"install the '{extra}' extra"
                if extra
                else "check $HANDOFF_STORE and that the server is up"
            )
            add("postgresql", "fail", exc.message, hint)
    else:
        add("postgresql", "ok", "not configured: the embedded store in the workspace")
        if not folder.is_dir():
            add(
                "store",
                "note",
                f"none yet at {folder}",
                "'handoff init' or the first record creates it",
            )
        else:
            try:
                result = check_store(svc.store)
                problems = [p["message"] for p in result["problems"]]
                counts = result["counts"]
                add(
                    "store",
                    "ok" if result["ok"] else "fail",
                    f"{folder}: {counts['sources']} Sources, {counts['revisions']} revisions",
                    "; ".join(problems) + " ('handoff store repair', docs/reliability.md)"
                    if problems
                    else None,
                )
            except refusal as exc:
                add("store", "fail", exc.message)
    ignore = folder / ".gitignore"
    if folder.is_dir():
        try:
            lines = ignore.read_text(encoding="utf-8").splitlines()
        except OSError:
            add(
                "git",
                "note",
                f"no {ignore} yet",
                "the next write puts one there (the store out of git)",
            )
        else:
            from ...store.embedded.layout import OLD_GITIGNORES

            if "\n".join(lines) + "\n" in OLD_GITIGNORES:
                add(
                    "git",
                    "note",
                    f"{ignore} was written by an older handoff (drafts and the journal show in git status)",
                    "the next write replaces it: the whole store out of git",
                )
            elif "*" in (line.strip() for line in lines):
                add("git", "ok", "the store is out of git (.handoff/.gitignore holds *)")
            else:
                add(
                    "git",
                    "note",
                    f"{ignore} is your own: handoffs may be committed",
                    "docs/cli.md, 'The store and git', says what that costs",
                )


def human_doctor(result: dict[str, Any]) -> str:
    marks = {"ok": "ok  ", "note": "note", "fail": "FAIL"}
    lines = []
    for c in result["checks"]:
        lines.append(f"{marks[c['state']]}  {c['check']}: {c['detail']}")
        if c.get("fix"):
            lines.append(f"      -> {c['fix']}")
    lines.append("all good" if result["ok"] else "some checks failed")
    return "\n".join(lines)


def add_setup_verbs(verb: Any, status: Any, scopes: Any) -> None:
    """The sub-commands init, status and scopes (``status`` and ``scopes``: their verbs,
    which ``verbcalls.py`` keeps with every other service call)."""
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
        "doctor",
        "check the setup: Python, PATH, agent sessions, the store, PostgreSQL",
        verb_doctor,
        description="Check the setup and say what to fix: the Python version, handoff and "
        "handoff-lsp on PATH, the workspace and how it was found, the agents' session "
        "folders and this workspace's sessions in them, the store's health (as 'handoff "
        "store check') and its git policy, the PostgreSQL connection when one is "
        "configured ($HANDOFF_STORE), and the editors found. Exit 1 when a check fails.",
    )
    p = verb.sub.add_parser(
        "help",
        help="show the help of a verb (handoff help VERB)",
        description="Show the help of a verb, as 'handoff VERB --help' does; without one, "
        "the list of verbs.",
    )
    p.add_argument("topic", nargs="?", metavar="VERB", help="the verb to explain")
    p = verb.sub.add_parser(
        "completion",
        help="print the shell completion script (bash, zsh or fish)",
        description='Print the completion script of a shell. bash: eval "$(handoff '
        'completion bash)" in ~/.bashrc; zsh: eval "$(handoff completion zsh)" in '
        "~/.zshrc; fish: handoff completion fish > ~/.config/fish/completions/handoff.fish.",
    )
    p.add_argument("shell", choices=["bash", "zsh", "fish"], help="bash, zsh or fish")
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
HUMAN = {
    "init": human_init,
    "status": human_status,
    "scopes": human_scopes,
    "doctor": human_doctor,
}
