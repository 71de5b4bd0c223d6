"""Persistence for the loop: every change to a run is one atomic commit.

`_commit` numbers the new messages and events from the head's counters, bumps the version
(the store makes the write conditional on the old one), renews or releases the lease, and
tells the listener about the events once they are durable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.clock import Clock
from runtime.errors import RunError, RunLeased, StateConflict
from runtime.events import Event, EventListener, EventType
from runtime.messages import Message
from runtime.store.base import Commit, RunHead, RunStore


@dataclass
class RunCursor:
    """A run being advanced: its head and messages as this worker last committed them."""

    head: RunHead
    messages: list[Message]
    history: list[Message] = field(default_factory=list)


class Persistence:
    """The commit side of Engine (split out to keep modules small)."""

    store: RunStore
    clock: Clock
    owner: str
    lease_seconds: float
    listener: EventListener | None

    def _acquire(self, head: RunHead) -> RunHead:
        now = self.clock.now()
        if head.lease_owner not in {None, self.owner} and head.lease_until > now:
            raise RunLeased(
                f"run {head.run_id} is being advanced by another worker "
                f"until {head.lease_until:.0f}"
            )
        try:
            return self._commit(head, [], [])
        except StateConflict as exc:
            raise RunLeased(f"run {head.run_id} was taken by another worker") from exc

    def _fail(self, head: RunHead, error: RunError) -> RunHead:
        update = {"status": "failed", "error_code": error.error_code, "error_message": str(error)}
        events: list[tuple[EventType, dict[str, Any]]] = [
            ("run_failed", {"error_code": error.error_code, "error_message": str(error)})
        ]
        return self._commit(head, [], events, update=update, release=True)

    def _commit(
        self,
        head: RunHead,
        messages: list[Message],
        events: list[tuple[EventType, dict[str, Any]]],
        *,
        update: dict[str, Any] | None = None,
        create: bool = False,
        release: bool = False,
    ) -> RunHead:
        """Commit `head` changed by `update` (one copy), with new messages and events."""
        now = self.clock.now()
        numbered = [(head.msg_seq + i, m) for i, m in enumerate(messages)]
        built = [
            Event(seq=head.event_seq + i, type=kind, at=now, run_id=head.run_id, data=data)
            for i, (kind, data) in enumerate(events)
        ]
        lease_owner = None if release or create else self.owner
        new_head = head.model_copy(
            update={
                **(update or {}),
                "version": head.version + 1,
                "updated_at": now,
                "msg_seq": head.msg_seq + len(messages),
                "event_seq": head.event_seq + len(events),
                "lease_owner": lease_owner,
                "lease_until": now + self.lease_seconds if lease_owner else 0.0,
            }
        )
        self.store.commit(
            Commit(
                head=new_head,
                expected_version=None if create else head.version,
                messages=numbered,
                events=built,
            )
        )
        if self.listener is not None:
            for event in built:
                self.listener(event)
        return new_head
