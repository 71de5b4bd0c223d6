"""Which run a log line is about: `run_id`, `agent`, `session_id` and `step` on every line
logged while a run is handled, and who each run is for the metrics.

The runtime keeps the keys here and pushes the current run's to a *sink*: the Lambda
handlers make it their Powertools Logger's `append_keys` (handlers/observe.py), so every line
of every `agentfn.*` logger, the engine's included, carries them as JSON keys. What is known
of a run comes from the heads the service loads (`bind_head`: the service calls it before it
works on a run) and from the events the engine commits (`RunContext.event`, called by the
metrics listener): a run's start names its agent and session, a step its turn, a handoff the
agent that acts now. Each committed event is also a log line (`agentfn.events`): a run's
milestones at INFO, every other event at DEBUG, with its (already redacted) data.

Off costs nothing: until a handler turns the context on (`CONTEXT.enable`), every function
here returns at once and nothing is kept (tests, `agentfn run`, `agentfn dev`). On, it is
one small dict update per committed event. Lambda gives a container one invocation at a
time, so one current run per process is the truth there; a process that handles several
runs at once never turns it on.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.events import Event
    from runtime.store.base import RunHead

log = logging.getLogger("agentfn.events")

#: The keys a log line carries while a run is handled (`step` is the run's turn).
LOG_KEYS = ("run_id", "agent", "session_id", "step")
#: Events logged at INFO (the others at DEBUG): a run's milestones, a few per run.
MILESTONES = frozenset(
    {
        "run_started",
        "approval_requested",
        "approval_decided",
        "clarification_requested",
        "clarification_answered",
        "handoff",
        "escalation",
        "run_completed",
        "run_failed",
        "run_swept",
    }
)
#: Runs remembered per process (a team's advance touches its children too): bounded.
REMEMBERED_RUNS = 64

Append = Callable[..., None]
Remove = Callable[[Iterable[str]], None]


@dataclass
class RunKeys:
    """What this process knows of one run. `agent` is the run's own (entry) agent, what its
    run counts are kept under; `active` the agent acting now (a handoff changes it), what its
    model calls, tools and log lines are kept under."""

    run_id: str
    agent: str | None = None
    active: str | None = None
    session_id: str | None = None
    step: int | None = None

    @property
    def acting(self) -> str | None:
        return self.active or self.agent

    def for_logs(self) -> dict[str, Any]:
        keys = {
            "run_id": self.run_id,
            "agent": self.acting,
            "session_id": self.session_id,
            "step": self.step,
        }
        return {k: v for k, v in keys.items() if v is not None}


class RunContext:
    """The runs this process handles and the one it handles now (see the module)."""

    def __init__(self) -> None:
        self.enabled = False
        self._append: Append | None = None
        self._remove: Remove | None = None
        self._runs: OrderedDict[str, RunKeys] = OrderedDict()
        self._current: str | None = None
        self._pushed: dict[str, Any] = {}
        self._lock = threading.Lock()

    def enable(self, append: Append | None = None, remove: Remove | None = None) -> None:
        """Start keeping runs; with a sink, push the current run's keys to it."""
        self.enabled = True
        if append is not None:
            self._append, self._remove = append, remove

    def disable(self) -> None:
        self.enabled = False
        self._append = self._remove = None
        self.forget()

    def forget(self) -> None:
        """A new invocation: no run is current (what is known of runs is kept)."""
        with self._lock:
            self._current = None
            self._pushed = {}

    def of(self, run_id: str) -> RunKeys | None:
        return self._runs.get(run_id)

    def head(self, head: RunHead) -> None:
        """A run head this process is about to work on: it becomes the current run."""
        if not self.enabled:
            return
        with self._lock:
            keys = self._keys(head.run_id)
            keys.agent, keys.active = head.agent, head.active_agent
            keys.session_id, keys.step = head.session_id, head.turn
            self._push(keys)

    def event(self, event: Event) -> None:
        """A committed event: what it says of its run, and its run becomes the current one."""
        if not self.enabled:
            return
        data = event.data
        with self._lock:
            keys = self._keys(event.run_id)
            if event.type == "run_started":
                keys.agent = str(data.get("agent") or keys.agent)
                keys.active = str(data.get("active_agent") or keys.agent)
                keys.session_id = str(data.get("session_id") or keys.session_id)
                keys.step = 0
            elif event.type in ("handoff", "escalation") and data.get("to"):
                keys.active = str(data["to"])
            turn = data.get("turn")
            if isinstance(turn, int) and not isinstance(turn, bool):
                keys.step = turn
            self._push(keys)
        level = logging.INFO if event.type in MILESTONES else logging.DEBUG
        if log.isEnabledFor(level):  # committed data: every secret already redacted
            log.log(level, "%s (event %d)", event.type, event.seq, extra={"event_data": data})

    @contextmanager
    def scope(self, run_id: str | None) -> Iterator[None]:
        """Handle `run_id` in this block (its known keys on the lines), none after it."""
        if not self.enabled or not run_id:
            yield
            return
        with self._lock:
            self._push(self._keys(run_id))
        try:
            yield
        finally:
            with self._lock:
                self._current = None
                self._push_keys({})

    def _keys(self, run_id: str) -> RunKeys:
        keys = self._runs.get(run_id)
        if keys is None:
            keys = self._runs[run_id] = RunKeys(run_id)
            while len(self._runs) > REMEMBERED_RUNS:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        return keys

    def _push(self, keys: RunKeys) -> None:
        self._current = keys.run_id
        self._push_keys(keys.for_logs())

    def _push_keys(self, wanted: dict[str, Any]) -> None:
        """Give the sink only what changed (it is called once per committed event)."""
        if self._append is None or wanted == self._pushed:
            return
        gone = [k for k in self._pushed if k not in wanted]
        if gone and self._remove is not None:
            self._remove(gone)
        changed = {k: v for k, v in wanted.items() if self._pushed.get(k) != v}
        if changed:
            self._append(**changed)
        self._pushed = dict(wanted)


#: The process's context: the handlers enable it, the service and the sweeper tell it.
CONTEXT = RunContext()


def bind_head(head: RunHead) -> None:
    """The service is about to work on this run (nothing happens until enabled)."""
    if CONTEXT.enabled:
        CONTEXT.head(head)


def scope(run_id: str | None) -> Any:
    """`CONTEXT.scope(run_id)`: the lines of this block are about that run."""
    return CONTEXT.scope(run_id)
