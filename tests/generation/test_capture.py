"""Capture: the text blocks of an answer, without a leading ``<think>`` block."""

from __future__ import annotations

import pytest

from lsp_server.generation.capture import capture_text, strip_thinking

DOC = "## Goal\nShip the login fix.\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (DOC, DOC),
        (f"<think>The user wants the fix.</think>\n\n{DOC}", DOC),
        (f"<think>\nmulti\nline\n</think>{DOC}", DOC),
        (f"  \n<THINK>shouting</Think>\n{DOC}", DOC),  # case-insensitive
        (f"<thinking>Claude-style</thinking>\n{DOC}", DOC),
        (f"<think>\n\n</think>\n\n{DOC}", DOC),  # the empty block of a non-thinking turn
        (f"<think>one</think><think>two</think>\n{DOC}", DOC),
        (f"<think>a</think>{DOC}</think>", f"{DOC}</think>"),  # only the first close ends it
        ("<think>cut off while still reasoning about ## Goal", ""),  # unclosed: all thinking
        (f"{DOC}<think>not leading</think>\n", f"{DOC}<think>not leading</think>\n"),
        (f"Use `<think>` tags?\n{DOC}", f"Use `<think>` tags?\n{DOC}"),
        (
            f"<thinker>a tag of another name</thinker>\n{DOC}",
            f"<thinker>a tag of another name</thinker>\n{DOC}",
        ),
    ],
)
def test_strip_thinking(text: str, expected: str) -> None:
    assert strip_thinking(text) == expected


def test_capture_strips_a_think_block_split_over_text_blocks() -> None:
    blocks = [
        {"type": "thinking", "thinking": "ignored"},
        {"type": "text", "text": "<think>first half"},
        {"type": "text", "text": "second half</think>"},
        {"type": "tool_use", "name": "read", "input": {}},
        {"type": "text", "text": DOC},
    ]
    assert capture_text(blocks) == DOC


def test_capture_of_only_an_unclosed_think_block_is_empty() -> None:
    assert capture_text([{"type": "text", "text": "<think>hmm, the goal is"}]) == ""
