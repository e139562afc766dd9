"""Helpers for the report tests: a committed walkthrough, records written straight into
a real store file (as another version or a person would), and a Markdown parser to
check the structure of rendered reports."""

from __future__ import annotations

import html
import re
from typing import Any

from markdown_it import MarkdownIt

from lsp_server.model import lifecycle as lc
from lsp_server.surfaces.service import HandoffService
from tests.helpers import ALL_CHECKS, SCOPE, prepare, record_contract, record_work


def report(svc: HandoffService, kind: str, scope: str = SCOPE, **params: Any) -> dict[str, Any]:
    return svc.call("handoff.report", {"scope": scope, "kind": kind, **params})


def continuity(svc: HandoffService, scope: str = SCOPE) -> dict[str, Any]:
    return report(svc, "continuity", scope)["data"]


def history(svc: HandoffService, scope: str = SCOPE) -> dict[str, Any]:
    return report(svc, "history", scope)["data"]


def commit_walkthrough(svc: HandoffService, scope: str = SCOPE) -> dict[str, Any]:
    """Contract, work state, handoff_current_work, commit: returns the refs."""
    contract = record_contract(svc, scope)
    work = record_work(svc, contract, scope)
    current = svc.call("handoff.handoffCurrentWork", {"scope": scope})
    commit = svc.call("handoff.commit", {"scope": scope, "prepared": current["prepared"]})
    return {
        "contract": contract,
        "work": work,
        "prepared": current["prepared"],
        "boundary": current["boundary"],
        "revision": commit["revision"],
    }


def acknowledge(
    svc: HandoffService, revision: str, status: str = "accepted", scope: str = SCOPE, **kw: Any
) -> str:
    checks = ALL_CHECKS if status == "accepted" else {}
    return svc.call(
        "handoff.acknowledge",
        {
            "scope": scope,
            "mode": "exact",
            "revision": revision,
            "status": status,
            "checks": checks,
            **kw,
        },
    )["receipt"]


def outcome(
    svc: HandoffService, receipt: str | None, scope: str = SCOPE, summary: str = "ok"
) -> str:
    params: dict[str, Any] = {"scope": scope, "status": "succeeded", "summary": summary}
    if receipt is not None:
        params["receipt"] = receipt
    return svc.call("handoff.recordOutcome", params)["source"]


def append_raw(svc: HandoffService, scope: str, kind: str, payload: dict[str, Any]) -> str:
    """Append a Source exactly as given, bypassing the service's checks (a log written
    by another version or by hand)."""
    with svc.store.transaction() as tx:
        rec = lc.append_source(tx, scope, kind, payload)  # type: ignore[arg-type]  # raw JSON
    return rec.ref


def insert_raw(svc: HandoffService, table: str, *records: Any) -> None:
    """Insert records into a table of the real store file, in one transaction."""
    with svc.store.transaction() as tx:
        for rec in records:
            tx.table(table).insert(rec if isinstance(rec, dict) else {"value": rec})


def many_states(svc: HandoffService, n: int, scope: str = SCOPE) -> None:
    """``n`` work state Sources in one transaction (text ``state <i>``)."""
    cite = [{"kind": "artifact", "path": "client/pets_client.py", "sha256": "0" * 64}]
    with svc.store.transaction() as tx:
        for i in range(1, n + 1):
            lc.append_source(
                tx,
                scope,
                "work_state",
                {
                    "state": {"text": f"state {i}", "citations": cite},
                    "disposition": "continuable",
                    "nextActions": [{"text": f"next {i}", "citations": cite}],
                },
            )


# -- Markdown structure -------------------------------------------------------------

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def tokens(markdown: str) -> list[Any]:
    """Block tokens and, flattened after each inline token, its children."""
    out = []
    for tok in _MD.parse(markdown):
        out.append(tok)
        out.extend(tok.children or [])
    return out


def to_html(markdown: str) -> str:
    return _MD.render(markdown)


def visible_text(markdown: str) -> str:
    """What a reader sees: the rendered HTML without tags, entities decoded, spaces
    collapsed."""
    text = re.sub(r"<[^>]+>", " ", to_html(markdown))
    return " ".join(html.unescape(text).split())


def headings(markdown: str) -> list[str]:
    toks = _MD.parse(markdown)
    return [toks[i + 1].content for i, t in enumerate(toks) if t.type == "heading_open"]


__all__ = [
    "ALL_CHECKS",
    "SCOPE",
    "acknowledge",
    "append_raw",
    "commit_walkthrough",
    "continuity",
    "headings",
    "history",
    "insert_raw",
    "many_states",
    "outcome",
    "prepare",
    "record_contract",
    "record_work",
    "report",
    "tokens",
    "visible_text",
]
