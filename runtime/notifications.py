"""EventBridge notifications of a run's changes that someone may have to act on.

Approval requested, input requested (a clarification: a triggered run has no caller
waiting for its answer, so this event is how someone learns of the question) and run
finished; a finished child wakes its parent, a finished workflow step its workflow.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from runtime.store.base import TERMINAL, RunHead
from runtime.structs import dump

log = logging.getLogger("agentfn.service")


class Notifications:
    events: Any
    stack: Any

    if TYPE_CHECKING:  # RunService's, from its other bases

        def wake_parent(self, child: RunHead) -> None: ...
        def send_token(self, token: str, run_id: str | None) -> bool: ...

    def _summary(self, head: RunHead) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "run_id": head.run_id,
            "agent": head.agent,
            "session_id": head.session_id,
            "status": head.status,
        }
        if head.trigger is not None:
            summary["trigger"] = dict(head.trigger)
        return summary

    def notify(self, head: RunHead) -> None:
        """EventBridge: approval requested and run finished, so approvers can be notified; a
        finished child wakes its parent."""
        if head.status in TERMINAL:
            self.wake_parent(head)
            if head.workflow_token:  # a workflow's step run: its task waits for this end
                self.send_token(head.workflow_token, head.run_id)
        if self.events is None:
            return
        if head.status == "awaiting_approval":
            kind = "Approval Requested"
        elif head.status == "awaiting_input":  # a triggered run has no caller to ask
            kind = "Input Requested"
        elif head.status in TERMINAL:
            kind = "Run Finished"
        else:
            return
        detail = self._summary(head)
        if head.pending_approval:
            detail["pending_approval"] = [dump(p) for p in head.pending_approval]
        if head.error_code:
            detail["error_code"] = head.error_code
        if head.status == "awaiting_input" and head.clarification is not None:
            detail["clarification"] = dump(head.clarification)
        try:
            self.events.put_events(
                Entries=[
                    {
                        "Source": "agentfn",
                        "DetailType": kind,
                        "Detail": json.dumps(detail),
                        "EventBusName": self.stack.event_bus,
                    }
                ]
            )
        except Exception as exc:  # notification is best effort; the run state is the truth
            log.warning("put_events failed: %s", type(exc).__name__)
