"""The cyclic-GC pause is process-wide, so it is taken only while one command runs."""

from __future__ import annotations

import gc
import threading

from lsp_server.support.gcpause import command_running, gc_paused, pause_held


def test_a_pause_inside_the_only_running_command_turns_the_collector_off_and_back_on():
    assert gc.isenabled()
    with command_running(), gc_paused():
        assert not gc.isenabled() and pause_held()
    assert gc.isenabled() and not pause_held()


def test_no_pause_is_taken_while_another_command_runs():
    other_started, other_may_end = threading.Event(), threading.Event()

    def other_command() -> None:
        with command_running():
            other_started.set()
            other_may_end.wait(10)

    t = threading.Thread(target=other_command)
    t.start()
    try:
        assert other_started.wait(10)
        with command_running(), gc_paused():
            assert gc.isenabled() and not pause_held()
    finally:
        other_may_end.set()
        t.join(10)
    assert gc.isenabled()


def test_a_command_that_starts_during_a_pause_lifts_it_and_the_holder_leaves_it_on():
    with command_running(), gc_paused(promote=True):
        assert not gc.isenabled()
        seen: list[bool] = []
        t = threading.Thread(target=lambda: seen.append(_run_command_and_report()))
        t.start()
        t.join(10)
        assert seen == [True]  # the other command ran with the collector on
        assert gc.isenabled() and not pause_held()
    assert gc.isenabled()


def _run_command_and_report() -> bool:
    with command_running():
        return gc.isenabled()


def test_a_nested_pause_does_not_turn_the_collector_back_on_early():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_switched_off_by_someone_else_is_left_off():
    gc.disable()
    try:
        with gc_paused():
            assert not pause_held()
        assert not gc.isenabled()
    finally:
        gc.enable()
