"""`agentfn eval`: YAML test cases for agents, run on the embedded stack (issue #30)."""
