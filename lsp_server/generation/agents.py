"""The agents handoff reads sessions of and starts sessions in: the one registry that the
readers, discovery, the start, the editors' lenses, the CLI and the MCP schema read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SessionFormat:
    """A session file format and the reader module that reads it."""

    name: str  # pi, claude, codex
    label: str  # how a document names the session's agent
    reader: str  # the module under lsp_server.generation with ``read_<name>``


@dataclass(frozen=True)
class Agent:
    """One agent: where it keeps its sessions, and how a session is started in it."""

    name: str  # pi, omp, claude, codex
    label: str  # for people: lenses, drafts, pickers
    format: str  # the session format it writes
    program: str  # the command that runs it
    home_env: str  # the environment variable that moves its home
    home_default: tuple[str, ...]  # its home under $HOME when that variable is unset
    sessions: str  # the folder of its home that holds the sessions
    lens: bool = True  # offered as a "Start in …" lens on a handoff document
    prompt_args: tuple[str, ...] = ()  # what precedes the first prompt on its command line
    #: Its prompt reads ``@path`` as a file to attach (Gemini CLI, Qwen Code): the text
    #: sent is then not the text given.
    attaches_at_paths: bool = False


FORMATS_BY_NAME: dict[str, SessionFormat] = {
    f.name: f
    for f in (
        SessionFormat("pi", "pi / oh-my-pi", "pi"),
        SessionFormat("claude", "Claude Code", "claude"),
        SessionFormat("codex", "Codex CLI", "codex"),
        SessionFormat("opencode", "opencode", "opencode"),
        SessionFormat("gemini", "Gemini CLI", "gemini"),
        SessionFormat("qwen", "Qwen Code", "qwen"),
    )
}

AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent("pi", "pi", "pi", "pi", "PI_CODING_AGENT_DIR", (".pi", "agent"), "sessions"),
        Agent(
            "omp",
            "oh-my-pi (omp)",
            "pi",
            "omp",
            "OMP_CODING_AGENT_DIR",
            (".omp", "agent"),
            "sessions",
            lens=False,
        ),
        Agent("claude", "Claude Code", "claude", "claude", "CLAUDE_CONFIG_DIR", (".claude",), "projects"),
        Agent("codex", "Codex", "codex", "codex", "CODEX_HOME", (".codex",), "sessions"),
        Agent(
            "opencode",
            "opencode",
            "opencode",
            "opencode",
            "XDG_DATA_HOME",
            (".local", "share"),
            "opencode",
            prompt_args=("--prompt",),
        ),
        # Its home is $GEMINI_CLI_HOME/.gemini (else ~/.gemini); the first prompt is
        # its positional argument, which starts it interactive.
        Agent(
            "gemini",
            "Gemini CLI",
            "gemini",
            "gemini",
            "GEMINI_CLI_HOME",
            (),
            ".gemini/tmp",
            attaches_at_paths=True,
        ),
        # Its positional prompt runs once and exits: -i starts it interactive with one.
        Agent(
            "qwen",
            "Qwen Code",
            "qwen",
            "qwen",
            "QWEN_HOME",
            (".qwen",),
            "projects",
            prompt_args=("-i",),
            attaches_at_paths=True,
        ),
    )
}

#: The session formats, in the registry's order.
FORMATS: tuple[str, ...] = tuple(FORMATS_BY_NAME)
#: The agents' names, in the registry's order.
AGENT_NAMES: tuple[str, ...] = tuple(AGENTS)


def format_label(format: str) -> str:
    """How a document names the agent of a session in ``format``."""
    found = FORMATS_BY_NAME.get(format)
    return found.label if found else format


def formats_said() -> str:
    """The session formats read, as people name them: "pi, …, opencode or Gemini CLI"."""
    labels = [f.label for f in FORMATS_BY_NAME.values()]
    return ", ".join(labels[:-1]) + " or " + labels[-1]


def agent_label(name: str) -> str:
    """How people see the agent ``name``."""
    found = AGENTS.get(name)
    return found.label if found else name


#: An ``@path`` as Gemini CLI finds one in a prompt (not after a backslash; a path ends
#: at white space or punctuation, and a final dot is the sentence's).
_AT_PATH = re.compile(r"(?<!\\)@((?:\\.|[^\s,;!?()\[\]{}\\])+)")


def attached_paths(agent: str, text: str, workspace: Path) -> list[str]:
    """The ``@path`` references in ``text`` that ``agent`` would replace with the files'
    content (the ones that exist in the workspace), in order, each once."""
    found = AGENTS.get(agent)
    if found is None or not found.attaches_at_paths:
        return []
    root = workspace.resolve()
    out: list[str] = []
    for m in _AT_PATH.finditer(text):
        name = m.group(1).rstrip(".").replace("\\ ", " ")
        if not name or name in out:
            continue
        try:
            target = (root / name).resolve()
        except (OSError, ValueError):
            continue
        if target.is_relative_to(root) and target.exists():
            out.append(name)
    return out
