"""An agent reading the continuity resource over MCP never gets a file a template
override links to (issue 34, item 2): a real ``handoff mcp`` process."""

from __future__ import annotations

from lsp_server.surfaces.mcp.resources import resource_uri

from .support import CONTRACT, SCOPE, call, connect


async def test_continuity_resource_never_serves_a_linked_template(workspace):
    folder = workspace / ".handoff" / "templates"
    async with connect(workspace) as client:
        await call(client, "handoff_record_contract", CONTRACT)
        folder.mkdir()
        (folder / "continuity.md.j2").symlink_to("/proc/self/environ")
        read = await client.read_resource(resource_uri(SCOPE, "continuity"))
    text = read.contents[0].text
    assert text.startswith(f"# Work continuity: {SCOPE}")
    assert "HANDOFF_WATCH_SECONDS" not in text and "HOME=" not in text
