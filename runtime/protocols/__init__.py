"""Open protocols in front of the runs: A2A (agents as A2A agents) and MCP (agents as tools)."""
