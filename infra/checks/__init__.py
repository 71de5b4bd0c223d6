"""Everything `agentfn validate` runs on a spec."""
