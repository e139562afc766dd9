"""The ``handoff`` settings section parsed into a typed value: good values kept, each
bad value named once and replaced by its default, the editors' own keys ignored."""

from __future__ import annotations

import pytest

from lsp_server.model import lifecycle as lc
from lsp_server.settings import HandoffSettings, looks_like_section, parse_settings


def test_defaults_when_nothing_is_sent():
    for raw in (None, {}, {"handoff": {}}):
        settings, problems = parse_settings(raw)
        assert settings == HandoffSettings() and problems == []
    assert settings.state_folder == ".handoff" and settings.log_level == "info"


def test_bare_and_wrapped_sections_read_the_same():
    section = {
        "scope": "feature/x",
        "stateFolder": ".state",
        "logLevel": "DEBUG",
        "generation": {"provider": "command", "command": {"argv": ["llm"]}},
    }
    bare, _ = parse_settings(section)
    wrapped, _ = parse_settings({"handoff": section})
    assert bare == wrapped
    assert bare.scope == "feature/x" and bare.state_folder == ".state"
    assert bare.log_level == "debug" and bare.generation["provider"] == "command"
    config = bare.service_config()
    assert config.scope == "feature/x" and config.state_folder == ".state"
    assert config.generation == {"provider": "command", "command": {"argv": ["llm"]}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("scope", "/abs"),
        ("scope", "a..b"),
        ("scope", ".hidden"),
        ("scope", "x" * 129),
        ("scope", "line\n"),
        ("scope", 5),
        ("stateFolder", "../outside"),
        ("stateFolder", "/etc"),
        ("stateFolder", "C:\\state"),
        ("stateFolder", "."),
        ("stateFolder", ""),
        ("stateFolder", 3),
        ("logLevel", "loud"),
        ("logLevel", 10),
        ("generation", "openai"),
        ("generation", [1]),
    ],
)
def test_each_bad_value_is_named_and_defaulted(key, value):
    settings, problems = parse_settings(
        {key: value, "scope": "kept"} if key != "scope" else {key: value}
    )
    (problem,) = problems
    assert problem.startswith(key)
    defaults = HandoffSettings()
    field = {"scope": "scope", "stateFolder": "state_folder", "logLevel": "log_level"}.get(key)
    if field:
        assert getattr(settings, field) == getattr(defaults, field)
    else:
        assert settings.generation == {}
    if key != "scope":
        assert settings.scope == "kept"  # a bad key does not cost the good ones


def test_the_section_itself_must_be_an_object():
    settings, problems = parse_settings({"handoff": "yes"})
    assert settings == HandoffSettings() and len(problems) == 1


def test_editor_keys_are_not_ours_to_judge():
    settings, problems = parse_settings({"server": {"python": "/usr/bin/python3"}, "trace": "x"})
    assert problems == [] and settings == HandoffSettings()
    assert not looks_like_section({"server": {}}) and looks_like_section(
        {"handoff": {"scope": "a"}}
    )


@pytest.mark.parametrize(
    "scope", ["main", "feature/x-1", "a.b_c", "/x", ".x", "a..b", "", "x" * 129]
)
def test_scope_rule_matches_the_lifecycle(scope):
    ours = parse_settings({"scope": scope})[0].scope == scope
    theirs = bool(lc.SCOPE_RE.match(scope))
    assert ours == theirs or scope == ""  # an empty scope setting means "none"


def test_log_levels_are_loggings_levels():
    import logging

    from lsp_server.settings import LOG_LEVELS

    assert {k: logging.getLevelName(v) for k, v in LOG_LEVELS.items()} == {
        "error": "ERROR",
        "warning": "WARNING",
        "warn": "WARNING",
        "info": "INFO",
        "debug": "DEBUG",
        "trace": "DEBUG",
    }
