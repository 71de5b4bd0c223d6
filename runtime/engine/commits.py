"""Persistence for the loop: every change to a run is one atomic commit.

`_commit` numbers the new messages and events from the head's counters, bumps the version
(the store makes the write conditional on the old one), renews, releases or keeps the lease,
sets when the stale-run sweeper should look at the run, and tells the listener about the
events once they are durable.

Who holds the lease: only a worker advancing the run. A person's decision (approve, reply,
cancel) and the wait task storing its token commit with the lease as they found it, so
the worker that resumes the run is never locked out by the API's own commit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from runtime.clock import Clock
from runtime.errors import RunError, RunLeased, StateConflict
from runtime.events import EventListener, EventType, made_event
from runtime.messages import AssistantMessage, Message
from runtime.store.base import TERMINAL, Commit, RunHead, RunStore
from runtime.structs import dump, encode, load, replace

RESULT_INLINE_BYTES = 16 * 1024

#: How long after its last sign of life (a commit, or the end of the wait it is in) a run
#: that is not finished becomes worth a look by the sweeper.
STALE_AFTER_SECONDS = 600.0


#: A wait ends at least this long before the run's data expires (TTL and S3 lifecycle).
DATA_MARGIN_SECONDS = 3600.0


def wait_until(head: RunHead, wanted: float) -> float:
    """When a wait for a person ends: as asked, but never after the run's data expires, so a
    run can never be resumed onto a conversation its retention has deleted (a wait cut
    short ends like any timed-out wait)."""
    return min(wanted, head.expires_at - DATA_MARGIN_SECONDS)


def sweep_after(head: RunHead) -> float:
    """When the sweeper should look at this head if nothing has changed it by then."""
    if head.status in TERMINAL:
        return 0.0
    if head.status == "awaiting_approval" and head.pending_approval:
        return min(p.expires_at for p in head.pending_approval) + STALE_AFTER_SECONDS
    if head.status == "awaiting_input" and head.clarification is not None:
        return head.clarification.expires_at + STALE_AFTER_SECONDS
    return max(head.lease_until, head.updated_at) + STALE_AFTER_SECONDS


class BudgetSpent(Exception):
    """The advance's time budget ran out: release the run for the next invocation."""


@dataclass
class RunCursor:
    """A run being advanced: its head and messages as this worker last committed them."""

    head: RunHead
    messages: list[Message]
    history: list[Message] = field(default_factory=list)
    deadline: float | None = None  # clock.monotonic() when the advance must stop
    discovered: set[str] = field(default_factory=set)  # agents whose MCP tools are open
    base: int = 0  # the number of messages[0] (a compacted run loads from its summary point)
    # answers per agent in messages[:_scanned] of the list _counted_in (answers_by)
    _counted: dict[str, int] = field(default_factory=dict)
    _scanned: int = 0
    _counted_in: list[Message] | None = None

    @property
    def agent(self) -> str:
        """The agent acting now (the last handoff's target, else the run's own)."""
        return self.head.active_agent

    def answers_by(self, agent: str) -> int:
        """How many answers `agent` gave in `messages` (the scripted provider's index). Counted
        incrementally: a turn looks only at the messages added since the last count, so it
        stays constant-time however long the run (a new or shortened list is counted anew)."""
        if self._counted_in is not self.messages or self._scanned > len(self.messages):
            self._counted, self._scanned, self._counted_in = {}, 0, self.messages
        entry = self.head.agent
        for message in self.messages[self._scanned :]:
            if isinstance(message, AssistantMessage):
                who = message.agent or entry
                self._counted[who] = self._counted.get(who, 0) + 1
        self._scanned = len(self.messages)
        return self._counted.get(agent, 0)


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
        try:  # a task token is spent once its wait has resumed the run
            return self._commit(head, [], [], update={"task_token": None})
        except StateConflict as exc:
            raise RunLeased(f"run {head.run_id} was taken by another worker") from exc

    def _store_result(self, head: RunHead, result: Any, update: dict[str, Any]) -> None:
        """The final result on the head when small, else in the blob store under a key of
        this attempt (a losing writer never overwrites the winner's)."""
        import json

        body = json.dumps(result, ensure_ascii=False, default=str)
        if len(body.encode()) > RESULT_INLINE_BYTES:
            ref = f"results/{head.run_id}.{uuid.uuid4().hex[:12]}.json"
            self.store.blobs.put(ref, body.encode())
            update["result_ref"] = ref
        else:
            update["result"] = result

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
        keep_lease: bool = False,
    ) -> RunHead:
        """Commit `head` changed by `update` (one copy), with new messages and events.

        The lease is taken (renewed) by default; `release` drops it; `keep_lease` leaves it
        as it was (decisions from outside the loop). Every secret this process has resolved
        is redacted, in every spelling, from what is committed: nothing written to the store
        (so nothing a model, an event reader or a later run sees) can carry one."""
        messages, events, update = _redacted(messages, events, update)
        now = self.clock.now()
        numbered = [(head.msg_seq + i, m) for i, m in enumerate(messages)]
        run_id, first = head.run_id, head.event_seq
        built = [
            made_event(first + i, kind, now, run_id, data) for i, (kind, data) in enumerate(events)
        ]
        if keep_lease:
            lease = {"lease_owner": head.lease_owner, "lease_until": head.lease_until}
        elif release or create:
            lease = {"lease_owner": None, "lease_until": 0.0}
        else:
            lease = {"lease_owner": self.owner, "lease_until": now + self.lease_seconds}
        new_head = replace(
            head,
            **{
                **(update or {}),
                "version": head.version + 1,
                "updated_at": now,
                "msg_seq": head.msg_seq + len(messages),
                "event_seq": head.event_seq + len(events),
                **lease,
            },
        )
        if update is None or "sweep_after" not in update:
            new_head.sweep_after = sweep_after(new_head)
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


def _redactor() -> Any:
    """The process's Redactor (runtime.secrets, imported on first use)."""
    global _redactor
    from runtime.secrets import redactor

    _redactor = redactor  # every later call goes straight to it
    return redactor()


def _redacted(
    messages: list[Message],
    events: list[tuple[EventType, dict[str, Any]]],
    update: dict[str, Any] | None,
) -> tuple[list[Message], list[tuple[EventType, dict[str, Any]]], dict[str, Any] | None]:
    """Messages, events and head changes with every resolved secret redacted. Costs nothing
    until a secret has been resolved, then one search per JSON text that is committed."""
    secrets = _redactor()
    if not secrets:
        return messages, events, update
    clean: list[Message] = []
    for message in messages:
        text = encode(message)
        if secrets.redact_text(text) is text:  # one search: nothing to redact
            clean.append(message)
        else:  # redact the strings, never the JSON around them
            clean.append(load(type(message), secrets.redact(dump(message))))
    return (
        clean,
        [(kind, secrets.redact(data)) for kind, data in events],
        secrets.redact(update) if update else update,
    )
