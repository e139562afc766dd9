"""The MCP server: the registry's commands as tools, resources and prompts."""
