"""Scheduled entry point of the stale-run sweeper (an EventBridge schedule, see the template).

It finds unfinished runs that lost their owner and resumes or fails them
(runtime/sweeper.py), and returns what it did, which Lambda also logs.
"""

from __future__ import annotations

from typing import Any

_sweeper: Any = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _sweeper
    if _sweeper is None:
        from handlers.step import build_service_from_environment
        from runtime.sweeper import Sweeper

        _sweeper = Sweeper(build_service_from_environment())
    report: dict[str, Any] = _sweeper.sweep().as_dict()
    return report
