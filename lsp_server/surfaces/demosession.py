"""The agent session ``handoff demo`` hands off: a short pi session written into the
scratch workspace (the client updated, a contract test failing and then passing, work
named as left), and the steps that generate its handoff and check its claims."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Where the demo writes its session, under the workspace.
SESSION_FILE = Path("sessions") / "pi-pets-update.jsonl"

CONTRACT_TEST = '''\
from client.pets_client import list_pets


def test_list_pets_returns_the_list(fake_session):
    assert list_pets(fake_session) == [{"name": "Rex"}]
'''

_REQUEST = (
    "Update the Pets client to openapi.yaml 2.0.0 and keep the contract tests green. "
    "Do not change the API itself."
)
_REPORT = (
    "The client now follows Pets 2.0.0: `list_pets` returns the list itself (2.0.0 "
    "dropped the `pets` wrapper). The contract test passes (1 passed). Remaining: run "
    "the whole contract suite against the staging server."
)
_TEST = "python -m pytest tests/test_contract.py -q"

#: An edit of the generated text that overstates what was done: the checker names both.
OVERSTATED = (
    ("`1 passed in 0.10s`", "`3 passed in 0.10s`"),
    ("### In Progress", "- `client/models.py` (created)\n\n### In Progress"),
)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _agent(text: str = "", call: tuple[str, str, dict[str, Any]] | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if call is not None:
        cid, name, arguments = call
        content.append({"type": "toolCall", "id": cid, "name": name, "arguments": arguments})
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if call else "stop"}


def _result(cid: str, name: str, text: str, error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


def _edit(cid: str, old: str, new: str) -> tuple[str, str, dict[str, Any]]:
    return (cid, "edit", {"path": "client/pets_client.py", "oldText": old, "newText": new})


def _messages() -> list[dict[str, Any]]:
    replaced = "Successfully replaced text in client/pets_client.py."
    return [
        _user(_REQUEST),
        _agent("", ("c1", "read", {"path": "openapi.yaml"})),
        _result("c1", "read", "openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n"),
        _agent("", _edit("c2", "Pets 1.4.0", "Pets 2.0.0")),
        _result("c2", "edit", replaced),
        _agent("", ("c3", "bash", {"command": _TEST})),
        _result(
            "c3",
            "bash",
            "F\nFAILED tests/test_contract.py::test_list_pets_returns_the_list - KeyError: 'pets'\n"
            "1 failed in 0.12s\n\nCommand exited with code 1",
            error=True,
        ),
        _agent("", _edit("c4", '.json()["pets"]', ".json()")),
        _result("c4", "edit", replaced),
        _agent("", ("c5", "bash", {"command": _TEST})),
        _result("c5", "bash", ".\n1 passed in 0.10s"),
        _agent(_REPORT),
    ]


def write_session(root: Path) -> Path:
    """The pi session file (and the contract test it ran) in the workspace ``root``."""
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "test_contract.py").write_text(CONTRACT_TEST, encoding="utf-8")
    path = root / SESSION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "demo-pets-update",
            "timestamp": "2026-12-01T09:00:00.000Z",
            "cwd": str(root),
        }
    ]
    parent = None
    for i, message in enumerate(_messages()):
        entry_id = f"m{i + 1}"
        entries.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-12-01T09:{i // 60:02d}:{i % 60:02d}.000Z",
                "message": message,
            }
        )
        parent = entry_id
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def overstated(document: str) -> str:
    """The generated text edited to claim more than the session shows."""
    for old, new in OVERSTATED:
        document = document.replace(old, new, 1)
    return document


def counts_line(counts: dict[str, int]) -> str:
    order = ("supported", "contradicted", "stale", "dropped", "unverifiable")
    return " · ".join(f"{counts.get(k, 0)} {k}" for k in order)
