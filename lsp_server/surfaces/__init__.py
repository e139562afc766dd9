"""The ways in: the language server (``lsp``), the MCP server (``mcp``), the command
line (``cli``), the demo, and the in-process service the CLI and the tests use."""
