"""Print a Markdown transcript of a real session through ``handoff mcp`` (used for
docs/mcp.md): ``uv run python -m tests.mcp.transcript``.

Two agents, each with its own ``handoff mcp`` process over stdio on one scratch workspace:
the first records its work and commits a handoff; the second takes over with the
``continue`` prompt, continues, acknowledges and records the outcome."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .support import ALL_CHECKS, CONTRACT, SCOPE, connect, work

LONG = 72


def shorten(value: Any, limit: int = 2, depth: int = 0) -> Any:
    """Long strings cut, values nested deeper than ``limit`` elided, for reading."""
    if isinstance(value, str):
        return value if len(value) <= LONG else value[: LONG - 1] + "…"
    if isinstance(value, dict):
        if depth >= limit:
            return "{…}"
        return {k: shorten(v, limit, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= limit and value:
            return ["…"]
        return [shorten(v, limit, depth + 1) for v in value]
    return value


def block(value: Any) -> str:
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.append(text + "\n")

    async def tool(self, who: str, client, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, args)
        text = result.content[0].text.split("\n\n", 1)[0]
        limit = 1 if "prepared" in args else 5
        self.say(f"**{who}** → `{name}`\n\n{block(shorten(args, limit))}")
        mark = " (isError: true)" if result.is_error else ""
        quoted = "\n".join("> " + line for line in text.splitlines())
        self.say(
            f"← result{mark}; its text begins:\n\n{quoted}\n\nstructuredContent:\n\n"
            + block(shorten(result.structured_content))
        )
        return result.structured_content


async def run(root: Path) -> str:
    (root / "client").mkdir(parents=True)
    (root / "openapi.yaml").write_text("openapi: 3.1.0\ninfo: {title: Pets, version: 2.0.0}\n")
    (root / "client" / "pets_client.py").write_text(
        "def list_pets(s):\n    return s.get('/pets')\n"
    )
    t = Transcript()
    t.say(
        f"Workspace: a scratch folder with `openapi.yaml` and `client/pets_client.py`; scope `{SCOPE}`."
    )
    t.say("### The first agent hands off")
    async with connect(root, "--scope", SCOPE) as first:
        info = first.server_info
        t.say(
            f"Connected to `{info.name}` {info.version} over stdio (protocol {first.protocol_version}); "
            f"{len((await first.list_tools()).tools)} tools."
        )
        contract = await t.tool("agent 1", first, "handoff_record_contract", CONTRACT)
        await t.tool("agent 1", first, "handoff_record_work", work(contract["source"]))
        current = await t.tool("agent 1", first, "handoff_current_work", {"scope": SCOPE})
        committed = await t.tool(
            "agent 1", first, "handoff_commit", {"scope": SCOPE, "prepared": current["prepared"]}
        )
    t.say("### The second agent takes over (another `handoff mcp` process)")
    async with connect(root, "--scope", SCOPE) as second:
        prompt = await second.get_prompt("continue", {"scope": SCOPE})
        t.say(
            "**user** picks the prompt `continue`; the agent receives:\n\n"
            + "\n".join("> " + line for line in prompt.messages[0].content.text.splitlines())
        )
        latest = await t.tool(
            "agent 2", second, "handoff_continue", {"scope": SCOPE, "mode": "latest"}
        )
        t.say("The agent checks `client/pets_client.py`, the workspace and its permissions, then:")
        await t.tool(
            "agent 2",
            second,
            "handoff_acknowledge",
            {"scope": SCOPE, "mode": "latest", "status": "accepted", "checks": ALL_CHECKS},
        )
        ack = await t.tool(
            "agent 2",
            second,
            "handoff_acknowledge",
            {
                "scope": SCOPE,
                "mode": "exact",
                "revision": latest["selected"],
                "status": "accepted",
                "checks": ALL_CHECKS,
                "actor": "agent 2",
            },
        )
        await t.tool(
            "agent 2",
            second,
            "handoff_record_outcome",
            {
                "scope": SCOPE,
                "status": "succeeded",
                "summary": "contract tests pass against the regenerated client",
                "checks": [{"name": "contract tests", "status": "passed"}],
                "receipt": ack["receipt"],
            },
        )
        read = await second.read_resource(f"handoff://scope/{SCOPE}/continuity")
        t.say(
            f"**agent 2** reads the resource `handoff://scope/{SCOPE}/continuity`:\n\n"
            + "```markdown\n"
            + read.contents[0].text.strip()
            + "\n```"
        )
    assert committed["revision"] == latest["selected"]
    return "\n".join(t.lines)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="handoff-mcp-transcript-"))
    try:
        print(asyncio.run(run(root / "ws")))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
