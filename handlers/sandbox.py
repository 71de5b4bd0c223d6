"""The sandbox function of `code_execute` (deployed): no IAM permissions, in a VPC without
egress. It only runs the code it is sent, with the runner's limits, and answers."""

from __future__ import annotations

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from runtime.tools.sandbox.runner import run_code

    return run_code(
        str(event.get("language")),
        str(event.get("code") or ""),
        timeout=float(event.get("timeout") or 30),
        memory_mb=int(event.get("memory_mb") or 256),
    )
