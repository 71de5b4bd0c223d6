"""Emitters for the SAM template and the per-agent state machines."""
