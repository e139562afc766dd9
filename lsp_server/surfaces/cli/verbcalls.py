"""Each ``handoff`` verb's function: its parsed arguments turned into one service call
(the parser that names them is ``parser.py``, their human output ``human.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ...model.errors import HandoffError
from .callline import UsageError, orjson, read_json_file


def _with_scope(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if getattr(args, "scope", None):
        params.setdefault("scope", args.scope)
    return params


def _prepared_arg(args: argparse.Namespace) -> dict[str, Any]:
    value = read_json_file(args.prepared_file)
    if isinstance(value, dict) and "prepared" in value and "digest" not in value:
        value = value["prepared"]  # accept a whole handoff.prepare result too
    return value


# -- verbs -------------------------------------------------------------------


def verb_contract(args, svc):
    return svc.call(
        "handoff.contract",
        _with_scope(
            args,
            {
                "objective": args.objective,
                "inScope": args.in_scope or [],
                "outOfScope": args.out_of_scope or [],
                "acceptance": args.acceptance or [],
            },
        ),
    )


def _typed_here(params: dict[str, Any], svc) -> dict[str, Any]:
    """The facts' file citations taken from where the user stands (a subfolder of the
    workspace), made relative to the workspace root."""
    from ...workspace import cited_from

    return cited_from(params, Path.cwd().resolve(), svc.workspace)


def verb_work(args, svc):
    return svc.call(
        "handoff.recordWork",
        _typed_here(
            _with_scope(
                args,
                {
                    "state": args.state,  # the server parses TEXT :: CITE lines
                    "disposition": args.disposition,
                    "nextActions": list(args.next or []),
                },
            ),
            svc,
        ),
    )


def verb_prepare(args, svc):
    value = read_json_file(args.draft_file)
    params: dict[str, Any] = {"draft": value}
    if isinstance(value, dict) and "draft" in value:
        params["draft"] = value["draft"]
        if args.draft_file != "-" and "generation" in value:
            # A generation's saved draft: the text the user edited beside it, not the
            # document as it was generated.
            params["draft"] = _as_edited(Path(args.draft_file), value, svc.workspace)
        if not args.scope and isinstance(value.get("scope"), str):
            params["scope"] = value["scope"]
    return svc.call("handoff.prepare", _typed_here(_with_scope(args, params), svc))


def _as_edited(sidecar_path: Path, sidecar: dict[str, Any], workspace: Path) -> Any:
    """A generation's HandoffDraft as the user left its Markdown draft (the ``.md``
    beside the ``.json``); the generated one when there is no such file."""
    from ...generation.draft import edited_draft

    markdown = sidecar_path.with_suffix(".md")
    try:
        text = markdown.read_text(encoding="utf-8")
    except FileNotFoundError:
        return sidecar["draft"]
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", exc)
        raise UsageError(f"cannot read the draft {markdown}: {why}") from None
    if not isinstance(sidecar["draft"], dict):
        return sidecar["draft"]
    real = markdown.resolve()
    try:
        saved = real.relative_to(workspace.resolve()).as_posix()
    except ValueError:
        saved = str(real)
    return edited_draft(sidecar, text, saved)


def _draft_generation(draft: Path) -> dict[str, str]:
    """The generation a saved Markdown draft came from and its scope, as its sidecar
    (the ``.json`` beside it) records them; nothing for a file of the user's own."""
    try:
        value = orjson.loads(draft.with_suffix(".json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(value, dict) or not isinstance(value.get("generation"), str):
        return {}
    out = {"generation": value["generation"]}
    if isinstance(value.get("scope"), str):
        out["scope"] = value["scope"]
    return out


def verb_current(args, svc):
    params: dict[str, Any] = {}
    if args.document:
        params["document"] = Path(args.document).read_text(encoding="utf-8")
    return svc.call("handoff.handoffCurrentWork", _with_scope(args, params))


def verb_commit(args, svc):
    prepared = _prepared_arg(args)
    params = {"prepared": prepared}
    if not args.scope and isinstance(prepared, dict) and isinstance(prepared.get("scope"), str):
        params["scope"] = prepared["scope"]
    return svc.call("handoff.commit", _with_scope(args, params))


def _target_params(args) -> dict[str, Any]:
    params: dict[str, Any] = {"mode": args.mode}
    if args.mode == "exact":
        if not args.target:
            raise UsageError("exact needs a revision: handoff/<id>@<n>")
        params["revision"] = args.target
    elif args.mode == "prepared":
        if not args.target:
            raise UsageError("prepared needs the file holding the prepared handoff")
        args.prepared_file = args.target
        params["prepared"] = _prepared_arg(args)
        if not args.scope and isinstance(params["prepared"], dict):
            scope = params["prepared"].get("scope")
            if isinstance(scope, str):
                params["scope"] = scope
    return _with_scope(args, params)


def _scope_has_records(svc, params: dict[str, Any]) -> None:
    """Refuse a read of a scope that has no records (``unknown_scope``), naming the
    scopes that have and the closest one: a typo is not an empty answer."""
    from ...commands.status import unknown_scope

    scope = svc.resolve_scope(params.get("scope"))
    if not svc.store.snapshot().has_scope(scope):
        why = None if params.get("scope") else svc.default_scope()[1]
        raise unknown_scope(svc, scope, why)


def verb_continue(args, svc):
    # The server renders what a person reads (templates/continue.md.j2).
    params = _target_params(args)
    if args.mode == "latest":
        _scope_has_records(svc, params)
    return svc.call("handoff.continue", {**params, "render": "terminal"})


def verb_ack(args, svc):
    params = _target_params(args)
    params.update(
        status=args.status,
        checks={
            "evidenceAvailable": args.evidence_available,
            "liveStateConfirmed": args.live_state_confirmed,
            "capabilityConfirmed": args.capability_confirmed,
            "authorizationConfirmed": args.authorization_confirmed,
        },
    )
    if args.note:
        params["note"] = args.note
    if args.actor:
        params["actor"] = args.actor
    return svc.call("handoff.acknowledge", params)


def verb_outcome(args, svc):
    checks = []
    for spec in args.check or []:
        name, sep, status = spec.rpartition("=")
        if not sep or not name:
            raise UsageError(f"--check {spec!r}: write NAME=STATUS")
        checks.append({"name": name, "status": status})
    params = {"status": args.status, "summary": args.summary, "checks": checks}
    if args.receipt:
        params["receipt"] = args.receipt
    return svc.call("handoff.recordOutcome", _with_scope(args, params))


def verb_report(args, svc):
    params: dict[str, Any] = {"kind": args.kind, "render": args.render}
    if args.revision:
        params["revision"] = args.revision
    if getattr(args, "source", None):
        params["source"] = args.source
    if args.prepared_file:
        params["prepared"] = _prepared_arg(args)
    elif not args.revision:
        _scope_has_records(svc, _with_scope(args, {}))
    return svc.call("handoff.report", _with_scope(args, params))


def verb_status(args, svc):
    return svc.call("handoff.status", _with_scope(args, {}))


def verb_scopes(args, svc):
    return svc.call("handoff.scopes", {})


def verb_check(args, svc):
    """``handoff check FILE``: paths are taken from where the user stands."""
    params: dict[str, Any] = {"document": str(Path(args.file).resolve())}
    if args.session:
        params["session"] = str(Path(args.session).expanduser().resolve())
    result = svc.call("handoff.check", params)
    fixes = [d["fix"] for d in result["diagnostics"] if d.get("fix")]
    if not getattr(args, "fix", False) or not fixes:
        return result
    return _fixed(svc, params, fixes)


def _fixed(svc, params: dict[str, Any], fixes: list[dict[str, Any]]) -> dict[str, Any]:
    """``handoff check --fix``: every finding's fix written into the document (replaced
    whole, its mode kept), then the document checked again."""
    import os
    import tempfile

    from ...claims.verdicts import apply_fixes

    path = Path(params["document"])
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HandoffError(
            "invalid_params",
            f"{path} is not UTF-8 text (byte {exc.start}): --fix writes nothing into it.",
            document=str(path),
        ) from None
    fixed = apply_fixes(text, fixes)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(fixed)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {**svc.call("handoff.check", params), "fixed": [f["title"] for f in fixes]}


def verb_sessions(args, svc):
    return svc.call("handoff.sessions", {"render": "terminal"})  # templates/sessions.md.j2


def _generation_settings(args, current: dict[str, Any]) -> dict[str, Any]:
    """The server's ``generation`` settings with the command-line flags laid over them."""
    import shlex

    settings = {k: (dict(v) if isinstance(v, dict) else v) for k, v in current.items()}
    provider = args.provider or settings.get("provider") or "extractive"
    if args.command and not args.provider:
        provider = "command"
    section = settings.setdefault(provider, {}) if provider != "extractive" else {}
    if args.base_url:
        section["baseUrl"] = args.base_url
    if args.model:
        section["model"] = args.model
    if args.api_key_env is not None:
        section["apiKeyEnv"] = args.api_key_env or None
    if args.timeout is not None:
        section["timeoutSeconds"] = args.timeout
    if args.max_tokens is not None:
        section["maxTokens"] = args.max_tokens
    if args.command:
        try:
            settings.setdefault("command", {})["argv"] = shlex.split(args.command)
        except ValueError as exc:
            raise UsageError(f"--command: {exc}") from None
    if args.max_prompt_tokens is not None:
        settings["maxPromptTokens"] = args.max_prompt_tokens
    settings["provider"] = provider
    return settings


def _from_here(path: str) -> str:
    """A file named on the command line, taken from where the user stands (the server
    takes a relative path from the workspace root)."""
    import os

    return os.path.abspath(os.path.expanduser(path)) if path.strip() else path


def verb_generate(args, svc):
    params: dict[str, Any] = {"format": args.format}
    if args.session:
        params["session"] = _from_here(args.session)
    if args.focus:
        params["focus"] = " ".join(args.focus)
    if args.start:
        params["startSession"] = True
    svc.config.generation = _generation_settings(args, svc.config.generation or {})
    return svc.call("handoff.generate", _with_scope(args, params))


def verb_start(args, svc):
    params: dict[str, Any] = {}
    if args.agent:
        params["agent"] = args.agent
    if args.parent_session:
        params["parentSession"] = _from_here(args.parent_session)
    chosen = [n for n in ("draft", "prepared_file", "revision") if getattr(args, n)]
    if len(chosen) > 1:
        raise UsageError("give one of --draft, --prepared, --revision")
    if args.revision:
        params["revision"] = args.revision
    elif args.prepared_file:
        prepared = _prepared_arg(args)
        params["prepared"] = prepared
        if not args.scope and isinstance(prepared, dict) and isinstance(prepared.get("scope"), str):
            params["scope"] = prepared["scope"]
    else:
        draft = args.draft
        if draft is None:  # the newest generation's draft, as the user left it
            view = svc.call("handoff.report", _with_scope(args, {"kind": "lineage"}))["data"]
            drafts = [g["draft"] for g in view["generations"] if g.get("draft")]
            if not drafts:
                raise UsageError(
                    "no draft to start from: run `handoff generate` first, or give "
                    "--draft FILE, --prepared FILE or --revision REF"
                )
            draft = str(svc.workspace / drafts[-1])
        try:
            params["document"] = Path(draft).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"cannot read the draft {draft}: {getattr(exc, 'strerror', exc)}"
            ) from None
        # The draft's own generation decides the parent session, not the newest one.
        own = _draft_generation(Path(draft))
        if own:
            params["generation"] = own["generation"]
            if not args.scope and "scope" in own:
                params["scope"] = own["scope"]
    return svc.call("handoff.startSession", _with_scope(args, params))


def verb_store(args, svc):
    from ...store import ops as storeops
    from ...store.check import repair_store

    if args.action == "migrate":
        return storeops.run_migrate(args.url, args.grant)
    if args.action == "copy":
        return storeops.run_copy(svc.workspace, args.from_, args.url, args.project)
    if args.action == "check":
        return svc.call("handoff.repairStore", {"action": "check"})["check"]
    if args.restore and args.fresh:
        raise HandoffError("invalid_params", "Give --restore FILE or --fresh, not both.")
    if svc.store.backend == "postgresql":
        if args.restore or args.fresh:
            raise HandoffError(
                "invalid_params",
                "--restore and --fresh are for the store in the workspace; a database's "
                "repair moves unreadable rows aside (run it as the database's owner).",
            )
        return storeops.repair_pg(svc.store)
    return repair_store(svc.store, restore=args.restore, fresh=args.fresh)
