"""``handoff.continue`` of an unchanged store is answered on the server's event loop
(``HandoffLanguageServer._answer_quick``) once its evidence is settled; a real server
process still re-checks the cited evidence on every call: an artifact rewritten in the
same second, same size, reads as changed at once, and as intact once put back."""

from __future__ import annotations

import os
import time

from ..helpers import SCOPE
from .rawclient import RawClient

ARTIFACT = "client/pets_client.py"


def run(client: RawClient, command: str, arg: dict) -> dict:
    reply = client.response(client.execute(command, arg))
    assert "error" not in reply, reply
    return reply["result"]


def unreadable(client: RawClient) -> list[str]:
    out = run(client, "handoff.continue", {"scope": SCOPE, "mode": "latest"})
    return [u["reason"] for u in out["unreadableEvidence"]]


def test_continue_answered_on_the_loop_still_sees_evidence_change(workspace):
    target = workspace / ARTIFACT
    original = target.read_bytes()
    client = RawClient()
    try:
        client.initialize(workspace)
        contract = run(client, "handoff.contract", {
            "scope": SCOPE, "objective": "o", "inScope": ["a"], "acceptance": ["b"]})["source"]
        run(client, "handoff.recordWork", {
            "scope": SCOPE, "disposition": "continuable",
            "state": {"text": "t", "citations": [{"kind": "artifact", "path": ARTIFACT}]},
            "nextActions": [{"text": "n", "citations": [{"kind": "source", "ref": contract}]}]})
        prepared = run(client, "handoff.handoffCurrentWork", {"scope": SCOPE})["prepared"]
        run(client, "handoff.commit", {"scope": SCOPE, "prepared": prepared})
        # Let the artifact settle (older than the racy window), so its hash is kept and
        # the calls below can be answered on the loop.
        settled_at = os.stat(target).st_ctime + 2.5
        time.sleep(max(0.0, settled_at - time.time()))
        assert unreadable(client) == []  # the worker path: reads and keeps the hash
        assert unreadable(client) == []  # the loop: opened and checked, not read
        target.write_bytes(original.replace(b"pets", b"cats"))  # same size, same second
        assert unreadable(client) == ["changed"]
        target.write_bytes(original)
        assert unreadable(client) == []
        os.unlink(target)
        assert unreadable(client) == ["missing"]
        assert client.shutdown() == 0
    finally:
        client.kill()
