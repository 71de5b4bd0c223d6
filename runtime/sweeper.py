"""The stale-run sweeper: finds unfinished runs that nobody is moving forward and settles them.

A run should always have an owner: a worker holding its lease, or a live Step Functions
execution (advancing it, or waiting for a person). Owners can be lost: an execution that
failed where the run's status could not be updated (throttled to the end), a start that
never happened, a resume (SendTaskSuccess) that failed after the decision was recorded.
Every unfinished run's head says when it is worth a look if nothing changes it
(`sweep_after`, in the sparse `sweep` index), so the sweeper reads only runs that are due,
never the table.

For each due run:
- someone holds a live lease → leave it;
- its execution is running: if a decision was recorded but the execution still waits on
  the token (the resume was lost), resume it again; otherwise it is healthy, look later;
- no live execution → start the next one (the run resumes exactly where it is: advancing,
  or waiting the rest of its wait), or, after MAX_SWEEPS restarts, fail it `STRANDED` so a
  run can never bounce forever.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.engine.commits import STALE_AFTER_SECONDS
from runtime.errors import StateConflict
from runtime.observability import logs
from runtime.store.base import TERMINAL

if TYPE_CHECKING:
    from runtime.service import RunService
    from runtime.store.base import RunHead

log = logging.getLogger("agentfn.sweeper")

MAX_SWEEPS = 3


@dataclass
class SweepReport:
    """What one sweep did, by run id (returned by the handler and logged)."""

    checked: int = 0
    healthy: int = 0
    resumed: list[str] = field(default_factory=list)  # a new execution was started
    resent: list[str] = field(default_factory=list)  # a lost resume was sent again
    failed: list[str] = field(default_factory=list)  # given up: STRANDED
    errors: list[str] = field(default_factory=list)  # could not be settled this time

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Sweeper:
    def __init__(self, service: RunService):
        self.service = service
        self.engine = service.engine

    def sweep(self, limit: int = 500, *, now: float | None = None) -> SweepReport:
        """One pass over the due runs (`now`: as if at that time; operators and tests)."""
        report = SweepReport()
        now = self.engine.clock.now() if now is None else now
        for run_id in self.engine.store.due_runs(now, limit):
            report.checked += 1
            try:
                with logs.scope(run_id):  # its keys on the lines about it (deployed)
                    self._settle(run_id, now, report)
            except StateConflict:
                report.healthy += 1  # it changed while we looked: someone is on it
            except Exception:  # one bad run must not stop the sweep
                log.exception("could not settle run %s", run_id)
                report.errors.append(run_id)
        log.info("sweep: %s", report.as_dict())
        return report

    def _settle(self, run_id: str, now: float, report: SweepReport) -> None:
        head = self.engine.store.load_head(run_id)
        logs.bind_head(head)
        if head.status in TERMINAL or head.sweep_after > now:
            report.healthy += 1
            return
        if head.lease_owner is not None and head.lease_until > now:
            report.healthy += 1
            return
        execution = self.service.execution_status(head)
        if execution == "RUNNING":
            lost_resume = head.status == "running" and bool(head.task_token)
            if lost_resume and self.service.resume(head):
                self._note(head, "resent", "the decision was recorded; resumed the run again")
                report.resent.append(run_id)
                return
            self.engine.postpone_sweep(run_id, now + STALE_AFTER_SECONDS)
            report.healthy += 1
            return
        if head.sweeps >= MAX_SWEEPS:
            message = (
                f"the run lost its execution {head.sweeps + 1} times (last: "
                f"{execution or 'never started'}); it was stopped rather than restarted again"
            )
            failed = self.engine.force_fail(run_id, "STRANDED", message)
            self.service.notify(failed)
            report.failed.append(run_id)
            return
        restarted = self.engine.next_generation(run_id, swept=True)
        if self.service.start_execution(restarted):
            why = f"its execution was {execution or 'never started'}; started a new one"
            self._note(restarted, "resumed", why)
            report.resumed.append(run_id)
        else:
            report.errors.append(run_id)

    def _note(self, head: RunHead, action: str, reason: str) -> None:
        """Leave the sweeper's action in the run's events, for whoever looks at it later."""
        data = {"action": action, "reason": reason}
        with contextlib.suppress(StateConflict):  # the run moved on: not worth a retry
            self.engine.record_event(head.run_id, "run_swept", data)
