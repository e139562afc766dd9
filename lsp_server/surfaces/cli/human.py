"""The human output of the ``handoff`` verbs: a result as sentences, and the warnings
said once on stderr."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from .callline import dump, orjson

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
    for d in result.get("claims", []):
        warn(f"the handed-over text, line {d['line']}: {d['code']}: {d['message']}")
    lines = []
    if result.get("newSession"):
        lines.append(f"new {result['agent']} session: {result['newSession']['path']}")
    lines.append(f"handed over: {result['documentPath']}")
    if result.get("transfer"):
        lines.append(result["transfer"]["said"])
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
    if verb == "check":
        return _human_check(result)
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


def _human_check(result: dict[str, Any]) -> str:
    """One line per finding (``FILE:LINE: severity code: message``), the notes, a count."""
    lines = [f"note: {n}" for n in result["notes"]]
    doc = result["document"]
    if result.get("fixed"):
        lines.append(f"fixed {len(result['fixed'])} finding(s) in {doc}: {'; '.join(result['fixed'])}")
    for d in result["diagnostics"]:
        lines.append(f"{doc}:{d['line']}: {d['severity']} {d['code']}: {d['message']}")
    c = result["counts"]
    lines.append(
        f"{c['supported']} supported · {c['contradicted']} contradicted · {c['stale']} stale "
        f"· {c['dropped']} dropped · {c['unverifiable']} unverifiable"
    )
    return "\n".join(lines)


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
