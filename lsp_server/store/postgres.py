"""The store on PostgreSQL: one database shared by a team's machines and repositories.

Every operation is one database transaction that first locks its project's row
(``SELECT … FOR UPDATE``), so sequence numbers are handed out in commit order exactly
as under the embedded store's file lock; the head moves by a conditional ``UPDATE …
WHERE head = <expected>`` inside it (compare-and-swap), and the prepared handoff's
digest is unique per scope (the idempotency key of a retried commit). Sources (and the
acknowledgement receipts among them), revisions and generation records are append-only:
a trigger refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` on them, and the application
role is granted ``SELECT, INSERT`` only. Every commit sends ``NOTIFY handoff_change``
with the project and its new sequence number, so a watching server sees another
machine's commit without asking.

Records are kept verbatim (``json``, not ``jsonb``: the text as written), so a copy from
the embedded store is lossless. The connection string is never logged or put in a
message: messages name ``user@host:port/dbname`` only.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import orjson

from ..model.errors import HandoffError

try:  # the 'postgres' extra: without it the store is refused on use, with how to get it
    import psycopg
    from psycopg import errors as pgerrors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.types.json import Json, set_json_loads
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:
    _DRIVER_MISSING: str | None = exc.name or "psycopg"
else:
    _DRIVER_MISSING = None
from ..model.port import head_moved
from ..model.records import Generation, Revision, ScopeHead, SessionStart, Source, as_json
from .embedded import StateStore
from .embedded.layout import DEFAULT_LOCK_TIMEOUT
from .pglog import PgLog, PgSealed, stamped_log
from .pgschema import CHANNEL, SCHEMA_VERSION, migrate, newer_schema, schema_version

log = logging.getLogger(__name__)


def driver_missing() -> HandoffError | None:
    """The refusal of a PostgreSQL store when the 'postgres' extra is not installed."""
    if _DRIVER_MISSING is None:
        return None
    return HandoffError(
        "invalid_params",
        "The PostgreSQL store needs the 'postgres' extra, which is not installed "
        f"({_DRIVER_MISSING} is missing): pip install 'handoff-lsp[postgres]' "
        "(or uv tool install 'handoff-lsp[postgres]'). The server bundled with the VS Code "
        "extension has no driver: set handoff.server.python to a Python that has "
        "handoff-lsp[postgres] installed.",
        missing=_DRIVER_MISSING,
        extra="postgres",
    )


def require_driver() -> None:
    """Raise :func:`driver_missing`'s refusal if the 'postgres' extra is missing."""
    refusal = driver_missing()
    if refusal is not None:
        raise refusal


#: A password in a connection string, in either form: the URI's ``user:password@``
#: (up to the last ``@`` of the token: a password may hold one) and ``password=…``.
_PASSWORD_IN_DSN = re.compile(
    r"(?i)(postgres(?:ql)?://[^:/@\s\"'\[]*:)[^\s\"']*(?=@)"
    r"|(\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s\"']+)"
    # A password holding an unescaped '@' ends up in the host libpq reads.
    r"|(\bhost\s*[='\"]+)[^\s'\"]*(?=@)"
)


def scrub_passwords(text: str) -> str:
    """``text`` with the password of every connection string in it replaced by ``***``."""
    low = text.lower()
    if "://" not in text and "assword" not in low and "host" not in low:
        return text
    return _PASSWORD_IN_DSN.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "***", text)


class PasswordFilter(logging.Filter):
    """Takes passwords out of every record of the loggers it sits on: the database
    libraries log the connection string they failed with (psycopg_pool: once per
    attempt), and a string that does not parse cannot be shortened to its target."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: left to logging
            return True
        clean = scrub_passwords(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[1] is not None:
            text = scrub_passwords(str(record.exc_info[1]))
            if text != str(record.exc_info[1]):
                record.exc_info = None
                record.exc_text = None
                record.msg = f"{record.msg} ({text})"
        return True


#: The loggers of the database libraries and ours, each with the filter.
FILTERED_LOGGERS = ("psycopg", "psycopg.pool", "psycopg_pool", "lsp_server")


def _install_password_filter() -> None:
    for name in FILTERED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, PasswordFilter) for f in logger.filters):
            logger.addFilter(PasswordFilter())


_install_password_filter()


def safe_target(conninfo: str) -> str:
    """``postgresql://user@host:port/dbname`` of a connection string (no password, no
    options): the only form of it that appears in messages and logs."""
    if _DRIVER_MISSING is not None:  # nothing to parse it with; say no more than this
        return "postgresql://(not parsed: the 'postgres' extra is not installed)"
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "postgresql://(a connection string that does not parse)"
    user = parts.get("user") or os.environ.get("PGUSER") or ""
    host = parts.get("host") or os.environ.get("PGHOST") or "localhost"
    if "@" in host:  # a password's unescaped '@' (write it %40): what precedes it is hidden
        host = "***@" + host.rsplit("@", 1)[1]
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    db = parts.get("dbname") or os.environ.get("PGDATABASE") or ""
    return f"postgresql://{user + '@' if user else ''}{host}:{port}/{db}"


def _scrub(text: str, conninfo: str) -> str:
    """An error text with the password of ``conninfo`` (if any) taken out."""
    try:
        password = conninfo_to_dict(conninfo).get("password")
    except psycopg.ProgrammingError:
        password = None
    text = text.replace(conninfo, safe_target(conninfo))
    if password:
        text = text.replace(str(password), "***")
    return text.strip().splitlines()[0] if text.strip() else text


#: The key of what a row whose JSON cannot be read (nested past orjson's depth limit,
#: not JSON at all, over :data:`MAX_RECORD_BYTES`) reads as: a record no view accepts,
#: counted as invalid and skipped, named by ``store check``, moved aside by ``store
#: repair``. Never a traceback.
UNREADABLE = "_unreadable"
#: A record larger than this is not read (the lifecycle's own records are far smaller).
MAX_RECORD_BYTES = 16 * 1024 * 1024


def _loads(data: Any) -> Any:
    if len(data) > MAX_RECORD_BYTES:
        return {UNREADABLE: f"{len(data)} bytes, over the {MAX_RECORD_BYTES}-byte limit"}
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return {UNREADABLE: str(exc)}


def _configure(conn: psycopg.Connection) -> None:
    """A pooled connection: records parsed by orjson within the size cap, and autocommit
    (a lookup is one round trip, not ``BEGIN``, the query and a ``ROLLBACK`` at return;
    every write and every read that needs one snapshot opens its own transaction)."""
    set_json_loads(_loads, conn)
    conn.autocommit = True


#: A pooled connection handed back this recently is not checked again when taken: it
#: answered a moment ago, and a connection lost since fails its first statement, which
#: is refused as ``store_busy`` and dropped from the pool (seconds).
CHECK_AFTER_IDLE = 1.0
_RETURNED: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def _check_if_idle(conn: psycopg.Connection) -> None:
    """The pool's check of a connection it hands out, skipped for one just returned
    (one round trip less on every read; docs/performance.md)."""
    returned = _RETURNED.get(conn)
    if returned is None or time.monotonic() - returned > CHECK_AFTER_IDLE:
        ConnectionPool.check_connection(conn)


#: One pool per connection string per process (a fork starts its own).
_POOLS: dict[tuple[int, str], ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(conninfo: str, timeout: float) -> ConnectionPool:
    key = (os.getpid(), conninfo)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = ConnectionPool(
                conninfo,
                min_size=0,
                max_size=int(os.environ.get("HANDOFF_PG_POOL", "4")),
                timeout=timeout,
                # Give up a failing connection attempt as soon as a caller would (its
                # backoff grows); the next caller starts a new one at once.
                reconnect_timeout=timeout,
                open=False,
                configure=_configure,
                check=_check_if_idle,
                kwargs={"connect_timeout": max(1, int(timeout))},
                name="handoff",
            )
            pool.open(wait=False)
            _POOLS[key] = pool
        return pool


def close_pools() -> None:
    """Close this process's pools (tests and the CLI at exit)."""
    with _POOLS_LOCK:
        for key, pool in list(_POOLS.items()):
            if key[0] == os.getpid():
                with contextlib.suppress(Exception):
                    pool.close(timeout=1)
                del _POOLS[key]


class PgHistory:
    """The read views over the database: on one connection (inside a transaction: sees
    its own writes), or on a pooled connection per lookup (a snapshot outside)."""

    def __init__(self, store: PgStore, conn: psycopg.Connection | None = None) -> None:
        self.store = store
        self.conn = conn

    def _one(self, query: str, params: tuple[Any, ...]) -> Any:
        if self.conn is not None:
            row = self.conn.execute(query, params).fetchone()
        else:
            with self.store.connection() as conn:
                row = conn.execute(query, params).fetchone()
        return row[0] if row else None

    @property
    def project(self) -> str:
        return self.store.project

    def source_info(self, sid: str) -> dict[str, Any] | None:
        info = self._one(
            "SELECT json_build_object('id', id, 'scope', scope, 'kind', kind, 'seq', seq) "
            "FROM handoff_sources WHERE project = %s AND id = %s",
            (self.project, sid),
        )
        return info

    def source(self, sid: str) -> dict[str, Any] | None:
        return self._one(
            "SELECT record FROM handoff_sources WHERE project = %s AND id = %s",
            (self.project, sid),
        )

    def latest_source(self, scope: str, kind: str) -> dict[str, Any] | None:
        return self._one(
            "SELECT record FROM handoff_sources WHERE project = %s AND scope = %s AND "
            "kind = %s ORDER BY seq DESC NULLS LAST LIMIT 1",
            (self.project, scope, kind),
        )

    def has_scope(self, scope: str) -> bool:
        return bool(
            self._one(
                "SELECT EXISTS (SELECT 1 FROM handoff_scopes WHERE project = %s AND scope = %s)"
                " OR EXISTS (SELECT 1 FROM handoff_sources WHERE project = %s AND scope = %s)",
                (self.project, scope, self.project, scope),
            )
        )

    def revision(self, ref: str) -> dict[str, Any] | None:
        return self._one(
            "SELECT record FROM handoff_revisions WHERE project = %s AND ref = %s",
            (self.project, ref),
        )

    def revision_by_digest(self, digest: str) -> dict[str, Any] | None:
        return self._one(
            "SELECT record FROM handoff_revisions WHERE project = %s AND digest = %s "
            "ORDER BY seq DESC NULLS LAST LIMIT 1",
            (self.project, digest),
        )

    def scope_record(self, scope: str) -> dict[str, Any] | None:
        return self._one(
            "SELECT record FROM handoff_scopes WHERE project = %s AND scope = %s",
            (self.project, scope),
        )

    def full(self) -> dict[str, Any]:
        if self.conn is not None:
            return self.store.assemble(self.conn)
        return self.store.read()


class PgTransaction:
    """One operation on the database, under its project's row lock."""

    def __init__(self, store: PgStore, conn: psycopg.Connection, next_seq: int) -> None:
        self.store = store
        self.conn = conn
        self.seq = next_seq
        self.dirty = False
        self._history = PgHistory(store, conn)

    def history(self) -> PgHistory:
        return self._history

    def next_seq(self) -> int:
        seq = self.seq
        self.seq += 1
        self.dirty = True
        return seq

    def _seq_of(self, rec: dict[str, Any]) -> int | None:
        seq = rec.get("seq")
        return seq if type(seq) is int and -(2**63) <= seq < 2**63 else None

    def append_source(self, src: Source) -> None:
        rec = as_json(src)
        self.conn.execute(
            "INSERT INTO handoff_sources (project, id, seq, scope, kind, record) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (
                self.store.project,
                _key(rec.get("id")),
                self._seq_of(rec),
                _text(rec.get("scope")),
                _text(rec.get("kind")),
                Json(rec, dumps=_dumps),
            ),
        )
        self.dirty = True

    def insert_revision(self, revision: Revision) -> None:
        rev = as_json(revision)
        self.conn.execute(
            "INSERT INTO handoff_revisions (project, ref, scope, digest, seq, record) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (
                self.store.project,
                _key(rev.get("ref")),
                _text(rev.get("scope")),
                _text(rev.get("digest")),
                self._seq_of(rev),
                Json(rev, dumps=_dumps),
            ),
        )
        self.dirty = True

    def set_head(self, scope: str, expected: str | None, scope_head: ScopeHead) -> None:
        """The compare-and-swap: a conditional insert or update; no row changed means
        another writer moved the head first."""
        head = as_json(scope_head)
        args = (head["head"], int(head["headNumber"]), Json(head, dumps=_dumps))
        if expected is None:
            cur = self.conn.execute(
                "INSERT INTO handoff_scopes (project, scope, head, head_number, record) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (project, scope) DO NOTHING",
                (self.store.project, scope, *args),
            )
        else:
            cur = self.conn.execute(
                "UPDATE handoff_scopes SET head = %s, head_number = %s, record = %s "
                "WHERE project = %s AND scope = %s AND head = %s",
                (*args, self.store.project, scope, expected),
            )
        if cur.rowcount != 1:
            now = self._history.scope_record(scope)
            raise head_moved(scope, expected, now.get("head") if now else None)
        self.dirty = True

    def append_generation(self, generation: Generation | SessionStart) -> None:
        rec = as_json(generation)
        self.conn.execute(
            "INSERT INTO handoff_generations (project, doc, seq, record) VALUES (%s, "
            "(SELECT coalesce(max(doc), 0) + 1 FROM handoff_generations WHERE project = %s), "
            "%s, %s)",
            (self.store.project, self.store.project, self._seq_of(rec), Json(rec, dumps=_dumps)),
        )
        self.dirty = True


def _text(value: Any) -> str | None:
    """A column value of a record's field: the string, or NULL for anything else (the
    record itself is kept verbatim; projections count what is malformed)."""
    return value if isinstance(value, str) else None


def _key(value: Any) -> str:
    """A record's key column: its id when that is a string, else a fresh unique key
    (a malformed record is kept, and never collides)."""
    return value if isinstance(value, str) else f"~malformed-{uuid.uuid4().hex}"


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj).decode()


class PgStore:
    """A project's records in a shared PostgreSQL database (see the module docstring)."""

    backend = "postgresql"

    def __init__(
        self,
        conninfo: str,
        project: str,
        folder: str | os.PathLike[str],
        *,
        lock_timeout: float | None = None,
        refusal: HandoffError | None = None,
    ) -> None:
        #: Set when the settings are unusable: every operation raises it.
        self.refusal = refusal or driver_missing()
        self.conninfo = conninfo
        self.project = project
        self.where = safe_target(conninfo)
        #: The local folder: generated documents, drafts and started sessions stay here.
        self.local = StateStore(folder)
        self.folder = self.local.folder
        if lock_timeout is None:
            lock_timeout = float(os.environ.get("HANDOFF_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT))
        self.lock_timeout = lock_timeout
        self._ready = False
        self._full: tuple[Any, dict[str, Any]] | None = None
        self._key_lock = threading.Lock()
        self._notified: int | None = None
        self._listener: threading.Thread | None = None
        self._listening = False
        #: Notifications of this project received (the watch's evidence, for tests).
        self.notifications = 0
        #: The project's records as parts the kept projections fold (``read_log``).
        self._sealed = PgSealed(self)

    def __repr__(self) -> str:  # never the connection string
        return f"PgStore({self.where!r}, project={self.project!r})"

    def describe(self) -> str:
        return f"{self.where} (project {self.project})"

    # -- connections and errors ------------------------------------------------

    def _busy(self, exc: BaseException, *, unknown: bool = False) -> HandoffError:
        what = _scrub(str(exc), self.conninfo) or type(exc).__name__
        outcome = (
            "the last operation may or may not have landed: retrying it is safe (a commit "
            "retried is idempotent)"
            if unknown
            else "nothing was changed; retry"
        )
        return HandoffError(
            "store_busy",
            f"The database {self.where} could not be used ({what}); {outcome}.",
            store=self.where,
        )

    @contextlib.contextmanager
    def _mapped(self, *, unknown: bool = False) -> Iterator[None]:
        try:
            yield
        except HandoffError:
            raise
        except PoolTimeout as exc:
            raise self._busy(exc) from None
        except (
            pgerrors.LockNotAvailable,
            pgerrors.SerializationFailure,
            pgerrors.DeadlockDetected,
            pgerrors.QueryCanceled,
        ) as exc:
            raise self._busy(exc) from None
        except pgerrors.InsufficientPrivilege as exc:
            raise HandoffError(
                "store_busy",
                f"The database {self.where} refused the operation "
                f"({_scrub(str(exc), self.conninfo)}); nothing was changed. The role needs "
                "the grants of 'handoff store migrate --grant ROLE'.",
                store=self.where,
                reason="privilege",
            ) from None
        except psycopg.OperationalError as exc:
            raise self._busy(exc, unknown=unknown) from None
        except psycopg.Error as exc:
            raise self._busy(exc) from None

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection whose schema was checked (migrated forward if needed)."""
        if self.refusal is not None:
            raise self.refusal
        pool = pool_for(self.conninfo, self.lock_timeout)
        with self._mapped(), pool.connection() as conn:
            if not self._ready:
                self._prepare_schema(conn)
            yield conn
            _RETURNED[conn] = time.monotonic()

    def _prepare_schema(self, conn: psycopg.Connection) -> None:
        version = schema_version(conn)
        conn.commit()
        if version > SCHEMA_VERSION:
            raise newer_schema(version, self.where)
        if version < SCHEMA_VERSION:
            log.info("migrating the handoff schema of %s from %d", self.where, version)
            migrate(conn, self.where)
        self._ready = True

    # -- the Store interface ---------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgTransaction]:
        """Lock the project's row, apply the operation, commit once (all or nothing)."""
        with self.connection() as conn:
            tx: PgTransaction | None = None
            committing = False
            try:
                with conn.transaction():
                    ms = max(1, int(self.lock_timeout * 1000))
                    conn.execute(f"SET LOCAL lock_timeout = {ms}")
                    conn.execute(
                        "INSERT INTO handoff_projects (project) VALUES (%s) "
                        "ON CONFLICT (project) DO NOTHING",
                        (self.project,),
                    )
                    row = conn.execute(
                        "SELECT next_seq FROM handoff_projects WHERE project = %s FOR UPDATE",
                        (self.project,),
                    ).fetchone()
                    tx = PgTransaction(self, conn, int(row[0]))
                    yield tx
                    if tx.dirty:
                        conn.execute(
                            "UPDATE handoff_projects SET next_seq = %s WHERE project = %s",
                            (tx.seq, self.project),
                        )
                        conn.execute(
                            "SELECT pg_notify(%s, %s)",
                            (CHANNEL, _dumps({"project": self.project, "seq": tx.seq})),
                        )
                    committing = True
            except psycopg.OperationalError as exc:
                # Lost during COMMIT: the outcome is unknown (a retried commit is idempotent).
                raise self._busy(exc, unknown=committing and tx is not None and tx.dirty) from None
        if tx is not None and tx.dirty:
            self._saw(tx.seq)

    def snapshot(self) -> PgHistory:
        return PgHistory(self)

    def read(self) -> dict[str, Any]:
        """Every record of the project, as ``{table: {docId: record}}`` with ``_meta``
        (cached until the project's sequence number moves)."""
        with self.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            key = self._query_key(conn)
            if self._full is not None and self._full[0] == key:
                return self._full[1]
            full = self.assemble(conn)
        self._full = (key, full)
        return full

    def generation_records(self) -> list[Any]:
        """Every generation and start record of the project, in document order."""
        with self.connection() as conn:
            cur = conn.execute(
                "SELECT record FROM handoff_generations WHERE project = %s ORDER BY doc",
                (self.project,),
            )
            return [rec for (rec,) in cur]

    def read_log(self) -> PgLog:
        """The current snapshot as the kept projections read it (``pglog.stamped_log``)."""
        return stamped_log(self)[0]

    def stamped_log(self) -> tuple[PgLog, int | None]:
        """``read_log`` and the counter it was read at, from one statement."""
        return stamped_log(self)

    def assemble(self, conn: psycopg.Connection) -> dict[str, Any]:
        def rows(query: str) -> dict[str, Any]:
            cur = conn.execute(query, (self.project,))
            return {str(i): rec for i, (rec,) in enumerate(cur, start=1)}

        seq = self._query_key(conn)
        return {
            "_meta": {
                "1": {
                    "schema": SCHEMA_VERSION,
                    "nextSeq": seq or 1,
                    "store": self.where,
                    "project": self.project,
                }
            },
            "sources": rows(
                "SELECT record FROM handoff_sources WHERE project = %s ORDER BY seq, id"
            ),
            "revisions": rows(
                "SELECT record FROM handoff_revisions WHERE project = %s ORDER BY seq, ref"
            ),
            "scopes": rows("SELECT record FROM handoff_scopes WHERE project = %s ORDER BY scope"),
            "generations": rows(
                "SELECT record FROM handoff_generations WHERE project = %s ORDER BY doc"
            ),
        }

    def exists(self) -> bool:
        """Whether the project has records (an unreachable database counts as yes, so
        that the caller's read reports why)."""
        try:
            return self.checked_state_key() is not None
        except HandoffError:
            return True

    def ensure_folder(self, *, gitignore: bool = False) -> None:
        self.local.ensure_folder(gitignore=gitignore)

    # -- change detection ------------------------------------------------------

    def _query_key(self, conn: psycopg.Connection) -> int | None:
        row = conn.execute(
            "SELECT next_seq FROM handoff_projects WHERE project = %s", (self.project,)
        ).fetchone()
        return int(row[0]) if row else None

    def _saw(self, seq: int | None) -> None:
        with self._key_lock:
            if seq is not None and (self._notified is None or seq > self._notified):
                self._notified = seq

    def checked_state_key(self) -> int | None:
        """The project's next sequence number (moves with every write by any machine);
        an unreachable database raises ``store_busy``."""
        with self.connection() as conn:
            key = self._query_key(conn)
            conn.rollback()
        self._saw(key)
        return key

    def state_key(self) -> int | None:
        """Like ``checked_state_key``, from the notifications when they are being
        listened to (no query), ``None`` when the database cannot be reached now."""
        self._start_listener()
        if self._listening:
            with self._key_lock:
                return self._notified
        try:
            return self.checked_state_key()
        except HandoffError:
            return None

    def _start_listener(self) -> None:
        if self._listener is None and self.refusal is None:
            self._listener = threading.Thread(
                target=self._listen, name="handoff-listen", daemon=True
            )
            self._listener.start()

    def _listen(self) -> None:
        """LISTEN on the change channel; reconnects after the database went away."""
        while True:
            try:
                with psycopg.connect(
                    self.conninfo,
                    autocommit=True,
                    connect_timeout=max(1, int(self.lock_timeout)),
                    application_name="handoff-listen",
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    row = conn.execute(
                        "SELECT next_seq FROM handoff_projects WHERE project = %s",
                        (self.project,),
                    ).fetchone()
                    self._saw(int(row[0]) if row else None)
                    self._listening = True
                    for note in conn.notifies():
                        try:
                            payload = orjson.loads(note.payload)
                        except orjson.JSONDecodeError:
                            continue
                        if isinstance(payload, dict) and payload.get("project") == self.project:
                            self.notifications += 1
                            self._saw(payload.get("seq"))
            except psycopg.Error as exc:
                if self._listening:
                    log.info(
                        "lost the change notifications of %s (%s); reconnecting",
                        self.where,
                        _scrub(str(exc), self.conninfo),
                    )
            self._listening = False
            time.sleep(1.0)


def digest_of(records: list[Any]) -> str:
    """The sha256 of a list of records in canonical JSON (sorted keys)."""
    h = hashlib.sha256()
    for rec in records:
        h.update(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS))
        h.update(b"\n")
    return h.hexdigest()


def _ordered(table: dict[str, Any]) -> list[Any]:
    def key(rec: Any) -> tuple[Any, ...]:
        seq = rec.get("seq") if isinstance(rec, dict) else None
        return (0 if type(seq) is int else 1, seq if type(seq) is int else 0, _dumps(rec))

    return sorted(table.values(), key=key)


def census(full: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Counts and digests of every table of a full view (order-independent)."""
    out = {}
    for name in ("sources", "revisions", "scopes", "generations"):
        records = _ordered(full.get(name) or {})
        out[name] = {"count": len(records), "digest": digest_of(records)}
    return out
