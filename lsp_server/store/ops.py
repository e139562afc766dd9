"""``handoff store migrate | copy | check`` for the PostgreSQL store: schema migrations
and grants, a lossless copy from the embedded store (counts and digests compared before
and after), and a read-only check of a project's records in the database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..model.errors import HandoffError
from ..model.lifecycle import revision_intact
from .embedded import StateStore
from .pgschema import APPEND_ONLY, SCHEMA_VERSION, grant, migrate, schema_version
from .postgres import (
    UNREADABLE,
    PgStore,
    PgTransaction,
    _dumps,
    _key,
    _loads,
    _text,
    census,
    require_driver,
    safe_target,
)
from .project import project_id
from .selection import is_postgres, store_target


def _target(url: str | None) -> str:
    target = url if url else store_target(None)
    if not target or not is_postgres(target):
        raise HandoffError(
            "invalid_params",
            "Name the database: --url postgresql://… or the HANDOFF_STORE environment "
            "variable (better: a connection string without the password, which libpq then "
            "reads from ~/.pgpass or PGPASSFILE).",
        )
    return target


def run_migrate(url: str | None, role: str | None = None) -> dict[str, Any]:
    """Bring the database's schema forward (refusing a newer one); grant ``role`` the
    application's least privilege when given."""
    target = _target(url)
    require_driver()
    import psycopg

    where = safe_target(target)
    pg = PgStore(target, "-", Path(os.devnull))
    with pg._mapped(), psycopg.connect(target) as conn:
        result = migrate(conn, where)
        granted = grant(conn, role) if role else []
    return {"action": "migrate", "ok": True, "store": where, **result, "granted": granted}


#: Each table's row key, for naming (and moving aside) a row.
_ROW_KEYS = {
    "handoff_sources": "id",
    "handoff_revisions": "ref",
    "handoff_generations": "doc",
    "handoff_scopes": "scope",
}


def unreadable_rows(store: PgStore) -> list[tuple[str, str, str]]:
    """``(table, key, reason)`` of every row of the project whose record the views
    cannot read (see ``postgres.UNREADABLE``)."""
    found = []
    with store.connection() as conn:
        for table, key in _ROW_KEYS.items():
            cur = conn.execute(
                f"SELECT {key}::text, record::text FROM {table} WHERE project = %s",
                (store.project,),
            )
            for row_key, text in cur:
                rec = _loads(text)
                if isinstance(rec, dict) and UNREADABLE in rec:
                    found.append((table, row_key, str(rec[UNREADABLE])))
        conn.rollback()
    return found


def repair_pg(store: PgStore) -> dict[str, Any]:
    """Move the project's unreadable rows into ``handoff_quarantine`` (kept whole, with
    the reason) and bring a sequence counter that fell behind the log forward: the
    database's owner only (the append-only triggers are lifted for that one
    transaction)."""
    rows = unreadable_rows(store)
    moved: list[dict[str, str]] = []
    with store.connection() as conn:
        owner = conn.execute(
            "SELECT pg_get_userbyid(relowner) = current_user FROM pg_class "
            "WHERE relname = 'handoff_sources'"
        ).fetchone()
        conn.rollback()
        if not owner or not owner[0]:
            raise HandoffError(
                "invalid_params",
                "store repair of a database changes its append-only tables: run it as the "
                "database's owner (the role that ran 'handoff store migrate'), not the "
                "application role.",
            )
        with conn.transaction():
            for table, key, reason in rows:
                column = _ROW_KEYS[table]
                conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
                conn.execute(
                    "INSERT INTO handoff_quarantine (project, source_table, row_key, record, reason) "
                    f"SELECT project, %s, {column}::text, record::text, %s FROM {table} "
                    f"WHERE project = %s AND {column}::text = %s",
                    (table, reason, store.project, key),
                )
                conn.execute(
                    f"DELETE FROM {table} WHERE project = %s AND {column}::text = %s",
                    (store.project, key),
                )
                conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
                moved.append({"table": table, "key": key, "reason": reason})
            conn.execute("ALTER TABLE handoff_projects DISABLE TRIGGER USER")
            conn.execute(
                "UPDATE handoff_projects SET next_seq = GREATEST(next_seq, 1 + COALESCE(("
                "SELECT max(seq) FROM (SELECT seq FROM handoff_sources WHERE project = %s "
                "UNION ALL SELECT seq FROM handoff_revisions WHERE project = %s "
                "UNION ALL SELECT seq FROM handoff_generations WHERE project = %s) s), 0)) "
                "WHERE project = %s",
                (store.project,) * 4,
            )
            conn.execute("ALTER TABLE handoff_projects ENABLE TRIGGER USER")
    store._full = None
    return {
        "action": "repair",
        "ok": True,
        "backend": "postgresql",
        "project": store.project,
        "quarantined": moved,
        "check": check_pg(store),
    }


def check_pg(store: PgStore) -> dict[str, Any]:
    """Everything wrong with a project's records in the database, read only."""
    problems: list[dict[str, Any]] = []
    with store.connection() as conn:
        version = schema_version(conn)
        triggers = {
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname LIKE 'handoff_%%_append_only' AND t.tgenabled <> 'D'"
            )
        }
        conn.rollback()
    if version != SCHEMA_VERSION:
        problems.append(_problem("schema", f"schema version {version}, expected {SCHEMA_VERSION}"))
    for table in APPEND_ONLY:
        if table not in triggers:
            problems.append(_problem("not_append_only", f"{table} has no append-only trigger"))
    full = store.read()
    revisions = [r for r in full["revisions"].values() if isinstance(r, dict)]
    for rec in revisions:
        if isinstance(rec.get("ref"), str) and not revision_intact(rec):
            problems.append(
                _problem(
                    "digest_mismatch",
                    f"revision {rec['ref']} does not match its digest",
                    revision=rec["ref"],
                )
            )
    refs = {r.get("ref"): r for r in revisions}
    for head in full["scopes"].values():
        rev = refs.get(head.get("head")) if isinstance(head, dict) else None
        if rev is None or rev.get("number") != head.get("headNumber"):
            problems.append(
                _problem(
                    "head_missing",
                    f"the head of {head.get('scope')!r} names "
                    f"{head.get('head')}, which is not a committed revision of that number",
                    scope=head.get("scope"),
                )
            )
    seqs = [
        r["seq"]
        for name in ("sources", "revisions", "generations")
        for r in full[name].values()
        if isinstance(r, dict) and type(r.get("seq")) is int
    ]
    next_seq = full["_meta"]["1"]["nextSeq"]
    if seqs and max(seqs) >= next_seq:
        problems.append(
            _problem(
                "next_seq_behind", f"nextSeq is {next_seq} but the log already holds {max(seqs)}"
            )
        )
    for table, key, reason in unreadable_rows(store):
        problems.append(
            _problem(
                "unreadable_record",
                f"{table} row {key} cannot be read ({reason}); "
                "the views skip it. 'handoff store repair' run as the database's "
                "owner moves it to handoff_quarantine.",
                table=table,
                key=key,
            )
        )
    counts = {name: len(full[name]) for name in ("sources", "revisions", "scopes", "generations")}
    counts["segments"] = 0
    return {
        "ok": not problems,
        "backend": "postgresql",
        "stateFile": store.describe(),
        "project": store.project,
        "schema": version,
        "counts": counts,
        "census": census(full),
        "problems": problems,
    }


def _problem(kind: str, message: str, **data: Any) -> dict[str, Any]:
    return {"problem": kind, "message": message, **data}


def _embedded_folder(workspace: Path, source: str) -> Path:
    """The embedded store's folder named by ``--from``; refuses one without ``state.json``."""
    folder = (workspace / source).resolve()
    if is_postgres(source) or not (folder / "state.json").is_file():
        raise HandoffError(
            "invalid_params",
            f"--from must be the embedded store's folder in the workspace (e.g. .handoff); "
            f"{source!r} holds no state.json.",
        )
    return folder


def _insert_records(tx: PgTransaction, project_: str, full: dict[str, Any]) -> None:
    """Insert every Source, revision, scope head and generation of ``full`` in ``tx``."""
    cur = tx.conn.cursor()
    cur.executemany(
        "INSERT INTO handoff_sources (project, id, seq, scope, kind, record) "
        "VALUES (%s, %s, %s, %s, %s, %s::json)",
        [
            (
                project_,
                _key(r.get("id")),
                tx._seq_of(r),
                _text(r.get("scope")),
                _text(r.get("kind")),
                _dumps(r),
            )
            for r in _records(full, "sources")
        ],
    )
    cur.executemany(
        "INSERT INTO handoff_revisions (project, ref, scope, digest, seq, record) "
        "VALUES (%s, %s, %s, %s, %s, %s::json)",
        [
            (
                project_,
                _key(r.get("ref")),
                _text(r.get("scope")),
                _text(r.get("digest")),
                tx._seq_of(r),
                _dumps(r),
            )
            for r in _records(full, "revisions")
        ],
    )
    cur.executemany(
        "INSERT INTO handoff_scopes (project, scope, head, head_number, record) "
        "VALUES (%s, %s, %s, %s, %s::json)",
        [
            (project_, r["scope"], r["head"], r["headNumber"], _dumps(r))
            for r in _records(full, "scopes")
        ],
    )
    cur.executemany(
        "INSERT INTO handoff_generations (project, doc, seq, record) VALUES (%s, %s, %s, %s::json)",
        [
            (project_, doc, tx._seq_of(r), _dumps(r))
            for doc, r in enumerate(_records(full, "generations"), start=1)
        ],
    )


def _advance_seq(tx: PgTransaction, full: dict[str, Any], next_seq: int) -> None:
    """Set the database's next sequence number past every copied record's."""
    top = max(
        (
            s
            for s in (
                tx._seq_of(r)
                for name in ("sources", "revisions", "generations")
                for r in _records(full, name)
            )
            if s is not None
        ),
        default=0,
    )
    tx.seq = max(next_seq, top + 1)
    tx.dirty = True


def run_copy(workspace: Path, source: str, url: str | None, project: str | None) -> dict[str, Any]:
    """Copy every record of the embedded store ``source`` (a folder of the workspace) into
    the database under ``project``, in one transaction; verified by counts and digests."""
    folder = _embedded_folder(workspace, source)
    full = StateStore(folder).read()
    before = census(full)
    target = PgStore(_target(url), project or project_id(workspace), folder)
    existing = census(target.read())
    if any(v["count"] for v in existing.values()):
        if existing == before:
            return _copy_result(target, folder, before, existing, copied=False)
        raise HandoffError(
            "invalid_params",
            f"Project {target.project!r} already has records in {target.where} that differ "
            "from this store's; copy never merges. Choose another --project.",
            project=target.project,
        )
    next_seq = int(full.get("_meta", {}).get("1", {}).get("nextSeq", 1))
    project_ = target.project
    with target.transaction() as tx:
        _insert_records(tx, project_, full)
        _advance_seq(tx, full, next_seq)
    after = census(target.read())
    return _copy_result(target, folder, before, after, copied=True)


def _records(full: dict[str, Any], name: str) -> list[Any]:
    table = full.get(name) or {}
    return [table[k] for k in sorted(table, key=lambda k: (len(k), k))]


def _copy_result(target: PgStore, folder: Path, before, after, *, copied: bool) -> dict[str, Any]:
    return {
        "action": "copy",
        "ok": before == after,
        "copied": copied,
        "from": str(folder),
        "to": target.where,
        "project": target.project,
        "before": before,
        "after": after,
    }


def human(result: dict[str, Any]) -> str:
    """One line per fact of a migrate or copy result."""
    if result["action"] == "migrate":
        applied = ", ".join(map(str, result["applied"])) or "none (already current)"
        lines = [
            f"{result['store']}: schema {result['from']} -> {result['to']}; "
            f"migrations applied: {applied}"
        ]
        lines += [f"  {g}" for g in result["granted"]]
        return "\n".join(lines)
    verdict = "verified" if result["ok"] else "MISMATCH"
    how = "copied" if result["copied"] else "already there"
    lines = [f"{result['from']} -> {result['to']} (project {result['project']}): {how}, {verdict}"]
    for name, b in result["before"].items():
        a = result["after"][name]
        lines.append(
            f"  {name}: {b['count']} -> {a['count']}, sha256 {b['digest'][:16]}… "
            f"{'=' if a == b else '!='} {a['digest'][:16]}…"
        )
    return "\n".join(lines)
