"""Scheduled entry point of the stale-run sweeper (an EventBridge schedule, see the template).

It finds unfinished runs that lost their owner and resumes or fails them
(runtime/sweeper.py), and returns what it did, which it also logs and counts: the runs it
had to resume or give up on are what the stuck-runs alarm watches (handlers.observe).
"""

from __future__ import annotations

from typing import Any

from handlers import observe

_sweeper: Any = None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    global _sweeper
    with observe.invocation(context):
        if _sweeper is None:
            from handlers.step import build_service_from_environment
            from runtime.sweeper import Sweeper

            _sweeper = Sweeper(build_service_from_environment())
        from handlers.step import flush_live

        try:
            report: dict[str, Any] = _sweeper.sweep().as_dict()
        finally:
            flush_live()  # a run it ends is ended for its live watchers too
        observe.listener().sweep(report)
    return report
