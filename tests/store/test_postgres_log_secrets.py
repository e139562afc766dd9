"""No password of a connection string reaches a log line from any library (issue 34,
item 6): psycopg_pool logs the string it failed with once per attempt, and a string
that does not parse cannot be shortened to its target. Ten malformed strings through
the real CLI (stderr and stdout read whole), and the pool's own logger directly."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.store.postgres import PasswordFilter, scrub_passwords

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "S3cretPw0rd"

MALFORMED = [
    f"postgresql://u:{PASSWORD}@[badhost:5432/db",
    f"postgresql://u:{PASSWORD}@[::1/db",
    f"postgres://u:{PASSWORD}@host:notaport/db",
    f"postgresql://u:{PASSWORD}@host:5432/db?sslmode=bogus",
    f"postgresql://u:{PASSWORD}@host:5432/db?unknown_option=1",
    f"postgresql://u:{PASSWORD}@ho st:5432/db",
    f"postgresql://u:{PASSWORD}@%zz:5432/db",
    f"host=[x port=5432 password={PASSWORD} dbname=db",
    f"host=127.0.0.1 port=1 password='{PASSWORD}' dbname=db connect_timeout=1",
    f"postgresql://u:pa@{PASSWORD}@127.0.0.1:1/db?connect_timeout=1",
]


@pytest.mark.parametrize("conninfo", MALFORMED, ids=range(len(MALFORMED)))
def test_no_password_in_any_output_of_a_failing_store(conninfo, tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "lsp_server.surfaces.cli.main", "status", "--workspace", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "HANDOFF_STORE": conninfo,
            "HANDOFF_PROJECT": "p",
            "HANDOFF_LOCK_TIMEOUT": "1",
        },
    )
    out = run.stdout + run.stderr
    assert out.strip(), "the failure says something"
    assert PASSWORD not in out, out[-2000:]


def test_the_pools_own_logger_is_filtered(caplog):
    caplog.set_level(logging.WARNING)
    logger = logging.getLogger("psycopg.pool")
    assert any(isinstance(f, PasswordFilter) for f in logger.filters)
    for conninfo in MALFORMED:
        logger.warning("error connecting in %r: %s", "handoff", f'in URI: "{conninfo}"')
    assert caplog.records and all(PASSWORD not in r.getMessage() for r in caplog.records)


def test_scrub_keeps_what_is_not_a_password():
    assert scrub_passwords("postgresql://u@host:5432/db") == "postgresql://u@host:5432/db"
    assert scrub_passwords("no connection string here") == "no connection string here"
    assert scrub_passwords("postgresql://u:p@ss@h/db") == "postgresql://u:***@h/db"
