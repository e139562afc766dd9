"""Indexes over one full snapshot of a store (``store.read()``), for tests that check
every record of a history at once; the server itself reads through
``lifecycle.StoreLedger``, which reads only the records a rule asks for."""

from __future__ import annotations

from typing import Any

from lsp_server.model.lifecycle import SOURCE_KINDS, SOURCE_RE, revision_intact
from lsp_server.model.port import revision_shape, source_shape


class Ledger:
    """Indexes over the Source log and the committed history of one full snapshot
    (``store.read()``). The rules use only its accessor methods, which
    ``StoreLedger`` provides without reading all history."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.sources: dict[str, dict[str, Any]] = {}
        self.by_scope: dict[str, list[dict[str, Any]]] = {}
        self.invalid_sources = 0
        for rec in data.get("sources", {}).values():
            if (source_shape(rec) and rec["kind"] in SOURCE_KINDS):
                self.sources[rec["id"]] = rec
                self.by_scope.setdefault(rec["scope"], []).append(rec)
            else:
                self.invalid_sources += 1
        for recs in self.by_scope.values():
            recs.sort(key=lambda r: r["seq"])
        self.revisions: dict[str, dict[str, Any]] = {}
        self.revisions_by_scope: dict[str, list[dict[str, Any]]] = {}
        self.by_digest: dict[str, dict[str, Any]] = {}
        self.invalid_revisions = 0
        for rec in data.get("revisions", {}).values():
            if revision_shape(rec) and revision_intact(rec):
                self.revisions[rec["ref"]] = rec
                self.revisions_by_scope.setdefault(rec["scope"], []).append(rec)
                if isinstance(rec.get("digest"), str):
                    self.by_digest[rec["digest"]] = rec
            else:
                self.invalid_revisions += 1
        for recs in self.revisions_by_scope.values():
            recs.sort(key=lambda r: r["number"])
        self.scopes: dict[str, dict[str, Any]] = {}
        for rec in data.get("scopes", {}).values():
            if isinstance(rec, dict) and isinstance(rec.get("scope"), str):
                self.scopes[rec["scope"]] = rec

    def source(self, ref: str) -> dict[str, Any] | None:
        m = SOURCE_RE.match(ref) if isinstance(ref, str) else None
        return self.sources.get(m.group(1)) if m else None

    def source_info(self, ref: str) -> dict[str, Any] | None:
        """At least ``id``, ``scope``, ``kind`` and ``seq`` of a Source."""
        return self.source(ref)

    def head(self, scope: str) -> str | None:
        rec = self.scopes.get(scope)
        head = rec.get("head") if rec else None
        return head if isinstance(head, str) else None

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        return self.scopes.get(scope)

    def latest(self, scope: str, kind: str) -> dict[str, Any] | None:
        for rec in reversed(self.by_scope.get(scope, [])):
            if rec["kind"] == kind:
                return rec
        return None

    def known_scope(self, scope: str) -> bool:
        return scope in self.by_scope or scope in self.scopes

    def revision(self, ref: str) -> dict[str, Any] | None:
        return self.revisions.get(ref)

    def revision_by_digest(self, digest: str) -> dict[str, Any] | None:
        return self.by_digest.get(digest)


