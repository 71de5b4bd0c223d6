"""The RunService the API's routes serve, built once per container from the environment
(or the one `handlers.api.configure` installs).

Its own module so the route modules (handlers.api, api_workflows, api_live, and the
protocols' handlers.a2a) all reach it without importing each other: handlers.api registers
them, they only need the service (and `approve`, the one decision check they share).
"""

from __future__ import annotations

import json
from typing import Any

EDITED_INPUTS_LIMIT_BYTES = 64 * 1024  # decisions live in the run head (DynamoDB 400 KB)

_service: Any = None


def use(service: Any) -> None:
    """Serve this RunService (None: build one from the environment when next asked)."""
    global _service
    _service = service


def the_service() -> Any:
    global _service
    if _service is None:
        from handlers.step import build_service_from_environment

        _service = build_service_from_environment()
    return _service


def approve(run_id: str, body: dict[str, Any], by: str) -> dict[str, Any]:
    """A decision, its edited inputs bounded (REST `/approval` and an A2A data part)."""
    from runtime.errors import InvalidRequest

    if len(json.dumps(body.get("edited_inputs"))) > EDITED_INPUTS_LIMIT_BYTES:
        message = f"edited_inputs must be at most {EDITED_INPUTS_LIMIT_BYTES} bytes as JSON"
        raise InvalidRequest(message, field="edited_inputs")
    result: dict[str, Any] = the_service().approve(run_id, **body, by=by)
    return result
