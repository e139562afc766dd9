"""Rendering: the template loader (the built-in templates, a workspace's overrides in a
sandbox that also bounds arithmetic, output size and time), the filters that keep
record text from adding structure (Markdown for a preview, plain text for a terminal),
and the plain-text environment the generation prompt is written with. Used by the
reports and by ``generation/prompt.py``."""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import os
import re
import stat
import time
from pathlib import Path
from typing import Any, get_args
from urllib.parse import quote

from jinja2 import ChainableUndefined, ChoiceLoader, StrictUndefined, nodes
from jinja2.sandbox import SandboxedEnvironment, SecurityError
from markupsafe import Markup

from ..model.params import RenderMode
from ..support.redaction import redact
from .templatefiles import TemplateFolderLoader, folder_problem

log = logging.getLogger(__name__)

#: What an override may produce before it is abandoned for the built-in template.
OVERRIDE_MAX_CHARS = 8_000_000
OVERRIDE_MAX_SECONDS = 5.0


def builtin_templates() -> Path:
    """The templates shipped with the package (or the checkout's ``templates/``)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


# ---------------------------------------------------------------------------
# Escaping: record text can never add structure to the report
# ---------------------------------------------------------------------------

# C0/C1 controls (terminal escapes) and bidi overrides; newlines and tabs are whitespace.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INLINE = re.compile(r"[\\`*\[\]|~$<>&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# What would open a block at the start of a line: heading, list, setext/thematic, quote.
_BLOCK_START = re.compile(r"^(?:([#+=-])|(\d{1,9})([.)])(?=\s|$))")


def _inline_sub(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ENTITY.get(ch) or "\\" + ch


def _block_sub(m: re.Match[str]) -> str:
    return "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}"


def _plain(value: Any) -> str:
    return _CONTROL.sub("\ufffd", str(value))


def plain_text(value: Any) -> str:
    """Text that cannot drive a terminal: line ends made ``\\n``, and every other
    control character (C0 but tab and newline, DEL, C1, so the ESC or CSI that starts a
    sequence) and bidirectional override replaced by U+FFFD. What record text gets in a
    report, and what generation prints and writes."""
    return _plain(str(value).replace("\r\n", "\n").replace("\r", "\n"))


def md_inline(value: Any) -> Markup:
    """Record text as one line of literal Markdown text: no structure, no HTML, no links."""
    text = " ".join(_plain(value).split())
    return Markup(_BLOCK_START.sub(_block_sub, _INLINE.sub(_inline_sub, text)))


def md_lines(value: Any, indent: int = 0) -> Markup:
    """Multi-line record text: each line escaped, joined by hard line breaks (blank
    lines dropped, so the text stays one paragraph wherever the template puts it)."""
    lines = [md_inline(line) for line in _plain(value).splitlines() if line.strip()]
    return Markup(("\\\n" + " " * indent).join(lines))


def md_block(value: Any, info: str = "") -> Markup:
    """Record text shown verbatim in a fence longer than any fence it contains."""
    text = plain_text(value)
    longest = max((len(m) for m in re.findall(r"`{3,}|~{3,}", text)), default=0)
    fence = "~" * max(4, longest + 1)
    info = re.sub(r"[^A-Za-z0-9_+-]", "", str(info))
    return Markup(f"{fence}{info}\n{text.rstrip()}\n{fence}")


def md_code(value: Any) -> Markup:
    """A short value (a reference, a hash) as a code span; plain escaped text when it
    holds a pipe (which would end a table cell even inside a code span)."""
    text = " ".join(_plain(value).split())
    if not text or "|" in text:
        return md_inline(text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Markup(f"{ticks}{pad}{text}{pad}{ticks}")


def _workspace_relative(path: str) -> bool:
    return bool(path) and not (
        _CONTROL.search(path)
        or path.startswith(("/", "\\"))
        or (len(path) > 1 and path[1] == ":")
        or ".." in path.replace("\\", "/").split("/")
    )


def md_link(path: Any, base: Any = "", lines: Any = None) -> Markup:
    """A workspace-relative artifact path as a link to the file in the workspace (a
    ``file:`` URI under ``base`` when given); a path that would leave the workspace is
    shown as text only."""
    p = str(path)
    if not _workspace_relative(p):
        return md_inline(p)
    target = quote(p.removeprefix("./"), safe="/")
    if base:
        target = f"{str(base).rstrip('/')}/{target}"
    if isinstance(lines, list | tuple) and lines and type(lines[0]) is int:
        target += f"#L{lines[0]}"
    return Markup(f"[{md_inline(p)}]({target})")


def vscode_link(path: Any, base: Any = "", lines: Any = None) -> Markup:
    """``md_link`` rooted at the workspace (``/path#L60``), the cited lines also in the
    query (``/path?lines=60-72#L60``): VS Code's Markdown preview ignores the query and
    opens the file at the line; the extension's previews select the lines."""
    ranged = (
        isinstance(lines, list | tuple)
        and len(lines) == 2
        and all(type(n) is int and n > 0 for n in lines)
        and lines[0] <= lines[1]
    )
    if not ranged or not _workspace_relative(str(path)):
        return md_link(path, base, lines)
    target = quote(str(path).removeprefix("./"), safe="/")
    if base:
        target = f"{str(base).rstrip('/')}/{target}"
    return Markup(f"[{md_inline(path)}]({target}?lines={lines[0]}-{lines[1]}#L{lines[0]})")


def json_text(value: Any) -> str:
    """A value as indented JSON (for a fenced block: ``|json|block("json")``)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def text_inline(value: Any) -> Markup:
    """Record text as one line for a client that shows Markdown as text (a terminal):
    whitespace collapsed and controls replaced, nothing escaped."""
    return Markup(" ".join(_plain(value).split()))


def text_lines(value: Any, indent: int = 0) -> Markup:
    lines = [text_inline(line) for line in _plain(value).splitlines() if line.strip()]
    return Markup(("\n" + " " * indent).join(lines))


def text_link(path: Any, base: Any = "", lines: Any = None) -> Markup:
    """An artifact path as ``path:line`` (what an editor's go-to-file takes)."""
    p = text_inline(path)
    if isinstance(lines, list | tuple) and lines and type(lines[0]) is int:
        return Markup(f"{p}:{lines[0]}")
    return p


#: How a report is rendered (see ``params.RenderMode``).
RENDER_MODES: tuple[str, ...] = get_args(RenderMode)


def one_line(value: Any, limit: int = 160) -> str:
    """Text on one line, shortened to ``limit`` characters (still escaped on output)."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tail_path(value: Any, limit: int = 80) -> str:
    """A path on one line, shortened from the front so the file name stays."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def short(value: Any, n: int = 12) -> str:
    """A hash or digest shortened to its first ``n`` hex digits."""
    return str(value or "").removeprefix("sha256:")[:n]


def _finalize(value: Any) -> Any:
    """Everything a template prints is escaped unless a filter already made it Markdown."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return md_inline(value)


def _finalize_text(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return text_inline(value)


# ---------------------------------------------------------------------------
# Environments
# ---------------------------------------------------------------------------


class RenderOverBudget(SecurityError):
    """An override's render ran past its time budget."""


class _Budget:
    """The deadline of one bounded render (the thread's, by a context variable)."""

    __slots__ = ("deadline", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "handoff_render_budget", default=None
)


def _tick() -> None:
    """Stop the render when its deadline passed (called at every loop step, macro
    call and function call of a bounded template)."""
    budget = _BUDGET.get()
    if budget is not None and time.monotonic() > budget.deadline:
        raise RenderOverBudget(f"rendering took longer than {budget.seconds:g} s")


class ReportSandbox(SandboxedEnvironment):
    """The sandbox for report templates; also refuses arithmetic that would exhaust
    memory or time (``9**9**9``, ``"x" * 10**9``). A ``bounded`` one (for overrides)
    checks the render's deadline at each step of every ``for`` loop, at the start of
    every macro and call block, and at every call: a template has no other way to
    repeat, so a render that loops is stopped in its own thread, by an exception."""

    intercepted_binops = frozenset({"**", "*"})

    def __init__(self, *args: Any, bounded: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bounded = bounded
        self.render_tick = _tick

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        if self.bounded:
            for node in tree.find_all((nodes.For, nodes.Macro, nodes.CallBlock)):
                tick = nodes.ExprStmt(
                    nodes.Call(nodes.EnvironmentAttribute("render_tick"), [], [], None, None)
                )
                tick.set_lineno(node.lineno)
                tick.set_environment(self)
                node.body.insert(0, tick)
        return tree

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if __self.bounded:
            _tick()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int | float) and abs(right) > 256:
            raise SecurityError("exponent too large in a report template")
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(count, int)
                    and len(seq) * count > 1_000_000
                ):
                    raise SecurityError("repetition too large in a report template")
        return super().call_binop(context, operator, left, right)


def make_environment(
    folders: list[Path], mode: str = "preview", bounded: bool = False
) -> ReportSandbox:
    """A sandboxed environment over template folders (first folder wins), each read by
    ``templatefiles.TemplateFolderLoader`` (regular files inside the folder only)."""
    env = ReportSandbox(
        bounded=bounded,
        loader=ChoiceLoader([TemplateFolderLoader(f) for f in folders]),
        undefined=ChainableUndefined,
        finalize=_finalize_text if mode == "terminal" else _finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(md=md_inline, lines=md_lines, block=md_block, code=md_code, link=md_link)
    env.filters["json"] = json_text
    if mode == "vscode":
        env.filters["link"] = vscode_link
    if mode == "terminal":
        env.filters.update(md=text_inline, lines=text_lines, link=text_link)
    env.filters["short"] = short
    env.filters["one_line"] = one_line
    env.filters["tail_path"] = tail_path
    return env


_environments: dict[tuple[str, ...], ReportSandbox] = {}


def environment(folders: list[Path], stamp: Any = None, mode: str = "preview") -> ReportSandbox:
    """A cached environment per folder list, override stamp and render mode: compiled
    templates are reused until an override file changes (even within one mtime tick)."""
    key = (mode, *(str(f) for f in folders), repr(stamp))
    env = _environments.get(key)
    if env is None:
        if len(_environments) > 16:
            _environments.clear()
        bounded = stamp is not None  # an override: its renders have a deadline
        env = _environments[key] = make_environment(folders, mode, bounded)
    return env


def _render_bounded(env: ReportSandbox, name: str, context: dict[str, Any]) -> str:
    """Render an override, giving up when it grows too large or takes too long (the
    deadline is also checked inside loops and calls, see ``ReportSandbox``)."""
    token = _BUDGET.set(_Budget(OVERRIDE_MAX_SECONDS))
    try:
        size = 0
        parts = []
        for chunk in env.get_template(name).generate(**context):
            size += len(chunk)
            parts.append(chunk)
            if size > OVERRIDE_MAX_CHARS:
                raise SecurityError(f"the output grew beyond {OVERRIDE_MAX_CHARS:,} characters")
            _tick()
        return "".join(parts)
    finally:
        _BUDGET.reset(token)


def _template_place(exc: BaseException, folder: Path) -> str:
    """Where in the templates ``exc`` happened, as `` at <file> line <n>`` (the file
    relative to the override folder when it is one of its own), or ``""``."""
    filename, lineno = getattr(exc, "filename", None), getattr(exc, "lineno", None)
    if not (isinstance(filename, str) and isinstance(lineno, int)):
        filename = lineno = None
        inside = str(folder) + os.sep
        tb = exc.__traceback__
        while tb is not None:  # Jinja rewrites template frames to the template's lines
            code_file = tb.tb_frame.f_code.co_filename
            if code_file.startswith(inside) or (filename is None and code_file.endswith(".j2")):
                filename, lineno = code_file, tb.tb_lineno
            tb = tb.tb_next
    if filename is None:
        return ""
    shown = (
        filename[len(str(folder)) + 1 :] if filename.startswith(str(folder) + os.sep) else filename
    )
    return f" at {shown} line {lineno}"


def _override_failed(folder: Path, exc: BaseException, what: str = "") -> str:
    msg = (
        f"The template override in {folder} failed{_template_place(exc, folder)} "
        f"({type(exc).__name__}: {one_line_error(exc)}){what}; the built-in template was used."
    )
    log.warning(msg)
    return msg


def _refused_folder(folder: Path | None) -> str | None:
    """The warning for an override folder that may not be read (see
    ``templatefiles.folder_problem``), or ``None``."""
    problem = None if folder is None else folder_problem(folder)
    if problem is None:
        return None
    msg = (
        f"The template override folder {folder} {problem}; overrides are read only from "
        "the workspace's own folder, so the built-in templates were used."
    )
    log.warning(msg)
    return msg


def render(
    name: str,
    context: dict[str, Any],
    workspace_templates: Path | None = None,
    mode: str = "preview",
) -> tuple[str, list[str]]:
    """Render one view, secrets redacted; a broken workspace override falls back to the
    built-in template with a warning (never a crash)."""
    warnings: list[str] = []
    refused = _refused_folder(workspace_templates)
    if refused is not None:
        warnings.append(refused)
        workspace_templates = None
    stamp = None if workspace_templates is None else templates_stamp(workspace_templates)
    if stamp is not None and workspace_templates is not None:
        try:
            env = environment([workspace_templates, builtin_templates()], stamp, mode)
            return redact(_render_bounded(env, name, context))[0], warnings
        except Exception as exc:  # a broken override must never break the report
            warnings.append(_override_failed(workspace_templates, exc))
    env = environment([builtin_templates()], None, mode)
    return redact(env.get_template(name).render(**context))[0], warnings


def builtin_template(name: str, mode: str = "preview") -> Any:
    """A built-in template as compiled for ``mode`` (a new object when its file changed)."""
    return environment([builtin_templates()], None, mode).get_template(name)


def render_block(template: Any, block: str, context: dict[str, Any]) -> str:
    """One ``{% block %}`` of ``template`` rendered on its own: the text a full render
    writes in its place, when the block reads only what ``context`` holds."""
    return "".join(template.blocks[block](template.new_context(context)))


# ---------------------------------------------------------------------------
# Event summaries: one line of plain text per event, by a macro
# ---------------------------------------------------------------------------

#: The template whose ``summary(e)`` macro writes an event's one-line summary.
SUMMARY_TEMPLATE = "partials/event_summary.txt.j2"


def _finalize_plain(value: Any) -> Any:
    return "" if value is None else _plain(value)


def _summary_environment(folders: list[Path], stamp: Any) -> ReportSandbox:
    """Plain text (the summaries are data: controls replaced, nothing escaped; the
    view's template escapes them where it prints them)."""
    key = ("summary", *(str(f) for f in folders), repr(stamp))
    env = _environments.get(key)
    if env is None:
        if len(_environments) > 16:
            _environments.clear()
        env = make_environment(folders, "terminal", bounded=stamp is not None)
        env.finalize = _finalize_plain  # before any template is compiled
        _environments[key] = env
    return env


def _summaries_by(env: ReportSandbox, events: list[dict[str, Any]], bounded: bool) -> list[str]:
    token = _BUDGET.set(_Budget(OVERRIDE_MAX_SECONDS) if bounded else None)
    try:
        macro = env.get_template(SUMMARY_TEMPLATE).module.summary  # type: ignore[attr-defined]
        size, out = 0, []
        for event in events:
            line = " ".join(str(macro(event)).split())
            out.append(line)
            size += len(line)
            if bounded and size > OVERRIDE_MAX_CHARS:
                raise SecurityError(f"the summaries grew beyond {OVERRIDE_MAX_CHARS:,} characters")
            _tick()
        return out
    finally:
        _BUDGET.reset(token)


def summaries(
    events: list[dict[str, Any]], workspace_templates: Path | None = None
) -> tuple[list[str], list[str]]:
    """Each event's one-line summary (``SUMMARY_TEMPLATE``, overridable like a view) as
    plain text; a broken override falls back to the built-in macro with a warning."""
    warnings: list[str] = []
    if not events:
        return [], warnings
    refused = _refused_folder(workspace_templates)
    if refused is not None:
        warnings.append(refused)
        workspace_templates = None
    stamp = None if workspace_templates is None else templates_stamp(workspace_templates)
    if stamp is not None and workspace_templates is not None:
        try:
            env = _summary_environment([workspace_templates, builtin_templates()], stamp)
            return _summaries_by(env, events, bounded=True), warnings
        except Exception as exc:  # a broken override must never break the report
            what = " while writing the event summaries"
            warnings.append(_override_failed(workspace_templates, exc, what))
    return _summaries_by(_summary_environment([builtin_templates()], None), events, False), warnings


def one_line_error(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    text = " ".join((str(exc) or type(exc).__name__).split())
    return text if len(text) <= 300 else text[:299] + "…"


def templates_stamp(folder: Path) -> tuple[Any, ...] | None:
    """What the override folder looks like now (names, kinds, mtimes, sizes; links and
    the folder itself not followed), for the cache; ``None`` when there is none."""
    try:
        top = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(top.st_mode):  # a link or a file: refused when rendered
        return (("", "", top.st_mode, top.st_mtime_ns, top.st_size),)
    found = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            found.append((root, name, st.st_mode, st.st_mtime_ns, st.st_size))
    return tuple(sorted(found))


@functools.lru_cache(maxsize=1)
def text_environment() -> SandboxedEnvironment:
    """The built-in templates as plain text (no escaping, every name must be defined):
    what the generation prompt and the extractive handoff are written with."""
    return SandboxedEnvironment(
        loader=TemplateFolderLoader(builtin_templates()),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
