"""The PostgreSQL store's schema: its version, the forward-only migrations (tables,
append-only triggers, the counter's guard), the least-privilege grants, and migrating."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model.errors import HandoffError

if TYPE_CHECKING:  # the 'postgres' extra; the driver is imported by ``postgres``
    import psycopg

#: The schema this code reads and writes; a database at a higher version is refused.
SCHEMA_VERSION = 3
CHANNEL = "handoff_change"
APPEND_ONLY = ("handoff_sources", "handoff_revisions", "handoff_generations")
#: Held while migrating, so two servers starting at once do not both migrate.
MIGRATION_LOCK = 0x68616E646F6666  # "handoff"

#: Forward-only migrations: version n is reached by running ``MIGRATIONS[n]``.
MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE handoff_schema (
    id int PRIMARY KEY CHECK (id = 1),
    version int NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE handoff_projects (
    project text PRIMARY KEY,
    next_seq bigint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE handoff_sources (
    project text NOT NULL REFERENCES handoff_projects,
    id text NOT NULL,
    seq bigint,
    scope text,
    kind text,
    record json NOT NULL,
    PRIMARY KEY (project, id),
    UNIQUE (project, seq)
);
CREATE INDEX handoff_sources_latest ON handoff_sources (project, scope, kind, seq DESC NULLS LAST);
CREATE TABLE handoff_revisions (
    project text NOT NULL REFERENCES handoff_projects,
    ref text NOT NULL,
    scope text,
    digest text,
    seq bigint,
    record json NOT NULL,
    PRIMARY KEY (project, ref),
    UNIQUE (project, scope, digest)
);
CREATE INDEX handoff_revisions_digest ON handoff_revisions (project, digest);
CREATE TABLE handoff_scopes (
    project text NOT NULL REFERENCES handoff_projects,
    scope text NOT NULL,
    head text NOT NULL,
    head_number int NOT NULL,
    record json NOT NULL,
    PRIMARY KEY (project, scope)
);
CREATE TABLE handoff_generations (
    project text NOT NULL REFERENCES handoff_projects,
    doc bigint NOT NULL,
    seq bigint,
    record json NOT NULL,
    PRIMARY KEY (project, doc)
);
CREATE FUNCTION handoff_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'handoff: % is append-only (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER handoff_sources_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON handoff_sources
    FOR EACH STATEMENT EXECUTE FUNCTION handoff_append_only();
CREATE TRIGGER handoff_revisions_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON handoff_revisions
    FOR EACH STATEMENT EXECUTE FUNCTION handoff_append_only();
CREATE TRIGGER handoff_generations_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON handoff_generations
    FOR EACH STATEMENT EXECUTE FUNCTION handoff_append_only();
""",
    # The application role may UPDATE a project's row (its sequence counter) but never
    # rewind it (every later write would collide with an existing seq) nor push it past
    # what one transaction can use (to the end of bigint); quarantined rows are kept.
    2: """
CREATE FUNCTION handoff_forward_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.project IS DISTINCT FROM OLD.project
       OR NEW.next_seq < OLD.next_seq
       OR NEW.next_seq > OLD.next_seq + 1000000 THEN
        RAISE EXCEPTION 'handoff: a project''s sequence only moves forward, a step at a time (% refused)', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER handoff_projects_forward_only
    BEFORE UPDATE ON handoff_projects
    FOR EACH ROW EXECUTE FUNCTION handoff_forward_only();
CREATE TABLE handoff_quarantine (
    project text NOT NULL,
    source_table text NOT NULL,
    row_key text NOT NULL,
    record text NOT NULL,
    reason text NOT NULL,
    quarantined_at timestamptz NOT NULL DEFAULT now()
);
""",
    # The kept views fetch what was written after a sequence number, table by table
    # (store/pglog.py): the revisions and generations by (project, seq) as the
    # Sources' unique key already is.
    3: """
CREATE INDEX handoff_revisions_seq ON handoff_revisions (project, seq);
CREATE INDEX handoff_generations_seq ON handoff_generations (project, seq);
""",
}

#: What the application role may do: read everything, append to the logs, move heads.
GRANTS = (
    "GRANT SELECT ON handoff_schema TO {role}",
    "GRANT SELECT, INSERT, UPDATE ON handoff_projects, handoff_scopes TO {role}",
    "GRANT SELECT, INSERT ON handoff_sources, handoff_revisions, handoff_generations TO {role}",
)


def schema_version(conn: psycopg.Connection) -> int:
    """The schema version of the database (0: never migrated)."""
    row = conn.execute("SELECT to_regclass('handoff_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    row = conn.execute("SELECT version FROM handoff_schema WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def newer_schema(version: int, where: str) -> HandoffError:
    return HandoffError(
        "store_corrupt",
        f"The database {where} has schema version {version}, newer than this handoff "
        f"understands ({SCHEMA_VERSION}); it is left untouched. Upgrade handoff.",
        reason="newer_schema",
        store=where,
        schema=version,
    )


def migrate(conn: psycopg.Connection, where: str) -> dict[str, Any]:
    """Bring the schema forward to ``SCHEMA_VERSION`` (one transaction); refuses a newer
    one. Returns ``{"from", "to", "applied"}``."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        before = schema_version(conn)
        if before > SCHEMA_VERSION:
            raise newer_schema(before, where)
        applied = []
        for version in range(before + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[version])
            applied.append(version)
        if applied:
            conn.execute(
                "INSERT INTO handoff_schema (id, version) VALUES (1, %s) ON CONFLICT (id) "
                "DO UPDATE SET version = EXCLUDED.version, migrated_at = now()",
                (SCHEMA_VERSION,),
            )
    return {"from": before, "to": SCHEMA_VERSION, "applied": applied}


def grant(conn: psycopg.Connection, role: str) -> list[str]:
    """Grant ``role`` what the application needs and nothing more."""
    from psycopg import sql

    done = []
    with conn.transaction():
        for statement in GRANTS:
            q = sql.SQL(statement.replace("{role}", "{}")).format(sql.Identifier(role))
            conn.execute(q)
            done.append(q.as_string(conn))
    return done
