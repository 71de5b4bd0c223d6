"""Which run of a run's family waits for a person: read from the API's result contract, so
A2A and MCP describe the same wait the REST API shows (no SDK imported here)."""

from __future__ import annotations

from typing import Any


def waiting_view(result: dict[str, Any]) -> dict[str, Any] | None:
    """The run (this one, or a child it waits for, depth first) that waits for a person, as
    its result shows it; None when none does."""
    if result.get("pending_approval") or result.get("clarification"):
        return result
    for child in result.get("children") or []:
        found = waiting_view(child)
        if found is not None:
            return found
    return None
