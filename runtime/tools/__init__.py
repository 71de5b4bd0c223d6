"""Tools an agent can call: a small protocol, its implementations, and the toolset builder."""
