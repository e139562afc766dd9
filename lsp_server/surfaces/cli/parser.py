"""The ``handoff`` argument parser: the global options and every verb's sub-command with
its options and help (the verbs' functions are ``verbcalls.py``)."""

from __future__ import annotations

import argparse
import functools
from typing import Any, get_args

from ... import __version__
from ...commands import REGISTRY
from ...generation.agents import AGENT_NAMES, FORMATS, formats_said
from .verbcalls import (
    verb_ack,
    verb_check,
    verb_commit,
    verb_continue,
    verb_contract,
    verb_current,
    verb_generate,
    verb_outcome,
    verb_prepare,
    verb_report,
    verb_scopes,
    verb_sessions,
    verb_start,
    verb_status,
    verb_store,
    verb_work,
)

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
                    out.append(
                        textwrap.fill(
                            " ".join(para.split()),
                            width,
                            initial_indent=indent,
                            subsequent_indent=indent,
                        )
                    )
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
        'the result on stdout; 1 with {"error": {"code", "message", "data", '
        '"jsonrpcCode"}} on stdout; 2 on a usage error (on stderr).',
        epilog=f'commands:\n{call_list}\n\nThe scope is the params\' "scope", else '
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
    p.add_argument(
        "--objective", required=True, metavar="TEXT", help="what the work is for (required)"
    )
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
        ':: client/pets_client.py\' \\\n      --next "run contract tests :: $CONTRACT"',
    )
    p.add_argument(
        "--state",
        required=True,
        metavar="FACT",
        help="where the work stands: 'TEXT :: CITE[, CITE…]'",
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
        "through which handoff), or source (one record, --source source/<id>).",
    )
    p.add_argument(
        "kind",
        choices=get_args(params.ReportKind),
        metavar="KIND",
        help="continuity, history, handoff, lineage or source",
    )
    p.add_argument(
        "--source",
        metavar="REF",
        help="source: the record source/<id> to show (a citation, a receipt)",
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
        "with cited files as /path?lines=A-B#LA links, which VS Code's Markdown preview "
        "opens)",
    )

    verb("sessions", "list this workspace's agent sessions, newest first", verb_sessions)

    p = verb(
        "check",
        "check a handoff document's claims against its session and the workspace",
        verb_check,
        description="Check every checkable claim of a handoff document (files and what was "
        "done to them, commands and their stated outcome, test counts, commits, pushes, the "
        "session's final state) against the session it came from and the live workspace, "
        "and say what it dropped of the session's facts (the user's constraints, the last "
        "test, the blocker, changed files). One line per finding: FILE:LINE: severity "
        "code: what the evidence shows. Exit 0 when nothing is contradicted or dropped, "
        "1 otherwise (2: usage). A saved draft (.handoff/drafts/*.md) knows its session.",
    )
    p.add_argument("file", metavar="FILE", help="the handoff document (Markdown)")
    p.add_argument(
        "--session",
        metavar="FILE",
        help="the agent session it came from (default: a draft's own; else the workspace alone)",
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help="write each finding's fix into FILE (drop a contradicted line, put the session's "
        "last result in place of a stated one, restore what was dropped), then check again",
    )


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
        "action",
        choices=["check", "repair", "migrate", "copy"],
        help="check, repair, migrate (PostgreSQL schema) or copy (.handoff into PostgreSQL)",
    )
    p.add_argument("--restore", metavar="FILE", help="repair: put this state file back")
    p.add_argument(
        "--fresh", action="store_true", help="repair: start over (the lost store is kept aside)"
    )
    p.add_argument(
        "--from",
        dest="from_",
        default=".handoff",
        metavar="FOLDER",
        help="copy: the embedded store to copy (default .handoff)",
    )
    p.add_argument(
        "--to",
        "--url",
        dest="url",
        metavar="URL",
        help="migrate/copy: the postgresql:// database (default: $HANDOFF_STORE)",
    )
    p.add_argument("--project", help="copy: the project id in the database (default: from git)")
    p.add_argument(
        "--grant", metavar="ROLE", help="migrate: grant ROLE the application's least privilege"
    )


def _add_generate_verb(verb: _Verbs) -> None:
    """The sub-commands generate."""
    p = verb(
        "generate",
        "generate a handoff document from an agent session",
        verb_generate,
        description="Generate a /handoff document from an agent session of this workspace "
        f"({formats_said()}): the newest one unless --session is given. The default "
        "provider is extractive (offline, no model). It prints the document and saves an "
        "editable draft; no agent session is started (edit the draft, then run 'handoff "
        "start'), unless --start.",
    )
    p.add_argument("focus", nargs="*", metavar="FOCUS", help="focus instructions for the handoff")
    p.add_argument("--session", metavar="FILE", help="the session file (default: the newest)")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", *FORMATS],
        help=f"the session's format: {_choices(['auto', *FORMATS])} (default: auto)",
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
    p.add_argument("--max-prompt-tokens", type=int, metavar="N", help="the prompt's token budget")


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
        choices=list(AGENT_NAMES),
        help=f"{_choices(AGENT_NAMES)} (default: the agent of the session handed off from)",
    )
    p.add_argument("--draft", metavar="FILE", help="a Markdown handoff (default: the newest draft)")
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
