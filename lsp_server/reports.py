"""The ``handoff.report`` command: projections rendered to Markdown from Jinja templates."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import ChainableUndefined, ChoiceLoader, FileSystemLoader, TemplateError
from jinja2.sandbox import SandboxedEnvironment
from markupsafe import Markup

from . import lifecycle as lc
from . import projections
from .errors import HandoffError
from .params import ReportParams

if TYPE_CHECKING:
    from .service import CallContext, HandoffService

log = logging.getLogger(__name__)

REPORT_KINDS = ("continuity", "history", "handoff")
TEMPLATE_FOR = {
    "continuity": "continuity.md.j2",
    "history": "history.md.j2",
    "handoff": "handoff.md.j2",
}


def builtin_templates() -> Path:
    """The templates shipped with the package (or the checkout's ``templates/``)."""
    here = Path(__file__).resolve().parent
    packaged = here / "templates"
    return packaged if packaged.is_dir() else here.parent / "templates"


_MD_SPECIAL = re.compile(r"([\\`*\[\]|#~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_MD_LEADING = re.compile(r"^(\s*)(\d*)([-+=.)])")


def md_inline(value: Any) -> Markup:
    """Record text made safe for one line of Markdown: no structure, no HTML."""
    text = " ".join(str(value).split())
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return Markup(_MD_LEADING.sub(lambda m: f"{m.group(1)}{m.group(2)}\\{m.group(3)}", text))


def md_block(value: Any, info: str = "") -> Markup:
    """Multi-line record text shown literally inside a fence longer than any it holds."""
    text = str(value)
    longest = max((len(m) for m in re.findall(r"`+|~+", text)), default=0)
    fence = "~" * max(4, longest + 1)
    return Markup(f"{fence}{info}\n{text.rstrip()}\n{fence}")


def md_link(path: Any) -> Markup:
    """A workspace-relative artifact path as a Markdown link to the file."""
    p = str(path)
    target = "".join(c if c.isalnum() or c in "/._-" else f"%{ord(c):02X}" for c in p)
    return Markup(f"[{md_inline(p)}]({target})")


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup) or value is None:
        return "" if value is None else value
    if isinstance(value, str):
        return md_inline(value)
    return value


def _short(value: Any, n: int = 12) -> str:
    s = str(value or "")
    return s.removeprefix("sha256:")[:n]


def make_environment(folders: list[Path]) -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        loader=ChoiceLoader([FileSystemLoader(str(f)) for f in folders]),
        undefined=ChainableUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(md=md_inline, block=md_block, link=md_link, short=_short)
    return env


def render(
    kind: str, data: dict[str, Any], workspace_templates: Path | None
) -> tuple[str, list[str]]:
    """Render one view; a broken workspace override falls back to the built-in template."""
    warnings: list[str] = []
    name = TEMPLATE_FOR[kind]
    if workspace_templates is not None and workspace_templates.is_dir():
        try:
            env = make_environment([workspace_templates, builtin_templates()])
            return env.get_template(name).render(**data), warnings
        except (TemplateError, TypeError, ValueError, AttributeError, KeyError) as exc:
            msg = (
                f"The template override in {workspace_templates} failed ({type(exc).__name__}: "
                f"{exc}); the built-in template was used."
            )
            log.warning(msg)
            warnings.append(msg)
    env = make_environment([builtin_templates()])
    return env.get_template(name).render(**data), warnings


def handoff_view(service: HandoffService, p: ReportParams, scope: str) -> dict[str, Any]:
    """One handoff (a revision or a prepared value) with its evidence re-checked."""
    ledger = service.ledger()
    if p.prepared is not None:
        prepared = lc.check_prepared(p.prepared, scope)
        selected = None
    else:
        ref = p.revision or ledger.head(scope)
        if ref is None:
            raise HandoffError(
                "revision_not_found",
                f"Scope {scope!r} has no committed revision; pass 'revision' or 'prepared'.",
                scope=scope,
            )
        lc.parse_revision(ref)
        rec = ledger.revisions.get(ref)
        if rec is None:
            raise HandoffError(
                "revision_not_found", f"There is no committed revision {ref}.", revision=ref
            )
        if rec["scope"] != scope:
            raise HandoffError(
                "scope_mismatch",
                f"Revision {ref} belongs to scope {rec['scope']!r}, not {scope!r}.",
                expected=scope,
                actual=rec["scope"],
            )
        prepared, selected = rec["prepared"], ref
    return {
        "scope": scope,
        "trust": "untrusted_history",
        "revision": selected,
        "prepared": selected is None,
        "digest": prepared["digest"],
        "base": prepared.get("base"),
        "boundary": prepared.get("boundary"),
        "preparedAt": prepared.get("preparedAt"),
        "current": ledger.head(scope),
        "content": prepared["content"],
        "citations": prepared["evidence"],
        "unreadableEvidence": lc.evidence_chain(prepared, ledger, service.workspace),
    }


def run_report(
    service: HandoffService, p: ReportParams, scope: str, ctx: CallContext
) -> dict[str, Any]:
    if p.kind not in REPORT_KINDS:
        raise HandoffError(
            "invalid_params", f"Report kind {p.kind!r} is not one of {', '.join(REPORT_KINDS)}."
        )
    ctx.report(f"Projecting the {p.kind} view of {scope}", None)
    if p.kind == "continuity":
        data = projections.continuity(service.store.read(), scope)
    elif p.kind == "history":
        data = projections.history(service.store.read(), scope)
    else:
        data = handoff_view(service, p, scope)
    ctx.cancel.raise_if_cancelled()
    markdown, warnings = render(p.kind, {"view": data}, service.store.folder / "templates")
    result = {"scope": scope, "kind": p.kind, "markdown": markdown, "data": data}
    if warnings:
        result["warnings"] = warnings
    return result
