"""The RunService the API's routes serve, built once per container from the environment
(or the one `handlers.api.configure` installs).

Its own module so the route modules (handlers.api, api_workflows, api_live) all reach it
without importing each other: handlers.api registers them, they only need the service.
"""

from __future__ import annotations

from typing import Any

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
