"""Everything `agentfn validate` runs."""
