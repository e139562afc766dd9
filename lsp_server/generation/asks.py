"""The user's words: which user messages are requests (not slash commands, ``!shell``
lines, injected environment or instruction text, compaction prompts), and the request
each makes. The session facts, the readers' titles and the prompt share these rules."""

from __future__ import annotations

import re
from typing import Protocol

from ..support.redaction import redact


class Message(Protocol):
    """What these rules read of a transcript's message (``transcript.Message`` has it)."""

    role: str
    kind: str | None
    text: str


#: Text that opens an injected message (environment, instructions, notifications,
#: hook output, compaction prompts): never the user's request.
_INJECTED = re.compile(
    r"^\s*(?:<(?:environment_context|user_instructions|permissions instructions|INSTRUCTIONS|"
    r"task-notification|system-reminder|local-command-[a-z]+|user-prompt-submit-hook|"
    r"turn_aborted|subagent_notification|bash-(?:input|stdout|stderr)|skill|command-stdout|"
    r"workspace-tree|context|system|handoff-context)\b"
    r"|# AGENTS\.md instructions|# CLAUDE\.md|Caveat: The messages below|"
    r"\[Request interrupted by user|This session is being continued from a previous conversation|"
    r"Your task is to create a detailed summary of the conversation|"
    r"The messages above are a conversation to summari[sz]e|"
    r"You are a helpful AI assistant tasked with summari[sz]ing|"
    r"Please continue the conversation from where we left|"
    r"Base directory for this skill:)",
    re.IGNORECASE,
)
#: Wrappers that agents, IDE extensions and harnesses inject INTO a user message around
#: or beside the user's words (Claude Code's IDE notes and reminders, Codex's
#: environment and instructions, Cursor-style attachments, Cline's environment
#: details): removed with their contents wherever they stand, before any user text is
#: used. A message that is nothing but these is no request.
SCAFFOLDING = (
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "system-reminder",
    "system_reminder",
    "environment_context",
    "environment_details",
    "user_instructions",
    "user_info",
    "additional_data",
    "attached_files",
    "open_and_recently_viewed_files",
    "project_layout",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "command-message",
    "workspace-tree",
    "git_status",
)
#: Wrappers whose contents ARE the user's words (the tags alone are scaffolding).
SPEECH_WRAPPERS = ("user_query", "user_request", "user_message", "task", "feedback")
_SCAFFOLD_NAMES = "|".join(map(re.escape, SCAFFOLDING))
_SCAFFOLD = re.compile(
    rf"<({_SCAFFOLD_NAMES})\b[^>]*>.*?</\1\s*>|<(?:{_SCAFFOLD_NAMES})\b[^>]*/>",
    re.DOTALL | re.IGNORECASE,
)
_SPEECH = re.compile(
    r"</?(?:{})\b[^>]*>".format("|".join(map(re.escape, SPEECH_WRAPPERS))), re.IGNORECASE
)


def without_scaffolding(text: str) -> str:
    """``text`` without the injected wrappers of :data:`SCAFFOLDING` (contents and all)
    and without the tags of :data:`SPEECH_WRAPPERS` (their contents kept)."""
    if "<" not in text:
        return text
    out = _SPEECH.sub("", _SCAFFOLD.sub("", text))
    return re.sub(r"\n{3,}", "\n\n", out).strip()


_SLASH = re.compile(r"^/[A-Za-z][\w:.-]*(?:\s|$)")
_COMMAND_NAME = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
#: Claude Code's thinking-budget keywords: instructions to the model, not the task.
_THINK_WORDS = re.compile(
    r"\b(?:ultrathink|megathink|think\s+harder|think\s+hard)\b", re.IGNORECASE
)
FILE_MENTION = re.compile(r"(?:^|\s)@([\w./~-]+\.\w+)")
QUESTION_END = re.compile(
    r"[?？]\s*$|(?:어디임|뭐임|뭐야|어때|알려줘|있어|맞아|됐어|했어|인가요|나요|니|까)\s*[?？]?\s*$"
)


def request_text(m: Message) -> tuple[str, str | None] | None:
    """The request a user message makes and the slash command it came through, or
    ``None`` for a bare slash command, a ``!shell`` line or an injected message."""
    text = m.text.strip()
    if not text:
        return None
    name = _COMMAND_NAME.search(text) if "<command-name>" in text else None
    if name is not None:
        args = _COMMAND_ARGS.search(text)
        body = args.group(1).strip() if args else ""
        command = name.group(1)
        return (body, command if command.startswith("/") else "/" + command) if body else None
    if text.startswith("!") or _SLASH.match(text) or _INJECTED.match(text):
        return None
    text = without_scaffolding(text)
    if not text or _INJECTED.match(text) or is_handoff_document(text):
        return None
    if "hink" in text or "HINK" in text:  # a cheap look before the regex
        text = re.sub(r"[ \t]{2,}", " ", _THINK_WORDS.sub(" ", text)).strip()
    return (text, None) if text else None


#: The sections a handoff document has (``prompt.SECTIONS``), as headings.
_HANDOFF_HEADING = re.compile(
    r"^#{1,3}\s+(goal|constraints (?:&|and) preferences|progress|key decisions|"
    r"critical context|next steps)\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def is_handoff_document(text: str) -> bool:
    """Whether ``text`` is a handoff document (a Goal, Next Steps and at least two more
    of its sections): the text an earlier session handed over, not the user's words."""
    if "#" not in text:
        return False
    found = {m.group(1).lower() for m in _HANDOFF_HEADING.finditer(text)}
    return "goal" in found and "next steps" in found and len(found) >= 4


def title_of(messages: list[Message], limit: int = 120) -> str | None:
    """A session's title: its first request on one line (``None`` when it has none),
    its secrets replaced before it is cut (a key cut in half is no longer recognised,
    and its first half would show in the picker)."""
    for m in messages:
        if m.role == "user" and m.kind is None:
            found = request_text(m)
            if found is not None:
                line = " ".join(found[0].split())
                return redact(line[: limit + TITLE_LOOKAHEAD])[0][:limit]
    return None


#: How far past a title's end a secret that starts in it is looked for.
TITLE_LOOKAHEAD = 600


_PLACEHOLDER = re.compile(r"\[REDACTED[A-Z_]*\]")


def is_placeholder(text: str) -> bool:
    """Whether ``text`` is only a redaction placeholder its file's owner left
    (``[REDACTED_PROMPT]``): the words are unknown, not a request to quote."""
    return bool(_PLACEHOLDER.fullmatch(text.strip()))
