"""The ``handoff`` verbs and the full argparse parser: every command line but a plain
``call COMMAND [PARAMS]`` (``callline.py``); the verbs are friendlier spellings of the
same service calls for people."""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from pathlib import Path
from typing import Any, get_args

from ... import __version__
from ...commands import REGISTRY
from ...model.errors import HandoffError
from .callline import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    UsageError,
    dump,
    make_service,
    orjson,
    parse_call_line,
    read_json_file,
    run_call,
    say_store_created,
)

#: The warnings this process has said on stderr (each is said once).
_SAID: set[str] = set()


def warn(text: str) -> None:
    """Say ``text`` on stderr as a ``handoff: warning:`` line, unless it was said."""
    if text not in _SAID:
        _SAID.add(text)
        print(f"handoff: warning: {text}", file=sys.stderr)


class _SayOnce(logging.Handler):
    """The library's warnings as ``handoff: warning:`` lines: a warning a verb also
    returns (a broken template override, say) is printed once, not as a bare log line
    and again by the verb."""

    def emit(self, record: logging.LogRecord) -> None:
        warn(record.getMessage())


def _say_library_warnings() -> None:
    library = logging.getLogger("lsp_server")
    if not any(isinstance(h, _SayOnce) for h in library.handlers):
        library.addHandler(_SayOnce(logging.WARNING))


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
        _typed_here(_with_scope(
            args,
            {
                "state": args.state,  # the server parses TEXT :: CITE lines
                "disposition": args.disposition,
                "nextActions": list(args.next or []),
            },
        ), svc),
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
    if args.prepared_file:
        params["prepared"] = _prepared_arg(args)
    elif not args.revision:
        _scope_has_records(svc, _with_scope(args, {}))
    return svc.call("handoff.report", _with_scope(args, params))


def verb_status(args, svc):
    return svc.call("handoff.status", _with_scope(args, {}))


def verb_scopes(args, svc):
    return svc.call("handoff.scopes", {})


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
            raise UsageError(f"cannot read the draft {draft}: {getattr(exc, 'strerror', exc)}") from None
        # The draft's own generation decides the parent session, not the newest one.
        own = _draft_generation(Path(draft))
        if own:
            params["generation"] = own["generation"]
            if not args.scope and "scope" in own:
                params["scope"] = own["scope"]
    return svc.call("handoff.startSession", _with_scope(args, params))


# -- human output ------------------------------------------------------------


def _human_generate(result: dict[str, Any]) -> str:
    lines = [result["document"].rstrip(), "", "---"]
    src = result["sourceSession"]
    lines.append(f"from {src['format']} session {src['path']} ({result['provider']})")
    if result["missingSections"]:
        lines.append("missing sections: " + ", ".join(result["missingSections"]))
    lines.append(f"draft: {result['draftPath']}")
    started = result.get("started")
    if started:
        lines.append(_human_start(started))
    else:
        lines.append("edit the draft, then start the next session from it: handoff start")
    for w in result.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def _human_start(result: dict[str, Any]) -> str:
    lines = []
    if result.get("newSession"):
        lines.append(f"new {result['agent']} session: {result['newSession']['path']}")
    lines.append(f"handed over: {result['documentPath']}")
    lines.append(f"start it with: {result['command']}")
    return "\n".join(lines)


def _human(verb: str, result: dict[str, Any], args) -> str:
    from .setup import HUMAN

    if verb in HUMAN:
        return HUMAN[verb](result)
    if verb == "report":
        for warning in result.get("warnings", []):
            warn(warning)
        return result["markdown"].rstrip("\n")
    if verb in ("sessions", "continue"):
        return result["markdown"].rstrip("\n")
    if verb == "generate":
        return _human_generate(result)
    if verb == "start":
        return _human_start(result)
    if verb in ("current", "prepare") and getattr(args, "out", None):
        Path(args.out).write_bytes(orjson.dumps(result["prepared"], option=orjson.OPT_INDENT_2))
        return f"Prepared handoff for {result['scope']} written to {args.out} (digest {result['prepared']['digest']})."
    if verb == "store":
        return _human_store(result)
    if verb == "commit":
        how = "already committed as" if result["idempotent"] else "committed"
        return f"{how} {result['revision']}"
    if verb == "ack":
        if result.get("warning"):
            warn(result["warning"])
        return f"{result['status']} {result['target']} (receipt {result['receipt']})"
    if "source" in result:
        return f"recorded {result['source']} in {result['scope']}"
    return dump(result)


def verb_store(args, svc):
    from ...store import ops as storeops
    from ...store.check import check_store, repair_store

    if args.action == "migrate":
        return storeops.run_migrate(args.url, args.grant)
    if args.action == "copy":
        return storeops.run_copy(svc.workspace, args.from_, args.url, args.project)
    if args.action == "check":
        if svc.store.backend == "postgresql":
            return storeops.check_pg(svc.store)
        return check_store(svc.store)
    if svc.store.backend == "postgresql":
        if args.restore or args.fresh:
            raise HandoffError(
                "invalid_params",
                "--restore and --fresh are for the store in the workspace; a database's "
                "repair moves unreadable rows aside (run it as the database's owner).",
            )
        return storeops.repair_pg(svc.store)
    return repair_store(svc.store, restore=args.restore, fresh=args.fresh)


def _human_store(result: dict[str, Any]) -> str:
    if result.get("action") in ("migrate", "copy"):
        from ...store.ops import human

        return human(result)
    check = result.get("check", result)
    lines = [f"{a}" for a in result.get("actions", [])]
    counts = check["counts"]
    lines.append(
        f"{check['stateFile']}: {'ok' if check['ok'] else 'PROBLEMS'} "
        f"({counts['sources']} Sources, {counts['revisions']} revisions, "
        f"{counts['segments']} segments)"
    )
    lines += [f"  {p['problem']}: {p['message']}" for p in check["problems"]]
    return "\n".join(lines)


# -- parser ------------------------------------------------------------------


#: One line per contract command, for ``handoff call --help`` (docs/commands.md has
#: the params, results and refusals of each).
FACT_SYNTAX = (
    "A FACT is 'TEXT :: CITE[, CITE…]': the text, then '::', then one or more citations "
    "separated by commas. A CITE is either source/<id> (a recorded Source, e.g. the "
    "Work Contract's) or a path of an existing file inside the workspace (its hash is "
    "recorded), with :12 or :12-20 after it for the cited lines. The server parses the "
    "line, as it does for the editors."
)


def _choices(values) -> str:
    return ", ".join(values)


@functools.cache
def _formatter() -> type[argparse.HelpFormatter]:
    """The help formatter of every parser (made with the first parser)."""
    class Formatter(argparse.HelpFormatter):
        """Wraps descriptions and epilogs paragraph by paragraph; lines that start with a
        space (lists, examples) are kept as written."""

        def _fill_text(self, text: str, width: int, indent: str) -> str:
            import textwrap

            out = []
            for para in text.split("\n\n"):
                if para.startswith(" ") or "\n " in para:
                    out.append(para)
                else:
                    out.append(textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                                             subsequent_indent=indent))
            return "\n\n".join(out)

    return Formatter


def _globals(p: argparse.ArgumentParser, top: bool) -> None:
    """--workspace, --scope and --state-folder: with their defaults on the top parser,
    without on each verb (so a value given before the verb is kept)."""
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p.add_argument(
        "--workspace",
        "-w",
        default=d(None),
        metavar="DIR",
        help="workspace folder (default: the nearest folder above holding .handoff/, else "
        "the git top level, else .)",
    )
    p.add_argument(
        "--scope",
        "-s",
        default=d(None),
        metavar="SCOPE",
        help="the line of work the records belong to (default: the git branch, else "
        "'default'); letters, digits, '.', '_', '-', '/'",
    )
    p.add_argument("--state-folder", default=d(".handoff"), help=argparse.SUPPRESS)


class _Verbs:
    """Adds one sub-command with the common options and ``--json``."""

    def __init__(self, sub: Any, common: argparse.ArgumentParser) -> None:
        self.sub, self.common = sub, common

    def __call__(self, name, help_, fn, description=None, epilog=None):
        sp = self.sub.add_parser(
            name,
            parents=[self.common],
            help=help_,
            description=description or help_,
            epilog=epilog,
            formatter_class=_formatter(),
        )
        sp.add_argument(
            "--json", action="store_true", help="print the raw JSON result instead of a sentence"
        )
        sp.set_defaults(fn=fn)
        return sp


def _add_call_and_demo(sub: Any, common: argparse.ArgumentParser) -> None:
    """The sub-commands that are not verbs of the record: call and demo."""
    raw = _formatter()
    call_list = "\n".join(f"  {c.name:<28}{c.summary}" for c in REGISTRY)
    p = sub.add_parser(
        "call",
        parents=[common],
        help="run one contract command; JSON in, JSON out",
        description="Run one command of the command contract (the same commands an editor "
        "runs over LSP): the params object in, the result object out, as JSON. Exit 0 with "
        "the result on stdout; 1 with {\"error\": {\"code\", \"message\", \"data\", "
        "\"jsonrpcCode\"}} on stdout; 2 on a usage error (on stderr).",
        epilog=f"commands:\n{call_list}\n\nThe scope is the params' \"scope\", else "
        "--scope, else the scope of the prepared handoff the params carry (as the verbs "
        "take it), else the git branch, else 'default'. Params, results and error codes: "
        "docs/commands.md.",
        formatter_class=raw,
    )
    p.add_argument("command", metavar="COMMAND", help="a command listed below, e.g. handoff.commit")
    p.add_argument(
        "params", nargs="?", metavar="PARAMS_JSON", help="the params object as JSON (default: {})"
    )
    p.add_argument(
        "--params-file", metavar="FILE", help="read the params JSON from FILE ('-' for stdin)"
    )

    p = sub.add_parser(
        "demo",
        parents=[common],
        formatter_class=raw,
        help="run the OpenAPI walkthrough end to end",
        description="Run the OpenAPI walkthrough end to end in a scratch workspace: Work "
        "Contract, work state, hand off current work, commit handoff/<id>@1, continue from "
        "latest, acknowledge the exact revision, record the Task Outcome, and print the "
        "continuity view. Needs no model and no network. With --workspace DIR it runs in "
        "DIR (which must have no .handoff/ yet) and keeps it. When its output is closed "
        "early (handoff demo | head) the walkthrough still runs to the end.",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the scratch workspace and print where it is"
    )


def build_parser(verbs: bool = True) -> argparse.ArgumentParser:
    """The ``handoff`` argument parser: the global options, then every sub-command
    (``verbs=False``: only ``call`` and ``demo``, which parse a ``handoff call …`` command
    line the same; building the verbs' parsers costs a cold call ~10 ms)."""
    common = argparse.ArgumentParser(add_help=False)
    _globals(common, top=False)
    parser = argparse.ArgumentParser(
        prog="handoff",
        formatter_class=_formatter(),
        description="Versioned, checked handoffs of coding-agent work.",
        epilog="Run 'handoff VERB --help' for the options of a verb. Exit status: 0 done, "
        "1 refused (the reason is printed), 2 usage error.",
    )
    _globals(parser, top=True)
    parser.add_argument("--version", action="version", version=f"handoff {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    _add_call_and_demo(sub, common)
    if not verbs:
        return parser
    verb = _Verbs(sub, common)
    _add_record_verbs(verb)
    _add_handoff_verbs(verb)
    _add_continue_verb(verb)
    _add_ack_verb(verb)
    _add_outcome_verb(verb)
    _add_report_verbs(verb)
    _add_store_verb(verb)
    _add_generate_verb(verb)
    _add_start_and_schema_verbs(verb)
    _add_mcp_verb(verb)
    from .setup import add_setup_verbs

    add_setup_verbs(verb, verb_status, verb_scopes)
    return parser


def _add_record_verbs(verb: _Verbs) -> None:
    """The sub-commands contract and work."""
    from ...model import vocabulary as lc  # the enums' values, without the converter

    p = verb(
        "contract",
        "record a Work Contract",
        verb_contract,
        description="Record a Work Contract: what the work is, what is in and out of "
        "scope, and how it is accepted. --in-scope, --out-of-scope and --acceptance may "
        "be repeated, one item each.",
    )
    p.add_argument("--objective", required=True, metavar="TEXT", help="what the work is for (required)")
    p.add_argument(
        "--in-scope",
        action="append",
        metavar="ITEM",
        help="something the work includes (repeat for more; at least one)",
    )
    p.add_argument(
        "--out-of-scope",
        action="append",
        metavar="ITEM",
        help="something the work leaves alone (repeat for more; optional)",
    )
    p.add_argument(
        "--acceptance",
        action="append",
        metavar="CRITERION",
        help="a criterion the work is accepted by (repeat for more; at least one)",
    )

    p = verb(
        "work",
        "record the work state ('text :: evidence' facts)",
        verb_work,
        description="Record where the work stands: one state FACT, a disposition, and the "
        "next actions (each a FACT). Every fact cites its evidence.",
        epilog=FACT_SYNTAX + "\n\nexample:\n  handoff work --state 'client regenerated "
        ":: client/pets_client.py' \\\n      --next \"run contract tests :: $CONTRACT\"",
    )
    p.add_argument(
        "--state", required=True, metavar="FACT", help="where the work stands: 'TEXT :: CITE[, CITE…]'"
    )
    p.add_argument(
        "--disposition",
        default="continuable",
        choices=lc.DISPOSITIONS,
        help=f"one of {_choices(lc.DISPOSITIONS)} (default: continuable)",
    )
    p.add_argument(
        "--next",
        action="append",
        metavar="FACT",
        help="a next action, 'TEXT :: CITE[, CITE…]' (repeat for more; a handoff needs at "
        "least one)",
    )


def _add_handoff_verbs(verb: _Verbs) -> None:
    """The sub-commands prepare, current and commit."""
    p = verb(
        "prepare",
        "prepare a handoff from a draft JSON file (writes nothing)",
        verb_prepare,
        description="Finalise a draft into a prepared handoff (digest, base, evidence "
        "hashes). Nothing is written to the store; commit the result with 'handoff commit'.",
        epilog='The draft: {"objective": TEXT, "state": FACT, "disposition": D, '
        '"nextActions": [FACT…], "document": MARKDOWN (optional)}, a FACT being '
        '{"text": TEXT, "citations": [{"kind": "source", "ref": "source/<id>"} | '
        '{"kind": "artifact", "path": PATH}]}. A whole {"draft": …} object is accepted too.',
    )
    p.add_argument("draft_file", metavar="DRAFT.json", help="the draft, as JSON ('-' for stdin)")
    p.add_argument("--out", metavar="FILE", help="save the prepared handoff to FILE")

    p = verb(
        "current",
        "hand off current work: boundary Source + prepared handoff",
        verb_current,
        description="Hand off current work: write a boundary Source and return a prepared "
        "handoff built from the latest Work Contract and work state of the scope. Nothing "
        "is committed; commit it with 'handoff commit FILE'.",
    )
    p.add_argument("--document", metavar="FILE.md", help="a Markdown handoff document to include")
    p.add_argument("--out", metavar="FILE", help="save the prepared handoff to FILE")

    p = verb(
        "commit",
        "commit a prepared handoff as the next revision",
        verb_commit,
        description="Commit a prepared handoff as the scope's next revision "
        "(handoff/<id>@<n>). It commits only on the base it was prepared on; committing the "
        "same prepared handoff again is idempotent. The scope defaults to the prepared "
        "handoff's own.",
    )
    p.add_argument(
        "prepared_file",
        metavar="PREPARED.json",
        help="the prepared handoff (as written by --out, or a whole prepare result)",
    )


def _add_continue_verb(verb: _Verbs) -> None:
    """The sub-commands continue."""
    targets = (
        "TARGET: 'latest' (the scope's newest revision), 'exact REV' (a revision "
        "handoff/<id>@<n>) or 'prepared FILE' (a prepared handoff that is not committed)."
    )
    p = verb(
        "continue",
        "continue from latest, exact REV, or prepared FILE",
        verb_continue,
        description="Read a handoff to carry on from it. The content is always untrusted "
        "history: check its evidence before acting on it.",
        epilog=targets,
    )
    p.add_argument(
        "mode",
        choices=["latest", "exact", "prepared"],
        metavar="MODE",
        help="latest, exact or prepared",
    )
    p.add_argument(
        "target",
        nargs="?",
        metavar="REV|FILE",
        help="exact: the revision handoff/<id>@<n>; prepared: the prepared handoff's file",
    )


def _add_ack_verb(verb: _Verbs) -> None:
    """The sub-commands ack."""
    from ...model import vocabulary as lc  # the enums' values, without the converter

    p = verb(
        "ack",
        "acknowledge an exact target (exact REV or prepared FILE)",
        verb_ack,
        description="Acknowledge exactly what you continued from: a revision (exact REV) "
        "or a prepared handoff (prepared FILE); 'latest' is not a target, because it can "
        "change under you. Prints the receipt Source, which a Task Outcome can cite.",
        epilog="'accepted' needs all four checks (--evidence-available, "
        "--live-state-confirmed, --capability-confirmed, --authorization-confirmed); "
        "otherwise it is refused with acceptance_checks_failed.",
    )
    p.add_argument("mode", choices=["exact", "prepared"], metavar="MODE", help="exact or prepared")
    p.add_argument(
        "target",
        nargs="?",
        metavar="REV|FILE",
        help="exact: the revision handoff/<id>@<n>; prepared: the prepared handoff's file",
    )
    p.add_argument(
        "--status",
        required=True,
        choices=lc.ACK_STATUSES,
        help=f"one of {_choices(lc.ACK_STATUSES)} (required)",
    )
    p.add_argument(
        "--evidence-available",
        action="store_true",
        help="check: the cited evidence is there and matches its recorded hashes",
    )
    p.add_argument(
        "--live-state-confirmed",
        action="store_true",
        help="check: the workspace's live state matches what the handoff says",
    )
    p.add_argument(
        "--capability-confirmed",
        action="store_true",
        help="check: you can do the next actions (tools, access, skills)",
    )
    p.add_argument(
        "--authorization-confirmed",
        action="store_true",
        help="check: you are allowed to carry the work on",
    )
    p.add_argument("--note", metavar="TEXT", help="a note kept with the acknowledgement")
    p.add_argument("--actor", metavar="NAME", help="who acknowledges (e.g. successor-agent)")


def _add_outcome_verb(verb: _Verbs) -> None:
    """The sub-commands outcome."""
    from ...model import vocabulary as lc  # the enums' values, without the converter

    p = verb(
        "outcome",
        "record the Task Outcome",
        verb_outcome,
        description="Record the Task Outcome: how the work ended, with the checks that "
        "ran. Cite the acknowledgement receipt so the outcome covers the revision it "
        "acknowledged.",
        epilog=f"STATUS: one of {_choices(lc.OUTCOME_STATUSES)}.\n"
        f"--check NAME=STATUS, STATUS one of {_choices(lc.CHECK_STATUSES)}.",
    )
    p.add_argument(
        "status", metavar="STATUS", choices=lc.OUTCOME_STATUSES, help=_choices(lc.OUTCOME_STATUSES)
    )
    p.add_argument("summary", metavar="SUMMARY", help="one line on how it ended")
    p.add_argument(
        "--check",
        action="append",
        metavar="NAME=STATUS",
        help=f"a check that ran, STATUS one of {_choices(lc.CHECK_STATUSES)} (repeat for more)",
    )
    p.add_argument(
        "--receipt",
        metavar="SOURCE_REF",
        help="the acknowledgement receipt this outcome follows (source/<id>, from 'handoff ack')",
    )


def _add_report_verbs(verb: _Verbs) -> None:
    """The sub-commands report and sessions."""
    from ...model import vocabulary as params  # the enums, without the converter

    p = verb(
        "report",
        "render continuity, history or one handoff as Markdown",
        verb_report,
        description="Render a view as Markdown: continuity (transfer and outcome of the "
        "head), history (every revision and record of the scope), or handoff (one "
        "revision, or a prepared handoff), or lineage (which agent session continued which, "
        "through which handoff).",
    )
    p.add_argument(
        "kind",
        choices=get_args(params.ReportKind),
        metavar="KIND",
        help="continuity, history, handoff or lineage",
    )
    p.add_argument(
        "--revision",
        metavar="REV",
        help="handoff: the revision handoff/<id>@<n> to show (default: the head)",
    )
    p.add_argument(
        "--prepared",
        dest="prepared_file",
        metavar="FILE",
        help="handoff: show this prepared handoff instead of a revision",
    )
    p.add_argument(
        "--render",
        choices=get_args(params.RenderMode),
        default="terminal",
        help="terminal (default here: Markdown read as text), preview (escaped for a "
        "Markdown renderer that renders HTML, cited files as file: links) or vscode (preview "
        "with cited files as /path#Lline links, which VS Code's Markdown preview opens)",
    )

    verb("sessions", "list this workspace's agent sessions, newest first", verb_sessions)


def _add_store_verb(verb: _Verbs) -> None:
    """The sub-commands store."""
    p = verb(
        "store",
        "check the whole store, or repair it explicitly",
        verb_store,
        description="check reads every record of the store (live file and sealed segments) "
        "and verifies digests and checksums; repair is explicit: --restore FILE puts a "
        "state file back, --fresh starts over and keeps the lost store aside; a missing or "
        "damaged segment manifest is rebuilt from the segments. For a "
        "PostgreSQL store: migrate brings the schema forward (--grant ROLE: the "
        "application role's privileges), copy --from .handoff --to postgresql://… copies "
        "the embedded store losslessly (counts and digests compared before and after), "
        "check verifies the project's records in the database.",
    )
    p.add_argument(
        "action", choices=["check", "repair", "migrate", "copy"],
        help="check, repair, migrate (PostgreSQL schema) or copy (.handoff into PostgreSQL)",
    )
    p.add_argument("--restore", metavar="FILE", help="repair: put this state file back")
    p.add_argument(
        "--fresh", action="store_true", help="repair: start over (the lost store is kept aside)"
    )
    p.add_argument("--from", dest="from_", default=".handoff", metavar="FOLDER",
                   help="copy: the embedded store to copy (default .handoff)")
    p.add_argument("--to", "--url", dest="url", metavar="URL",
                   help="migrate/copy: the postgresql:// database (default: $HANDOFF_STORE)")
    p.add_argument("--project", help="copy: the project id in the database (default: from git)")
    p.add_argument("--grant", metavar="ROLE",
                   help="migrate: grant ROLE the application's least privilege")


def _add_generate_verb(verb: _Verbs) -> None:
    """The sub-commands generate."""
    p = verb(
        "generate",
        "generate a handoff document from an agent session",
        verb_generate,
        description="Generate a /handoff document from an agent session of this workspace "
        "(pi, Claude Code or Codex): the newest one unless --session is given. The default "
        "provider is extractive (offline, no model). It prints the document and saves an "
        "editable draft; no agent session is started (edit the draft, then run 'handoff "
        "start'), unless --start.",
    )
    p.add_argument("focus", nargs="*", metavar="FOCUS", help="focus instructions for the handoff")
    p.add_argument("--session", metavar="FILE", help="the session file (default: the newest)")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "pi", "claude", "codex"],
        help="the session's format: auto, pi, claude or codex (default: auto)",
    )
    p.add_argument(
        "--provider",
        choices=["extractive", "openai", "anthropic", "command"],
        help="extractive, openai, anthropic or command (default: extractive, or command "
        "with --command)",
    )
    p.add_argument(
        "--start",
        action="store_true",
        help="also start the next session from the unedited document (one step, for "
        "scripts; otherwise edit the draft and run 'handoff start')",
    )
    p.add_argument("--no-start", action="store_true", help=argparse.SUPPRESS)  # the old default
    p.add_argument("--base-url", metavar="URL", help="openai/anthropic: the API base URL")
    p.add_argument("--model", metavar="NAME", help="openai/anthropic: the model name")
    p.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="openai/anthropic: the environment variable holding the API key (never stored)",
    )
    p.add_argument(
        "--max-tokens", type=int, metavar="N", help="anthropic: max_tokens of the answer"
    )
    p.add_argument(
        "--command",
        metavar="'PROGRAM ARGS'",
        help="command: the program that reads the prompt on stdin and prints the document",
    )
    p.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="the provider's timeout in seconds"
    )
    p.add_argument(
        "--max-prompt-tokens", type=int, metavar="N", help="the prompt's token budget"
    )


def _add_start_and_schema_verbs(verb: _Verbs) -> None:
    """The sub-commands start and schema."""
    sub, common = verb.sub, verb.common
    p = verb(
        "start",
        "start the next agent session from the edited draft (default: the newest), a "
        "prepared handoff or a committed revision",
        verb_start,
        description="Start the next agent session from the handoff you approved: the "
        "draft as you edited it (default: the newest generation's draft under "
        ".handoff/drafts/), a prepared handoff, or a committed revision. For pi a new "
        "session file is written; for every agent the command that starts it is printed.",
    )
    p.add_argument(
        "--agent",
        choices=["pi", "omp", "claude", "codex"],
        help="pi, omp, claude or codex (default: the agent of the session handed off from)",
    )
    p.add_argument(
        "--draft", metavar="FILE", help="a Markdown handoff (default: the newest draft)"
    )
    p.add_argument(
        "--prepared", dest="prepared_file", metavar="FILE", help="a prepared handoff JSON file"
    )
    p.add_argument("--revision", metavar="REF", help="a committed revision, handoff/<id>@<n>")
    p.add_argument(
        "--parent-session",
        metavar="FILE",
        help="the session handed off from (default: the source of the newest generation)",
    )

    sub.add_parser(
        "schema",
        parents=[common],
        help="print the commands' JSON Schema (params, result, flags, enums)",
        description="Print every command of the registry as JSON: its params and result "
        "schema, whether it mutates, its progress and cancel flags, and the contract's enums. "
        "The editors' command lists are tested against it.",
    )


def _add_mcp_verb(verb: _Verbs) -> None:
    """The sub-commands mcp."""
    sub, common = verb.sub, verb.common
    p = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve the commands to coding agents over MCP",
        description="Serve the handoff commands to coding agents as a Model Context Protocol "
        "server: tools for the lifecycle, the reports as resources, two prompts. Stdio by "
        "default; Streamable HTTP on loopback with --http. See docs/mcp.md.",
    )
    p.add_argument(
        "--http",
        nargs="?",
        type=int,
        const=8765,
        metavar="PORT",
        help="serve Streamable HTTP on loopback (default port 8765) instead of stdio",
    )
    p.add_argument("--host", default="127.0.0.1", help="with --http: the loopback address")
    p.add_argument(
        "--settings",
        metavar="JSON|FILE",
        help="the 'handoff' settings section (as the language server's; e.g. generation)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="debug, info, warning or error (logs go to stderr; default: info)",
    )


def _parse(argv: list[str] | None) -> tuple[argparse.ArgumentParser | None, Any]:
    """The parser (``None`` when a plain call line did not need it) and the arguments."""
    words = sys.argv[1:] if argv is None else argv
    args = parse_call_line(words)
    if args is not None:
        return None, args
    parser = build_parser(verbs=words[:1] != ["call"])
    from .complete import Spelling, check_extra, check_verb

    try:
        check_verb(parser, words)  # "did you mean" for a mistyped verb
        args, extra = parser.parse_known_args(argv)
        # argparse cannot take a positional after options (call CMD --workspace W JSON).
        if extra and getattr(args, "verb", None) == "call" and args.params is None and len(extra) == 1:
            args.params, extra = extra[0], []
        if extra:
            check_extra(parser, getattr(args, "verb", None), extra)
    except Spelling as exc:  # a usage error, as argparse's own: exit 2
        print(f"handoff: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    return parser, args


def _missing_mcp() -> str | None:
    """The module of the 'mcp' extra that cannot be found, or ``None``."""
    from importlib.util import find_spec

    for module in ("mcp", "mcp_types"):
        try:
            if find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def run_line(argv: list[str] | None = None) -> int:
    """Parse a command line with the parser and run its verb (the exit status)."""
    from .complete import SCRIPTS, Spelling, help_of

    try:
        parser, args = _parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    _say_library_warnings()
    try:
        if args.verb in ("help", "completion"):
            assert parser is not None
            try:
                text = help_of(parser, args.topic) if args.verb == "help" else SCRIPTS[args.shell](parser)
            except Spelling as exc:
                raise UsageError(str(exc)) from None
            sys.stdout.write(text)
            return EXIT_OK
        if args.verb is None:
            assert parser is not None
            parser.print_help()
            return EXIT_USAGE
        if args.verb == "call":
            return run_call(args)
        if args.verb == "demo":
            from ..demo import run_demo

            return run_demo(args)
        if args.verb == "schema":
            from ...commands.schema import command_schema

            print(dump(command_schema()))
            return EXIT_OK
        if args.verb == "mcp":
            missing = _missing_mcp()
            if missing is not None:
                print(
                    f"handoff: the MCP server needs the 'mcp' extra, which is not installed "
                    f"({missing} is missing): pip install 'handoff-lsp[mcp]' "
                    "(or uv tool install 'handoff-lsp[mcp]').",
                    file=sys.stderr,
                )
                return EXIT_REFUSED
            from ..mcp.server import run as run_mcp

            return run_mcp(args)
        svc = make_service(args)
        try:
            result = args.fn(args, svc)
        except HandoffError as exc:
            if args.json:
                print(
                    dump(
                        {
                            "error": {
                                "code": exc.code,
                                "message": exc.message,
                                "data": exc.to_json()["data"],
                            }
                        }
                    )
                )
            else:
                print(f"handoff: {exc.code}: {exc.message}", file=sys.stderr)
            say_store_created(svc)
            return EXIT_REFUSED
        say_store_created(svc)
        print(dump(result) if args.json else _human(args.verb, result, args))
        if not args.json and svc.scope_defaulted and args.verb != "status":
            scope, why = svc.scope_defaulted
            print(f"handoff: scope {scope} ({why}; --scope S for another)", file=sys.stderr)
        if args.verb in ("store", "doctor") and not result.get("check", result)["ok"]:
            return EXIT_REFUSED
        return EXIT_OK
    except UsageError as exc:
        print(f"handoff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
