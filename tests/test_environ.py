"""``support.environ_get``: what ``os.environ.get`` answers, variables set at run time included."""

from __future__ import annotations

import os

from lsp_server.support import environ_get
from lsp_server.support.faults import ENV, pause_point


def test_environ_get_answers_as_os_environ_get(monkeypatch):
    name = "HANDOFF_TEST_ENVIRON_GET"
    monkeypatch.delenv(name, raising=False)
    assert environ_get(name) is None and environ_get(name, 7) == 7
    monkeypatch.setenv(name, "")
    assert environ_get(name, 7) == "" == os.environ.get(name, 7)
    os.environ[name] = "é value"
    assert environ_get(name) == "é value" == os.environ.get(name)
    del os.environ[name]
    assert environ_get(name, "gone") == "gone"


def test_a_pause_point_is_passed_by_while_its_variable_names_another_point(monkeypatch):
    monkeypatch.setenv(ENV, "no.such.point")
    pause_point("tx.locked")  # returns: only the point named stops the process
    monkeypatch.delenv(ENV)
    pause_point("tx.locked")
