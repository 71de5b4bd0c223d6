"""MCP servers shipped with the project: runnable demos and test fixtures for `mcp:` tools."""
