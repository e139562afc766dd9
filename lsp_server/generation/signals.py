"""The signals a transcript's text gives: tool names by kind, the shapes of test counts,
commits, pushes, errors and success, and the small tests that read them."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

from ..support.redaction import redact
from . import shell
from .transcript import Message

# -- what tools did --------------------------------------------------------------

WRITE_TOOLS = {
    "write": "created",
    "create_file": "created",
    "write_file": "created",
    "edit": "edited",
    "multiedit": "edited",
    "multi_edit": "edited",
    "str_replace_editor": "edited",
    "str_replace_based_edit_tool": "edited",
    "notebookedit": "edited",
    "notebook_edit": "edited",
    "edit_file": "edited",
    "replace": "edited",
    "apply_patch": "edited",
    "patch": "edited",
}
READ_TOOLS = frozenset(
    {
        "read",
        "view",
        "read_file",
        "cat",
        "open",
        "glob",
        "grep",
        "ls",
        "search",
        "find",
        "list",
        "websearch",
        "webfetch",
        "web_search",
        "fetch",
        "toolsearch",
        # Gemini CLI's
        "list_directory",
        "read_many_files",
        "grep_search",
        "search_file_content",
        "web_fetch",
        "google_web_search",
    }
)
TODO_TOOLS = frozenset(
    {
        "todowrite",
        "todo_write",
        "write_todos",
        "update_plan",
        "todo",
        "todos",
        "todo_update",
        "plan",
    }
)
#: The harness's own tools (sub-agents, skills, plan mode, questions to the user,
#: background shells): not tools of the work.
HARNESS_TOOLS = frozenset(
    {
        "task", "agent", "taskcreate", "taskupdate", "tasklist", "taskoutput", "taskget",
        "sendmessage", "skill", "exitplanmode", "enterplanmode", "askuserquestion", "ask",
        "killshell", "bashoutput", "todoread", "write_stdin", "view_image",
        # Gemini CLI's
        "update_topic", "enter_plan_mode", "exit_plan_mode", "invoke_agent", "activate_skill",
        "save_memory", "list_background_processes", "read_background_output", "cli_help",
        "codebase_investigator", "generalist",
    }
)  # fmt: skip
DONE = frozenset({"completed", "complete", "done", "finished", "closed", "resolved"})
ACTIVE = frozenset({"in_progress", "in-progress", "active", "doing", "started", "running"})
#: The tool's own state folder: never the user's change.
STATE_FOLDER = ".handoff"

_TEST_COUNTS = (
    re.compile(
        r"(?:\d+ doctests?, )?\d+ (?:tests?|properties), \d+ failures?(?:, \d+ (?:skipped|excluded|invalid))*",
        re.I,
    ),
    re.compile(
        r"(?:=+ )?(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+(?: in [\d.]+s)?",
        re.I,
    ),
    re.compile(r"Tests?:\s+(?:\d+ \w+, )*\d+ total", re.I),
    re.compile(r"Tests?\s+\d+ (?:passed|failed)(?: \| \d+ \w+)* \(\d+\)", re.I),
    re.compile(r"test result: (?:ok|FAILED)\. \d+ passed; \d+ failed[^\n]*", re.I),
    re.compile(r"Ran \d+ tests? in [\d.]+s", re.I),
    re.compile(r"^(?:OK|FAILED)(?: \([^)]*\))?$", re.M),
)
FAIL_COUNT = re.compile(r"\b([1-9]\d*) (?:failed|failures?|errors?)\b|\bFAILED\b|\bFAIL\b", re.I)
ZERO_FAIL = re.compile(r"\b0 failures?\b|\b0 failed\b", re.I)
COMMIT = re.compile(r"^\[([\w./+-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
PUSHED = re.compile(
    r"^\s*(?:\*\s\[new (?:branch|tag)\]|\+?\s*[0-9a-f]{7,}\.\.\.?[0-9a-f]{7,})\s+(\S+)\s+->\s+(\S+)",
    re.M,
)
DIFFSTAT = re.compile(r"^ (\S+?)\s+\|\s+(?:\d+ [+-]*|Bin )", re.M)
_READERS = frozenset(
    {"cat", "head", "tail", "sed", "get-content", "less", "bat", "nl", "more", "type"}
)
ENV_TAG = re.compile(r"<(shell|cwd|current_date|timezone)>([^<]{1,200})</\1>")
LOG_LINE = re.compile(r"^[*|/\\ .-]*(?:commit )?([0-9a-f]{7,40})\b\s*(?:\([^)]*\)\s*)?(.*)$", re.M)
REJECTED = re.compile(
    r"The user doesn't want to proceed with this tool use|tool use was rejected|"
    r"\[Request interrupted by user|User rejected|user denied|The user declined",
    re.IGNORECASE,
)
GH_NUMBER = re.compile(
    r"\b(?:gh|glab) (?:pr|issue|mr) (?:merge|close|view|edit|comment|reopen|review|checkout|ready) #?(\d+)\b"
)
#: Short replies that carry no task of their own ("continue", "yes please", "계속진행").
ACK = re.compile(
    r"^(?:yes|yep|yeah|ok|okay|sure|continue|go on|go ahead|proceed|do it|please do|yes please|"
    r"sounds good|lgtm|thanks?|thank you|good|great|nice|perfect|wow|cool|next|keep going|"
    r"계속\w*|진행\w*|응\w*|네|ㅇㅇ|좋아\w*|はい|続けて\w*|继续|好的?)[\s.!?,~]*(?:please)?[\s.!?]*$",
    re.IGNORECASE,
)
URL = re.compile(r"https?://[^\s)\]>\"'`]+")
#: The step keys of forge operations (pull requests, issues, releases).
FORGE_KEYS = ("gh pr", "gh issue", "gh repo", "gh release", "glab mr")
#: The git steps whose output tells an event (a commit, a push, a pull, a merge).
GIT_EVENT_KEYS = ("git commit", "git push", "git pull", "git merge")
GH_URL = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:pull|issues)/\d+")
_FAILURE_MARK = re.compile(
    r"(?:^|\s)(?:error(?:\[\w+\])?:|ERR!|Error:|FAILED|FAIL\b|fatal:|Traceback \(most recent call last\)|"
    r"failed to compile|Build failed|exited with code [1-9]|\d+ errors?\b(?! in)|✗|✘|"
    r"exit (?:code|status):? [1-9]|error TS\d+|Found [1-9]\d* errors?)",
)
#: A verdict of success a build, compile or type check prints (read when a filter hid
#: the step's own status: ``npm run build | grep -i built``).
_SUCCESS_MARK = re.compile(
    r"\b(?:build (?:complete|completed|succeeded|successful|finished)|compiled successfully|"
    r"successfully (?:built|compiled)|built in [\d.]+ ?m?s|BUILD SUCCESSFUL|"
    r"Finished [`'\"]?(?:dev|release|test)|Found 0 errors|no (?:type )?errors? found|"
    r"All checks passed|exit (?:code|status):? 0\b)",
    re.IGNORECASE,
)
#: Words one of which every match of ``_FAILURE_MARK`` contains: most outputs have none,
#: and looking for them is far cheaper than the pattern's search at every position.
_FAILURE_WORDS = (
    "error", "ERR!", "Error:", "FAIL", "fatal:", "Traceback", "failed", "exited with code",
    "✗", "✘", "exit code", "exit status", "Found ",
)  # fmt: skip


def success_marked(text: str) -> bool:
    """Whether ``text`` carries a success verdict (``Build complete``, ``Found 0 errors``)
    and no failure mark."""
    return success_verdict(text) and not failure_marked(text)


def success_verdict(text: str) -> bool:
    """A success verdict in the last lines of ``text`` (where tools print it)."""
    end = text[-1000:]
    return any(w in end for w in _SUCCESS_WORDS) and bool(_SUCCESS_MARK.search(end))


#: Words one of which every match of ``_SUCCESS_MARK`` contains (a cheap look first).
_SUCCESS_WORDS = ("uild", "UILD", "ompiled", "uilt", "inished", " 0 ", "rror", "passed", "xit")


def failure_marked(text: str) -> bool:
    """Whether ``text`` shows a failure (an ``error:`` line, ``FAILED``, a traceback…)."""
    return any(word in text for word in _FAILURE_WORDS) and bool(_FAILURE_MARK.search(text))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_TAG_WRAPPER = re.compile(r"</?(?:tool_use_error|error|stderr|stdout|output)>")
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|not found|cannot|can't|denied|fatal|panic|no such|refused|"
    r"invalid|unable|failed|failure|not recognized|timed out|missing)",
    re.IGNORECASE,
)
#: A line that states an error with its message ("error TS2304: …", "fatal: …").
_ERROR_MESSAGE = re.compile(
    r"\b(?:error|fatal|panic|exception|traceback|failed|failure)\b[^:\n]{0,40}:\s*\S|\b\w*(?:Error|Exception)\b:",
    re.IGNORECASE,
)
#: An agent's own tool whose name says it changes something (``create_para_doc``,
#: ``commit_changes``, ``update_issue``): followed in any part of the session, and work.
MUTATING_TOOL = re.compile(
    r"(?:^|[_.:-])(?:create|write|add|insert|update|delete|remove|rename|move|commit|push|"
    r"publish|deploy|apply|save|upload|edit|patch|replace|append|merge|release|set)"
    r"(?:$|[_.:-]|s\b|d\b)|^batch_create",
)
SHA = re.compile(r"\b[0-9a-f]{7,40}\b")
CREATED_WORD = re.compile(r"\b(?:Created|Wrote|Saved|Added|Written)\b")
#: A file a tool's result says it created, wrote, updated or deleted.
TOOL_FILES = re.compile(
    r"\b(Created|Wrote|Written|Saved|Updated|Modified|Edited|Deleted|Removed|Added)"
    r"(?: (?:file|note|document))?:?\s+`?((?:[A-Za-z]:)?[\w./~\\-]+\.\w{1,8})\b"
)
BULLET_FILE = re.compile(
    r"^\s*[•*-]\s+`?((?:[\w~.-]+/)*[\w.-]+\.(?:md|txt|json|ya?ml|py|ts|js|html|css|toml))\b", re.M
)
_PATH_WORD = re.compile(r"^(?:[A-Za-z]:)?[\w@~.+/\\-]+$")
_ERROR_TALLY = re.compile(r"^(?:Found )?\d+ (?:errors?|problems?)\b", re.I)
_EXIT_NOTE = re.compile(
    r"^(command exited with code|exit code:?|process exited with|exit status)", re.I
)
DONE_CUE = re.compile(
    r"\b(?:all (?:done|set|green|tests pass\w*)|everything (?:is )?(?:done|clean|pushed|committed|works)|"
    r"(?:is|are|have been|has been|now) (?:done|complete|completed|finished|merged|pushed|deployed|live|fixed)|"
    r"successfully|completed?\b|finished|merged|pushed|done[.!]|완료|했습니다|しました|完了)",
    re.IGNORECASE,
)


_TAG = re.compile(r"</?[a-zA-Z][\w-]*(?:\s[^<>]*)?>")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{80,}={0,2}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
BAD_PATH = re.compile(r"[*?$`{}|\"'<>\n]")


def is_noise(line: str) -> bool:
    """Minified code, markup, base64 or binary: nothing a successor can read."""
    s = line.strip()
    if not s:
        return True
    if len(s) > 400 and s.count(" ") < len(s) / 25:
        return True  # minified code or one huge token
    if "<" in s and len(_TAG.findall(s)) >= 3:
        return True  # HTML or XML
    if len(s) >= 80 and _BASE64.search(s):
        return True  # base64
    return len(_CONTROL.findall(s)) > 2


def readable(text: str) -> str:
    """``text`` without ANSI escapes and tool-error wrappers."""
    return _TAG_WRAPPER.sub("", _ANSI.sub("", text))


def error_line(text: str) -> str | None:
    """The most telling readable line of a failed result."""
    lines = [
        ln.strip()
        for ln in readable(text).splitlines()
        if ln.strip() and not _EXIT_NOTE.match(ln.strip()) and not is_noise(ln)
    ]
    for pattern in (_ERROR_MESSAGE, _ERROR_LINE):
        found = [ln for ln in reversed(lines) if pattern.search(ln) and len(ln) >= 6]
        # A tool's own tally ("Found 2 errors in …") names no error: the line it counts does.
        telling = [ln for ln in found if not _ERROR_TALLY.match(ln)]
        if found:
            return one_line((telling or found)[0], 220)
    return one_line(lines[-1], 220) if lines else None


def one_line(text: str, limit: int = 240) -> str:
    """``text`` on one line, cut to ``limit`` characters; a text that is cut has its
    secrets replaced first (a key cut in half is no longer recognised, and its head
    would be kept)."""
    s = " ".join(text.split())
    if len(s) <= limit:
        return s
    s = redact(s)[0]
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


_DEFINITION = re.compile(
    r"^[+\s]*(?:export\s+(?:default\s+)?)?(?:pub(?:\(\w+\))?\s+)?(?:async\s+)?"
    r"(?:def|defp|defmodule|class|function\*?|fn|func|interface|struct|enum|trait|module|computer)\s+"
    r"([A-Za-z_][\w.]*[!?]?)"
    r"|^[+\s]*(?:export\s+)?(?:const|let)\s+([A-Za-z_]\w*)\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*=>",
    re.M,
)


def defined_symbols(arguments: Any) -> list[str]:
    """Names an edit's new text defines (``def x``, ``function y``, ``class Z`` …)."""
    texts: list[str] = []
    if isinstance(arguments, dict):
        for key in (
            "new_string",
            "content",
            "newText",
            "new_str",
            "file_text",
            "text",
            "input",
            "patch",
        ):
            if isinstance(arguments.get(key), str):
                texts.append(arguments[key])
        for edit in arguments.get("edits", []) if isinstance(arguments.get("edits"), list) else []:
            if isinstance(edit, dict):
                texts += [
                    v
                    for k, v in edit.items()
                    if k in ("new_string", "newText", "new_str", "content") and isinstance(v, str)
                ]
    elif isinstance(arguments, str):
        texts.append(arguments)
    out: list[str] = []
    for text in texts:
        for m in _DEFINITION.finditer(text[:20000]):
            name = m.group(1) or m.group(2)
            if name and name not in out and len(name) > 2:
                out.append(name)
    return out[:12]


_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,2}[.)])\s+(?:\[[ xX]\]\s+)?(.+?)\s*$")
_NEXT_CUE = re.compile(
    r"\b(next(?: steps?)?|to ?do|remaining|still to do|left to do|follow-?ups?|다음|남은)\b", re.I
)


#: A next-steps cue said in the sentence itself ("Understood. Remaining: run the contract
#: tests."): the cue opens the line or a sentence, and what follows its colon is the item.
_INLINE_NEXT = re.compile(
    r"(?:^|(?<=[.!?])\s+)(?:\*\*)?(?:next(?: steps?)?|remaining|still to do|left to do|to ?do|"
    r"follow-?ups?)(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(\S.*)$",
    re.IGNORECASE,
)
#: An inline cue that names nothing left ("Remaining: none.").
_NOTHING_LEFT = re.compile(r"^(?:none|nothing|n/?a|no(?:thing)? (?:more|else)|-)\W*$", re.IGNORECASE)


#: The agent's last sentence announcing what it does next ("I'll run the benchmark now to
#: confirm it."): said as it hands back, it is work not done in the session.
_ANNOUNCED = re.compile(
    r"(?:^|(?<=[.!?])\s+)(?:(?:now|next|then|ok(?:ay)?|so),?\s+)?(?:i'll|i will|let me|i'm going to|"
    r"i am going to)\s+(?!be\b|know\b|leave\b|stop\b|wait\b|let you\b|keep an eye\b)"
    r"([^.!?\n]{6,200}?)\s*[.!…]?\s*$",
    re.IGNORECASE,
)


def announced_next(text: str) -> str | None:
    """What the message's last sentence says the agent does next, if it says that."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    m = _ANNOUNCED.search(lines[-1].strip()) if lines else None
    return one_line(m.group(1), 200) if m else None


def listed_next(text: str) -> list[str]:
    """The items of the last list in ``text`` that follows a next-steps cue; without
    such a list, the last next step said inline (``Remaining: run the tests.``)."""
    best: list[str] = []
    current: list[str] = []
    inline: str | None = None
    cue = False
    for line in text.splitlines():
        m = _LIST_ITEM.match(line)
        if m:
            if cue:
                current.append(one_line(m.group(1), 200))
            continue
        if current:
            best, current = current, []
        if line.strip():
            cue = bool(_NEXT_CUE.search(line)) and line.rstrip().endswith((":", "："))
            said = _INLINE_NEXT.search(line) if not cue else None
            if said is not None and not _NOTHING_LEFT.match(said.group(1).strip(" *")):
                inline = one_line(said.group(1).strip(" *"), 200)
    if current:
        best = current
    if not best and inline is not None:
        best = [inline]
    return best[:8]


#: Tool calls at the end of a session whose every step is followed; before them, only
#: the steps that leave something lasting (file changes, git and forge events) are.
RECENT_CALLS = 3000
#: A command line that may change files or make a git or forge event.
#: (a literal to look for first, the pattern that confirms it): a command line that may
#: change files or make a git or forge event.
_LASTING_CHECKS = tuple(
    (literal, re.compile(pattern))
    for literal, pattern in (
        (">", r"(?<![0-9&>])>>?(?!&)\s*(?!/dev/null)[^\s|&;]"),
        (
            "git",
            r"\bgit\s+(?:-C\s+\S+\s+)?(?:commit|push|merge|pull|mv|rm|tag|cherry-pick|rebase|revert|am|apply)\b",
        ),
        (
            "gh ",
            r"\b(?:gh|glab)\s+(?:pr|issue|repo|release|mr)\s+(?:create|merge|close|delete|edit)\b",
        ),
        ("glab", r"\bglab\s+mr\s+(?:create|merge|close)\b"),
        ("rm", r"(?:^|[\s;&|(])(?:rm|rmdir|unlink)\s"),
        ("mv", r"(?:^|[\s;&|(])mv\s"),
        ("cp", r"(?:^|[\s;&|(])cp\s"),
        ("tee", r"\btee\s"),
        ("touch", r"\btouch\s"),
        ("sed", r"\bsed\s+(?:-\w+\s+)*-i"),
        ("apply_patch", r"apply_patch"),
        ("rsync", r"\b(?:rsync|scp)\s"),
        ("-Item", r"\b(?:Copy|Move|Remove|Rename|New)-Item\b"),
        ("-Content", r"\b(?:Set|Add)-Content\b"),
        ("Out-File", r"\bOut-File\b"),
    )
)


def lasting(command: str) -> bool:
    """Whether a command line may change files or make a git or forge event (a plain
    substring look before each pattern: most lines of a long session are neither)."""
    if (
        ">" in command
        and ">" in command.replace("2>&1", "").replace("/dev/null", "")
        and _LASTING_CHECKS[0][1].search(command)
    ):
        return True
    for literal, pattern in _LASTING_CHECKS[1:]:
        if literal in command and pattern.search(command):
            return True
    return False


def recent_start(history: list[Message]) -> int:
    """The position from which every step is followed: the newest RECENT_CALLS calls."""
    seen = 0
    for position in range(len(history) - 1, -1, -1):
        seen += len(history[position].tool_calls)
        if seen >= RECENT_CALLS:
            return position
    return 0


def within(cwd: str | None, folder: str | None, path: str) -> str:
    """``path`` of a command line that ran in ``folder`` (a leading ``cd``)."""
    if folder is None or os.path.isabs(path) or path.startswith("~") or " → " in path:
        if folder is not None and " → " in path:
            a, b = path.split(" → ", 1)
            return f"{within(cwd, folder, a)} → {within(cwd, folder, b)}"
        return path
    base = (
        folder
        if os.path.isabs(folder) or folder.startswith("~")
        else (os.path.join(cwd, folder) if cwd else folder)
    )
    return os.path.normpath(os.path.join(base, path))


@functools.lru_cache(maxsize=8192)
def command_shape(command: str, cwd: str | None) -> tuple | None:
    """What a command line is as a step — key, family, kind, test targets, git
    subcommand, masked, every segment's key, the folder it ran in, its file changes,
    the files it reads, whether it touches git — memoised (sessions repeat commands)."""
    steps = shell.analyse(command, cwd)
    main = shell.main_step(steps)
    if main is None:
        return None
    keys = tuple(s.key for s in steps)
    first = steps[0]
    folder = None
    if first.program in ("cd", "set-location", "pushd") and len(first.key.split()) == 2:
        folder = first.key.split()[1]
    changes = tuple((verb, within(cwd, folder, path)) for s in steps for verb, path in s.changes)
    reads = tuple(
        word
        for s in steps
        if s.program in _READERS
        for word in s.key.split()[1:]
        if ("." in word or "/" in word)
        and not word.startswith(("-", "'", '"'))
        and not word[0].isdigit()
        and _PATH_WORD.match(word)  # not a sed script, a glob or a `file:stream`
    )
    masked = main.masked and not shell.pipefail(command)
    gitish = any(k.startswith(("git ", "gh ", "glab ")) for k in keys)
    return (
        main.key,
        main.family,
        main.kind,
        main.targets,
        main.git,
        masked,
        keys,
        folder,
        changes,
        reads,
        gitish,
    )


def says_nothing(text: str) -> bool:
    """Whether a result holds no line but an exit note (a search that found nothing)."""
    for line in text.splitlines():
        s = line.strip()
        if s and not _EXIT_NOTE.match(s):
            return False
    return True


_COUNT_WORDS = (
    "passed",
    "failed",
    "failure",
    "Tests",
    "tests",
    "test result",
    "OK",
    "FAILED",
    "error",
)


def test_counts(text: str) -> str | None:
    """The summary line of a test run's output (its last counts): the newest line that
    names counts, read from the end (runners print their summary last)."""
    tail = text[-2000:]
    if not any(w in tail for w in _COUNT_WORDS):
        return None
    for line in reversed(readable(tail).splitlines()):
        if not line.strip() or not any(w in line for w in _COUNT_WORDS):
            continue
        best: tuple[int, str] | None = None
        for pattern in _TEST_COUNTS:
            for m in pattern.finditer(line):
                found = m.group(0).strip(" =")
                if len(found) >= 4 and (
                    best is None or m.start() < best[0] or len(found) > len(best[1])
                ):
                    best = (m.start(), found)
        if best is not None:
            return one_line(best[1], 160)
    return None
