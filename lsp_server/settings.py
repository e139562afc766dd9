"""The ``handoff`` settings section of an editor or an MCP client, parsed once into a
typed value (``HandoffSettings``); a bad setting costs one warning and its default,
never a crash. Read by the servers, not by a CLI call (``config.ServiceConfig`` is what
a workspace needs)."""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Mapping
from pathlib import PurePosixPath, PureWindowsPath
from types import MappingProxyType
from typing import Any

from .config import DEFAULT_LOG_LEVEL, DEFAULT_STATE_FOLDER, SECTION, ServiceConfig
from .model.vocabulary import SCOPE_RE

#: ``logLevel`` values and the logging level each one means (``logging.ERROR`` … as
#: numbers: a cold ``handoff call`` does not import logging; tests/lsp/test_config.py
#: checks them against logging's).
LOG_LEVELS: dict[str, int] = {
    "error": 40,
    "warning": 30,
    "warn": 30,
    "info": 20,
    "debug": 10,
    "trace": 10,
}

#: The keys this server reads; anything else in the section belongs to the editors.
KNOWN_KEYS = (
    "scope",
    "stateFolder",
    "logLevel",
    "generation",
    "store",
    "project",
    "checkDocuments",
)

#: The Markdown files checked as handoffs besides drafts and started texts (globs).
DEFAULT_CHECK_DOCUMENTS = ("HANDOFF.md", "handoff*.md")




class HandoffSettings(
    namedtuple(
        "HandoffSettings",
        "scope state_folder log_level generation store project check_documents",
        defaults=(
            None,
            DEFAULT_STATE_FOLDER,
            DEFAULT_LOG_LEVEL,
            MappingProxyType({}),
            None,
            None,
            DEFAULT_CHECK_DOCUMENTS,
        ),
    )
):
    """What the ``handoff`` settings section says, checked: ``scope``,
    ``state_folder``, ``log_level``, ``generation`` (passed through to the generation
    engine, which checks it), ``store`` (``postgresql://…``, a shared database, or
    ``None``: TinyDB in ``state_folder``) and ``project`` (the project id that
    namespaces scopes in a shared database), ``check_documents`` (the globs of the
    Markdown files the language server checks as handoffs, besides drafts and started
    texts). A ``collections.namedtuple``: see
    ``commands.Command`` for why."""

    __slots__ = ()

    @property
    def logging_level(self) -> int:
        return LOG_LEVELS[self.log_level]

    def service_config(self) -> ServiceConfig:
        return ServiceConfig(
            scope=self.scope,
            state_folder=self.state_folder,
            generation=dict(self.generation),
            store=self.store,
            project=self.project,
        )


def section_of(raw: Any) -> Any:
    """The ``handoff`` section of a settings payload.

    Accepts ``{"handoff": {...}}`` (VS Code's and Neovim's ``settings``) and the bare
    section ``{...}`` (``initializationOptions`` as most clients send it).
    """
    if isinstance(raw, Mapping) and SECTION in raw:
        return raw[SECTION]
    return raw


def looks_like_section(raw: Any) -> bool:
    """True when ``raw`` carries any handoff setting (bare or under ``handoff``)."""
    section = section_of(raw)
    return isinstance(section, Mapping) and any(k in section for k in KNOWN_KEYS)


def _state_folder_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a folder name such as '.handoff'"
    for flavour in (PurePosixPath, PureWindowsPath):
        p = flavour(value)
        if p.is_absolute() or p.anchor or ".." in p.parts:
            return "must be a relative folder inside the workspace (no '..', not absolute)"
    if value.strip() in (".", "./"):
        return "must name a folder, not the workspace itself"
    return None


def _read_scope(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``scope``: a valid scope name, else the git branch."""
    scope = section.get("scope")
    if scope is not None and scope != "":
        if isinstance(scope, str) and SCOPE_RE.match(scope):
            values["scope"] = scope
        else:
            problems.append(
                f"scope {scope!r} is not valid (1-128 characters of A-Z a-z 0-9 . _ - /, "
                "not starting with '/' or '.', without '..'); the git branch is used instead"
            )


def _read_state_folder(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``stateFolder``: a relative folder inside the workspace."""
    folder = section.get("stateFolder")
    if folder is not None:
        problem = _state_folder_problem(folder)
        if problem is None:
            values["state_folder"] = folder.strip()
        else:
            problems.append(f"stateFolder {folder!r} {problem}; using {DEFAULT_STATE_FOLDER!r}")


def _read_log_level(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``logLevel``: one of :data:`LOG_LEVELS`, case and spaces ignored."""
    level = section.get("logLevel")
    if level is not None:
        if isinstance(level, str) and level.strip().lower() in LOG_LEVELS:
            values["log_level"] = level.strip().lower()
        else:
            problems.append(
                f"logLevel {level!r} is not one of error, warning, info, debug; using "
                f"{DEFAULT_LOG_LEVEL!r}"
            )


def _read_generation(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``generation``: an object, passed on to the generation engine."""
    generation = section.get("generation")
    if generation is not None:
        if isinstance(generation, Mapping):
            values["generation"] = dict(generation)
        else:
            problems.append(
                f"generation must be an object, not {type(generation).__name__}; using the "
                "built-in extractive provider"
            )


def _read_store(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``store``: a ``postgresql://`` connection string, else the store in the workspace."""
    store = section.get("store")
    if store is not None and store != "":
        if isinstance(store, str) and re.match(r"(?i)(postgres(ql)?://|tinydb$|local$)", store.strip()):
            values["store"] = store.strip()
        else:
            problems.append(
                "store must be a postgresql:// connection string, or empty for the store in "
                "the workspace; using the store in the workspace"
            )


def _read_project(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``project``: a project id, else the git remote."""
    project = section.get("project")
    if project is not None and project != "":
        if isinstance(project, str) and re.fullmatch(r"[A-Za-z0-9._/:@-]{1,200}", project):
            values["project"] = project
        else:
            problems.append(
                "project must be 1-200 characters of A-Z a-z 0-9 . _ / : @ -; the git remote "
                "is used instead"
            )


def _read_check_documents(section: Mapping, values: dict[str, Any], problems: list[str]) -> None:
    """``checkDocuments``: a list of globs (an empty list: drafts and started texts only)."""
    globs = section.get("checkDocuments")
    if globs is None:
        return
    if isinstance(globs, list) and all(isinstance(g, str) and g.strip() for g in globs):
        values["check_documents"] = tuple(g.strip() for g in globs)
    else:
        shown = ", ".join(DEFAULT_CHECK_DOCUMENTS)
        problems.append(
            f"checkDocuments must be a list of file globs such as 'HANDOFF.md'; using {shown}"
        )


#: One reader per setting, in the order their problems are reported.
_READERS = (
    _read_scope,
    _read_state_folder,
    _read_log_level,
    _read_generation,
    _read_store,
    _read_project,
    _read_check_documents,
)


def parse_settings(raw: Any) -> tuple[HandoffSettings, list[str]]:
    """Turn a settings payload into :class:`HandoffSettings` and a list of problems.

    Every bad value falls back to its default; unknown keys are ignored (the section
    also holds the editors' own settings).
    """
    section = section_of(raw)
    if section is None:
        return HandoffSettings(), []
    if not isinstance(section, Mapping):
        return HandoffSettings(), [
            f"the '{SECTION}' settings must be an object, not {type(section).__name__}"
        ]
    problems: list[str] = []
    values: dict[str, Any] = {}
    for read in _READERS:
        read(section, values, problems)
    return HandoffSettings(**values), problems


def describe_problems(problems: list[str]) -> str:
    """One warning a person can act on, for all the problems at once."""
    return (
        "Handoff: some settings were ignored: "
        + "; ".join(problems)
        + ". Fix them in your editor's 'handoff' settings."
    )
