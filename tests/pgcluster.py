"""A throwaway PostgreSQL cluster for the tests: ``initdb`` into a temp folder and
``pg_ctl`` on a free loopback port, with an owner role (migrates) and an application
role that has only the grants of ``handoff store migrate --grant``."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

APP_ROLE = "handoff_app"
APP_PASSWORD = "app-" + uuid.uuid4().hex[:12]


def server_bindir() -> Path | None:
    """The folder of ``initdb``/``pg_ctl``/``postgres``: pg_config's bindir, PATH, or
    Debian's /usr/lib/postgresql/<n>/bin (newest first)."""
    candidates: list[Path] = []
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).parent)
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
    candidates += [Path(p) for p in reversed(debian)]
    for folder in candidates:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """One PostgreSQL server in a temp folder, stopped and removed by ``close``."""

    def __init__(self, bindir: Path, *, fsync: bool = False) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="handoff-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.fsync = fsync
        # initdb refuses to run as root: run the server as the postgres user then.
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pw = None
            if pw is None:
                raise RuntimeError("running as root and there is no 'postgres' user to run the server")
            self.user = "postgres"
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self._start_on_a_free_port()
        with self.connect() as conn:
            conn.execute("CREATE DATABASE handoff")
        self.owner_url = self.url("postgres")
        with psycopg.connect(self.owner_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(APP_ROLE), sql.Literal(APP_PASSWORD)
                )
            )
        self.app_url = self.url(APP_ROLE, APP_PASSWORD)

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bindir / tool), *args],
            check=True,
            capture_output=True,
            text=True,
            user=self.user,
            cwd=self.root,
            timeout=120,
        )

    def url(self, user: str, password: str | None = None, db: str = "handoff") -> str:
        """Over TCP on the loopback with a password; without one, the owner over the
        cluster's Unix socket (trusted only there)."""
        if password is None:
            return f"postgresql://{user}@/{db}?host={self.root}&port={self.port}"
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{db}"

    def connect(self, db: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(self.url("postgres", db=db), autocommit=True)

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if not self.fsync:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", opts,
                  "-w", "-t", "60", "start")

    def _start_on_a_free_port(self, attempts: int = 5) -> None:
        """Start the server, on another free port if the one picked was taken meanwhile
        (test workers running side by side each start a cluster of their own)."""
        for attempt in range(attempts):
            try:
                self.start()
                return
            except subprocess.CalledProcessError:
                if attempt == attempts - 1:
                    raise
                self.port = free_port()

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def migrated(cluster: Cluster) -> None:
    """Schema at the current version, the application role granted."""
    from lsp_server.store.pgschema import grant, migrate

    with psycopg.connect(cluster.owner_url) as conn:
        migrate(conn, "test")
        grant(conn, APP_ROLE)
