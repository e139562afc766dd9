"""The documentation stands alone and keeps in step with the code: every command the
server advertises, every params key it accepts, every result key it returns in the
walkthrough and every error code it can refuse with is in docs/commands.md; no page
or docstring points outside the repository; every relative link resolves."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import attrs
import pytest

from lsp_server.model import params as params_module
from lsp_server.model.errors import ERROR_CODES
from lsp_server.model.params import camel
from lsp_server.surfaces.lsp.server import COMMANDS, SERVICE_COMMANDS
from lsp_server.surfaces.service import HandoffService, ServiceConfig

REPO = Path(__file__).resolve().parent.parent
COMMANDS_MD = REPO / "docs" / "commands.md"


def section(text: str, command: str) -> str:
    """The part of commands.md under ``### `command` …`` up to the next heading."""
    m = re.search(rf"^### `{re.escape(command)}`.*?$(.*?)(?=^#{{1,3}} |\Z)", text, re.M | re.S)
    assert m, f"docs/commands.md has no section for {command}"
    return m.group(1)


def mentioned(text: str, key: str) -> bool:
    """``key`` appears as a key: in backticks (`key`, `key: …`, `{key, …}`) or as JSON."""
    return bool(
        re.search(rf"`[^`]*(?<![\w.]){re.escape(key)}(?!\w)[^`]*`", text)
        or f'"{key}"' in text
    )


def attrs_classes(cls: type, seen: set[type]) -> set[type]:
    """``cls`` and every attrs class its fields hold (lists and optionals looked into)."""
    if cls in seen:
        return seen
    seen.add(cls)
    hints = typing.get_type_hints(cls, vars(params_module))
    for field in attrs.fields(cls):
        stack = [hints[field.name]]
        while stack:
            t = stack.pop()
            if attrs.has(t):
                attrs_classes(t, seen)
            stack.extend(typing.get_args(t))
    return seen


def test_every_advertised_command_has_a_section():
    text = COMMANDS_MD.read_text(encoding="utf-8")
    for command in COMMANDS:
        section(text, command)
    assert set(SERVICE_COMMANDS) == set(HandoffService.COMMANDS)


@pytest.mark.parametrize("command", sorted(SERVICE_COMMANDS))
def test_every_params_key_is_documented(command):
    text = COMMANDS_MD.read_text(encoding="utf-8")
    own = section(text, command)
    top = SERVICE_COMMANDS[command].params
    common = {"scope", "workspace"}  # documented once for every command
    for field in attrs.fields(top):
        key = camel(field.name)
        assert key in common or mentioned(own, key), f"{command}: params key {key!r} undocumented"
    for nested in attrs_classes(top, set()) - {top}:
        for field in attrs.fields(nested):
            key = camel(field.name)
            assert mentioned(text, key), f"{nested.__name__}.{key} is not in docs/commands.md"


def test_every_error_code_is_documented():
    text = COMMANDS_MD.read_text(encoding="utf-8")
    errors = text[text.index("## Errors") : text.index("## Commands")]
    for code in sorted(ERROR_CODES):
        assert re.search(rf"^\| `{code}` \| \S", errors, re.M), f"error code {code} has no row"


def test_every_result_key_of_the_walkthrough_is_documented(tmp_path):
    from lsp_server.surfaces import demo

    seen: dict[str, set[str]] = {}
    svc = HandoffService(tmp_path, ServiceConfig())
    real = svc.call

    def recording(command, params, ctx=None):
        result = real(command, params, ctx)
        seen.setdefault(command, set()).update(result)
        return result

    svc.call = recording  # type: ignore[method-assign]
    demo._write_project(tmp_path)
    demo.walkthrough(svc, demo.Narrator(out=open("/dev/null", "w")))  # noqa: SIM115
    recording("handoff.sessions", {})
    text = COMMANDS_MD.read_text(encoding="utf-8")
    assert len(seen) >= 8
    for command, keys in seen.items():
        own = section(text, command)
        for key in sorted(keys):
            assert mentioned(own, key), f"{command}: result key {key!r} undocumented"


OUTSIDE = re.compile(r"\.\./shared|/work/shared|\bshared/(?:spec|fixtures|tools)\b|(?<![\w/])spec/\w+\.md")


def _docs() -> list[Path]:
    skip = {"node_modules", ".venv", ".git", "out"}
    return [
        p for p in REPO.rglob("*.md")
        if not skip & set(p.relative_to(REPO).parts) and "fixtures" not in p.parts
    ]


def test_no_page_points_outside_the_repository():
    offenders = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in _docs()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert offenders == []


def test_no_docstring_points_outside_the_repository():
    offenders = []
    for p in sorted((REPO / "lsp_server").rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node) or ""
                if OUTSIDE.search(doc):
                    offenders.append(f"{p.relative_to(REPO)}: {getattr(node, 'name', '<module>')}")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("#") and OUTSIDE.search(line):
                offenders.append(f"{p.relative_to(REPO)}:{n}")
    assert offenders == []


def test_every_relative_link_resolves():
    broken = []
    for p in _docs():
        text = p.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (p.parent / path).exists():
                broken.append(f"{p.relative_to(REPO)} → {target}")
    assert broken == []


def test_license_is_mit_at_the_root():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "handoff-lsp contributors" in text
