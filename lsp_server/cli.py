"""The ``handoff`` command line: ``handoff call`` speaks the command contract as JSON;
the other verbs are friendlier spellings of the same service calls for people."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from . import __version__
from .errors import HandoffError
from .service import HandoffService, ServiceConfig

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line usage (exit 2)."""


def _dump(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _read_json_file(path: str) -> Any:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None


def _citation(spec: str) -> dict[str, Any]:
    spec = spec.strip()
    if spec.startswith("source/"):
        return {"kind": "source", "ref": spec}
    return {"kind": "artifact", "path": spec}


def _fact(spec: str) -> dict[str, Any]:
    """``"text :: cite, cite"`` → a Fact; a cite is ``source/<id>`` or a workspace path."""
    text, sep, cites = spec.partition("::")
    if not sep or not cites.strip():
        raise UsageError(f"{spec!r} needs its evidence: write 'text :: path/or/source-ref[, more]'")
    return {
        "text": text.strip(),
        "citations": [_citation(c) for c in cites.split(",") if c.strip()],
    }


def _with_scope(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if getattr(args, "scope", None):
        params.setdefault("scope", args.scope)
    return params


def _prepared_arg(args: argparse.Namespace) -> dict[str, Any]:
    value = _read_json_file(args.prepared_file)
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


def verb_work(args, svc):
    return svc.call(
        "handoff.recordWork",
        _with_scope(
            args,
            {
                "state": _fact(args.state),
                "disposition": args.disposition,
                "nextActions": [_fact(n) for n in args.next or []],
            },
        ),
    )


def verb_prepare(args, svc):
    draft = _read_json_file(args.draft_file)
    if isinstance(draft, dict) and "draft" in draft:
        draft = draft["draft"]
    return svc.call("handoff.prepare", _with_scope(args, {"draft": draft}))


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


def verb_continue(args, svc):
    return svc.call("handoff.continue", _target_params(args))


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
    params: dict[str, Any] = {"kind": args.kind}
    if args.revision:
        params["revision"] = args.revision
    if args.prepared_file:
        params["prepared"] = _prepared_arg(args)
    return svc.call("handoff.report", _with_scope(args, params))


def verb_sessions(args, svc):
    return svc.call("handoff.sessions", {})


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


def verb_generate(args, svc):
    params: dict[str, Any] = {"format": args.format}
    if args.session:
        params["session"] = args.session
    if args.focus:
        params["focus"] = " ".join(args.focus)
    if args.no_start:
        params["startSession"] = False
    svc.config.generation = _generation_settings(args, svc.config.generation or {})
    return svc.call("handoff.generate", _with_scope(args, params))


# -- human output ------------------------------------------------------------


def _human_sessions(result: dict[str, Any]) -> str:
    sessions = result["sessions"]
    if not sessions:
        return (
            "No agent sessions recorded for this workspace (looked in "
            + ", ".join(result.get("searched", []))
            + ")."
        )
    lines = []
    for s in sessions:
        title = " ".join((s.get("title") or "(untitled)").split())
        title = title if len(title) <= 70 else title[:69] + "…"
        lines.append(
            f"{s['updatedAt'] or '?':<24}  {s.get('agent', s['format']):<6} "
            f"{s['messageCount']:>5} msgs  {title}\n    {s['path']}"
        )
    return "\n".join(lines)


def _human_generate(result: dict[str, Any]) -> str:
    lines = [result["document"].rstrip(), "", "---"]
    src = result["sourceSession"]
    lines.append(f"from {src['format']} session {src['path']} ({result['provider']})")
    if result["missingSections"]:
        lines.append("missing sections: " + ", ".join(result["missingSections"]))
    lines.append(f"saved: {result['documentPath']}")
    if result.get("newSession"):
        lines.append(f"new session: {result['newSession']['path']}")
    if result.get("continueCommand"):
        lines.append(f"continue with: {result['continueCommand']}")
    for w in result.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def _human(verb: str, result: dict[str, Any], args) -> str:
    if verb == "report":
        for warning in result.get("warnings", []):
            print(f"handoff: warning: {warning}", file=sys.stderr)
        return result["markdown"].rstrip("\n")
    if verb == "sessions":
        return _human_sessions(result)
    if verb == "generate":
        return _human_generate(result)
    if verb in ("current", "prepare") and getattr(args, "out", None):
        Path(args.out).write_bytes(orjson.dumps(result["prepared"], option=orjson.OPT_INDENT_2))
        return f"Prepared handoff for {result['scope']} written to {args.out} (digest {result['prepared']['digest']})."
    if verb == "continue":
        if not result["found"]:
            return f"No committed revision in {result['scope']} yet (latest is empty)."
        lines = [
            f"{result['trust']}: {result['mode']} selected={result['selected']} current={result['current']}",
            f"objective: {result['content']['objective']}",
            f"state ({result['content']['disposition']}): {result['content']['state']['text']}",
        ]
        lines += [f"next: {a['text']}" for a in result["content"]["nextActions"]]
        lines += [
            f"unreadable: {u['reason']} {u['citation'].get('path') or u['citation'].get('ref')}"
            for u in result["unreadableEvidence"]
        ]
        return "\n".join(lines)
    if verb == "store":
        return _human_store(result)
    if verb == "commit":
        how = "already committed as" if result["idempotent"] else "committed"
        return f"{how} {result['revision']}"
    if verb == "ack":
        return f"{result['status']} {result['target']} (receipt {result['receipt']})"
    if "source" in result:
        return f"recorded {result['source']} in {result['scope']}"
    return _dump(result)


def verb_store(args, svc):
    from .storecheck import check_store, repair_store

    if args.action == "check":
        return check_store(svc.store)
    return repair_store(svc.store, restore=args.restore, fresh=args.fresh)


def _human_store(result: dict[str, Any]) -> str:
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


def build_parser() -> argparse.ArgumentParser:
    def globals_(p: argparse.ArgumentParser, top: bool) -> None:
        d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
        p.add_argument("--workspace", "-w", default=d("."), help="workspace folder (default: .)")
        p.add_argument(
            "--scope", "-s", default=d(None), help="scope (default: git branch, else 'default')"
        )
        p.add_argument("--state-folder", default=d(".handoff"), help=argparse.SUPPRESS)

    common = argparse.ArgumentParser(add_help=False)
    globals_(common, top=False)
    parser = argparse.ArgumentParser(
        prog="handoff",
        description="Versioned, checked handoffs of coding-agent work.",
    )
    globals_(parser, top=True)
    parser.add_argument("--version", action="version", version=f"handoff {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    p = sub.add_parser("call", parents=[common], help="run one contract command; JSON in, JSON out")
    p.add_argument("command", help="e.g. handoff.commit")
    p.add_argument("params", nargs="?", help="the params object as JSON")
    p.add_argument("--params-file", help="read the params JSON from a file ('-' for stdin)")

    p = sub.add_parser("demo", parents=[common], help="run the OpenAPI walkthrough end to end")
    p.add_argument("--keep", action="store_true", help="keep the scratch workspace")

    def verb(name, help_, fn):
        sp = sub.add_parser(name, parents=[common], help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print the raw JSON result")
        sp.set_defaults(fn=fn)
        return sp

    p = verb("contract", "record a Work Contract", verb_contract)
    p.add_argument("--objective", required=True)
    p.add_argument("--in-scope", action="append", metavar="ITEM")
    p.add_argument("--out-of-scope", action="append", metavar="ITEM")
    p.add_argument("--acceptance", action="append", metavar="CRITERION")

    p = verb("work", "record the work state ('text :: evidence' facts)", verb_work)
    p.add_argument("--state", required=True, metavar="'TEXT :: CITE[,CITE]'")
    p.add_argument(
        "--disposition", default="continuable", choices=["continuable", "blocked", "done"]
    )
    p.add_argument("--next", action="append", metavar="'TEXT :: CITE[,CITE]'")

    p = verb("prepare", "prepare a handoff from a draft JSON file (writes nothing)", verb_prepare)
    p.add_argument("draft_file")
    p.add_argument("--out", help="save the prepared handoff to this file")

    p = verb("current", "hand off current work: boundary Source + prepared handoff", verb_current)
    p.add_argument("--document", help="a Markdown handoff document to include")
    p.add_argument("--out", help="save the prepared handoff to this file")

    p = verb("commit", "commit a prepared handoff as the next revision", verb_commit)
    p.add_argument("prepared_file")

    p = verb("continue", "continue from prepared FILE, exact REV, or latest", verb_continue)
    p.add_argument("mode", choices=["prepared", "exact", "latest"])
    p.add_argument("target", nargs="?")

    p = verb("ack", "acknowledge an exact target (prepared FILE or exact REV)", verb_ack)
    p.add_argument("mode", choices=["prepared", "exact", "latest"])
    p.add_argument("target", nargs="?")
    p.add_argument("--status", required=True)
    p.add_argument("--evidence-available", action="store_true")
    p.add_argument("--live-state-confirmed", action="store_true")
    p.add_argument("--capability-confirmed", action="store_true")
    p.add_argument("--authorization-confirmed", action="store_true")
    p.add_argument("--note")
    p.add_argument("--actor")

    p = verb("outcome", "record the Task Outcome", verb_outcome)
    p.add_argument("status")
    p.add_argument("summary")
    p.add_argument("--check", action="append", metavar="NAME=STATUS")
    p.add_argument("--receipt", help="the acknowledgement receipt SourceRef")

    p = verb("report", "render continuity, history or one handoff as Markdown", verb_report)
    p.add_argument("kind", choices=["continuity", "history", "handoff"])
    p.add_argument("--revision")
    p.add_argument("--prepared", dest="prepared_file")

    verb("sessions", "list this workspace's agent sessions, newest first", verb_sessions)

    p = verb("store", "check the whole store, or repair it explicitly", verb_store)
    p.add_argument("action", choices=["check", "repair"])
    p.add_argument("--restore", metavar="FILE", help="repair: put this state file back")
    p.add_argument(
        "--fresh", action="store_true", help="repair: start over (the lost store is kept aside)"
    )

    p = verb("generate", "generate a handoff document from an agent session", verb_generate)
    p.add_argument("focus", nargs="*", help="focus instructions for the handoff")
    p.add_argument("--session", metavar="FILE", help="the session file (default: the newest)")
    p.add_argument("--format", default="auto", choices=["auto", "pi", "claude", "codex"])
    p.add_argument(
        "--provider",
        choices=["extractive", "openai", "anthropic", "command"],
        help="default: extractive",
    )
    p.add_argument("--no-start", action="store_true", help="do not start a new agent session")
    p.add_argument("--base-url", help="openai/anthropic: the API base URL")
    p.add_argument("--model", help="openai/anthropic: the model name")
    p.add_argument(
        "--api-key-env", metavar="NAME", help="the environment variable holding the API key"
    )
    p.add_argument("--max-tokens", type=int, help="anthropic: max_tokens of the answer")
    p.add_argument("--command", metavar="'PROGRAM ARGS'", help="command: the program to run")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="provider timeout")
    p.add_argument("--max-prompt-tokens", type=int, help="the prompt's token budget")
    return parser


def make_service(args) -> HandoffService:
    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"workspace {args.workspace} is not a folder")
    return HandoffService(
        workspace, ServiceConfig(scope=args.scope, state_folder=args.state_folder)
    )


def run_call(args) -> int:
    if args.params is not None and args.params_file is not None:
        raise UsageError("give the params as JSON or with --params-file, not both")
    if args.params_file is not None:
        params = _read_json_file(args.params_file)
    elif args.params is not None:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the params are not JSON: {exc}") from None
    else:
        params = {}
    svc = make_service(args)
    if args.command not in svc.COMMANDS:
        raise UsageError(
            f"unknown command {args.command!r}; known: {', '.join(sorted(svc.COMMANDS))}"
        )
    try:
        result = svc.call(args.command, params)
    except HandoffError as exc:
        err = exc.to_json()
        print(
            _dump(
                {
                    "error": {
                        "code": exc.code,
                        "message": exc.message,
                        "data": err["data"],
                        "jsonrpcCode": err["code"],
                    }
                }
            )
        )
        return EXIT_REFUSED
    print(_dump(result))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse cannot take a positional after options (call CMD --workspace W JSON).
        if extra and getattr(args, "verb", None) == "call" and args.params is None and len(extra) == 1:
            args.params, extra = extra[0], []
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if args.verb is None:
            parser.print_help()
            return EXIT_USAGE
        if args.verb == "call":
            return run_call(args)
        if args.verb == "demo":
            from .demo import run_demo

            return run_demo(args)
        svc = make_service(args)
        try:
            result = args.fn(args, svc)
        except HandoffError as exc:
            if args.json:
                print(
                    _dump(
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
            return EXIT_REFUSED
        print(_dump(result) if args.json else _human(args.verb, result, args))
        if args.verb == "store" and not result.get("check", result)["ok"]:
            return EXIT_REFUSED
        return EXIT_OK
    except UsageError as exc:
        print(f"handoff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
