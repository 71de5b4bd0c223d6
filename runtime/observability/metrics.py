"""CloudWatch metrics of runs, from the events the engine commits (EMF, namespace `agentfn`).

`RunMetrics` is an EventListener: the engine calls it after each commit, and it turns what
the event says into metric points, kept in memory until `flush()` prints them as Embedded
Metric Format lines (one per set of dimensions) through Powertools' CloudWatch EMF provider,
which CloudWatch Logs turns into metrics. The loop knows nothing of it; nothing is sent
anywhere (no API call, no permission). The handlers flush once per invocation.

| metric | unit | dimensions (each also with `service`, the stack's name) |
| --- | --- | --- |
| RunsStarted, RunsSucceeded, RunsCancelled | Count | agent; and the stack alone |
| RunsFailed | Count | agent, error_code; agent; and the stack alone |
| Turns (one per model answer), RunTurns (per succeeded run) | Count | agent |
| ModelLatency | Milliseconds | agent |
| InputTokens, OutputTokens | Count | agent |
| CostUSD | None | agent |
| ToolCalls, ToolErrors | Count | agent, tool |
| ToolLatency | Milliseconds | agent, tool |
| ApprovalsRequested, ApprovalsDecided, ApprovalsTimedOut | Count | agent; and the stack alone |
| ApprovalWait | Seconds | agent |
| SweptRuns, RunsResumed, ResumesResent, RunsStranded, SweepErrors | Count | the stack alone |

Runs are counted under their own (entry) agent, so a team's failure rate is its entry
agent's; model calls, tools and approvals under the agent acting when they happened (a
handoff changes it). Cancelled runs are not failures: `RunsCancelled`, not `RunsFailed`.

An approval's wait is the time between its `approval_requested` and `approval_decided`
events. The decision is usually recorded by another process (the API) than the one that
paused the run: when this process did not see the request, `flush()` reads the few events
before the decision from the store (one query per decision, people-paced).

Powertools is imported on the first flush that has something to print, never at import.
A listener must not break a commit: whatever goes wrong here is logged and dropped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.observability.logs import CONTEXT, RunContext

if TYPE_CHECKING:
    from runtime.events import Event
    from runtime.store.base import RunStore

log = logging.getLogger("agentfn.metrics")

NAMESPACE = "agentfn"
#: How many events before a decision are read to find its request (a batch of approvals
#: asked together is decided with one event per call, nothing else is committed between).
LOOKBACK_EVENTS = 32
#: Values of one metric in one EMF line: EMF takes 100, and Powertools prints a line of its
#: own when a metric reaches its 100th, so a line here stops one short.
MAX_VALUES = 99
MAX_ASKED = 1024  # approval requests remembered per process, for their decision's wait

#: Every metric this module emits, and its unit (the dashboard and alarms use these names).
METRICS = {
    **dict.fromkeys(("RunsStarted", "RunsSucceeded", "RunsFailed", "RunsCancelled"), "Count"),
    **dict.fromkeys(("Turns", "RunTurns", "InputTokens", "OutputTokens"), "Count"),
    "ModelLatency": "Milliseconds",
    "CostUSD": "None",
    "ToolCalls": "Count",
    "ToolErrors": "Count",
    "ToolLatency": "Milliseconds",
    **dict.fromkeys(("ApprovalsRequested", "ApprovalsDecided", "ApprovalsTimedOut"), "Count"),
    "ApprovalWait": "Seconds",
    **dict.fromkeys(
        ("SweptRuns", "RunsResumed", "ResumesResent", "RunsStranded", "SweepErrors"), "Count"
    ),
}

Dimensions = tuple[tuple[str, str], ...]
#: Which subsets of a point's dimensions it is also aggregated under (`service` is always
#: added): () is the stack alone.
Rollups = tuple[tuple[str, ...], ...]
STACK: Rollups = ((),)


@dataclass
class _Group:
    """Points printed as one EMF line: the same dimensions and roll-ups."""

    dimensions: Dimensions
    rollups: Rollups
    points: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass
class _Wait:
    run_id: str
    call_id: str
    decided_at: float
    agent: str | None  # None: not known when it was decided
    timed_out: bool
    seq: int


class RunMetrics:
    """Metric points of the runs this process commits events for (see the module)."""

    def __init__(
        self,
        service: str,
        *,
        store: RunStore | None = None,
        default_agent: str | None = None,
        context: RunContext | None = None,
        emit: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.service = service
        self.store = store
        self.default_agent = default_agent or "unknown"
        self.context = context if context is not None else CONTEXT
        self.context.enable()  # who each run is: its agent, the agent acting now
        self._emit = emit
        self._groups: dict[tuple[Dimensions, Rollups], _Group] = {}
        self._asked: dict[tuple[str, str], float] = {}  # (run, call) → when approval was asked
        self._waits: list[_Wait] = []
        self._lock = threading.Lock()

    # ---- the listener -------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        try:
            self.context.event(event)
            self._record(event)
        except Exception:  # metrics never break a commit
            log.warning("metrics: event %s not recorded", event.type, exc_info=True)

    def _knows(self, run_id: str) -> bool:
        keys = self.context.of(run_id)
        return keys is not None and keys.acting is not None

    def _agents(self, run_id: str) -> tuple[str, str]:
        """(the run's own agent, the agent acting now)."""
        keys = self.context.of(run_id)
        if keys is None:
            return self.default_agent, self.default_agent
        own = keys.agent or keys.active or self.default_agent
        return own, keys.active or own

    def _record(self, event: Event) -> None:
        data, kind = event.data, event.type
        if kind == "run_started":
            own = str(data.get("agent") or self._agents(event.run_id)[0])
            self.add("RunsStarted", "Count", 1, agent=own, rollups=STACK)
            return
        own, acting = self._agents(event.run_id)
        if kind == "model_response":
            usage = data.get("usage") or {}
            self.add("Turns", "Count", 1, agent=acting)
            self.add("InputTokens", "Count", _number(usage.get("input_tokens")), agent=acting)
            self.add("OutputTokens", "Count", _number(usage.get("output_tokens")), agent=acting)
            if data.get("duration_ms") is not None:
                self.add("ModelLatency", "Milliseconds", _number(data["duration_ms"]), agent=acting)
            if data.get("cost_usd") is not None:
                self.add("CostUSD", "None", _number(data["cost_usd"]), agent=acting)
        elif kind == "tool_result":
            tool = str(data.get("tool_name") or "unknown")
            self.add("ToolCalls", "Count", 1, agent=acting, tool=tool)
            failed = 0 if data.get("success") else 1
            self.add("ToolErrors", "Count", failed, agent=acting, tool=tool)
            if data.get("duration_ms") is not None:
                latency = _number(data["duration_ms"])
                self.add("ToolLatency", "Milliseconds", latency, agent=acting, tool=tool)
        elif kind == "approval_requested":
            calls = data.get("calls") or []
            self.add("ApprovalsRequested", "Count", len(calls), agent=acting, rollups=STACK)
            with self._lock:
                for call in calls:
                    self._asked[(event.run_id, str(call.get("tool_call_id")))] = event.at
                while len(self._asked) > MAX_ASKED:  # decided elsewhere: forget the oldest
                    del self._asked[next(iter(self._asked))]
        elif kind == "approval_decided":  # counted at flush: see _settle_waits
            known = self._knows(event.run_id)
            call_id = str(data.get("tool_call_id"))
            timed_out = bool(data.get("timed_out"))
            wait = _Wait(
                event.run_id, call_id, event.at, acting if known else None, timed_out, event.seq
            )
            with self._lock:
                self._waits.append(wait)
        elif kind == "run_completed":
            self.add("RunsSucceeded", "Count", 1, agent=own, rollups=STACK)
            if data.get("turns_used") is not None:
                self.add("RunTurns", "Count", _number(data["turns_used"]), agent=own)
        elif kind == "run_failed":
            code = str(data.get("error_code") or "INTERNAL")
            if code == "CANCELLED":
                self.add("RunsCancelled", "Count", 1, agent=own, rollups=STACK)
            else:
                rollups = (("agent",), ())
                self.add("RunsFailed", "Count", 1, agent=own, error_code=code, rollups=rollups)

    # ---- points -------------------------------------------------------------------------

    def add(
        self, name: str, unit: str, value: float, *, rollups: Rollups = (), **dimensions: str
    ) -> None:
        """One point of `name` under these dimensions (and each roll-up of them)."""
        rollups = tuple(r for r in rollups if set(r) != set(dimensions))  # not twice
        key = (tuple(sorted(dimensions.items())), rollups)
        with self._lock:
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = _Group(key[0], rollups)
            group.points.append((name, unit, float(value)))

    def sweep(self, report: dict[str, Any]) -> None:
        """What one pass of the sweeper did (runtime.sweeper.SweepReport.as_dict()): runs
        that had lost their owner are what the stuck-runs alarm watches."""
        counts = {
            "SweptRuns": report.get("checked", 0),
            "RunsResumed": len(report.get("resumed", [])),
            "ResumesResent": len(report.get("resent", [])),
            "RunsStranded": len(report.get("failed", [])),
            "SweepErrors": len(report.get("errors", [])),
        }
        for name, value in counts.items():
            self.add(name, "Count", value)  # no dimension but the stack's

    @property
    def pending(self) -> int:
        """Points not flushed yet."""
        return sum(len(g.points) for g in self._groups.values()) + len(self._waits)

    # ---- flush --------------------------------------------------------------------------

    def flush(self) -> list[dict[str, Any]]:
        """Print every point kept as EMF (one line per group of dimensions) and forget them;
        the EMF documents printed, in order. Nothing kept: nothing printed, nothing imported."""
        self._settle_waits()
        with self._lock:
            groups, self._groups = list(self._groups.values()), {}
        if not groups:
            return []
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
            AmazonCloudWatchEMFProvider,
        )

        printed: list[dict[str, Any]] = []
        for group in groups:
            for points in _chunks(group.points):
                provider = AmazonCloudWatchEMFProvider(namespace=NAMESPACE, service=self.service)
                dimensions = dict(group.dimensions)
                for dimension, text in dimensions.items():
                    provider.add_dimension(dimension, text)
                for rollup in group.rollups:
                    provider.add_dimensions(
                        service=self.service, **{d: dimensions[d] for d in rollup}
                    )
                for name, unit, value in points:
                    provider.add_metric(name=name, unit=unit, value=value)
                document = dict(provider.serialize_metric_set())
                (self._emit or _print)(document)
                printed.append(document)
        return printed

    def _settle_waits(self) -> None:
        """Each decision, under the agent that asked, and its wait, from its request's time
        (seen here, or read from the store). The API commits a decision before it knows whose
        run it is (the service binds the head it returns): hence at flush, not at once."""
        with self._lock:
            waits, self._waits = self._waits, []
        for wait in waits:
            agent = wait.agent or self._acting_now(wait.run_id)
            self.add("ApprovalsDecided", "Count", 1, agent=agent, rollups=STACK)
            self.add("ApprovalsTimedOut", "Count", int(wait.timed_out), agent=agent, rollups=STACK)
            asked = self._asked.pop((wait.run_id, wait.call_id), None)
            if asked is None:
                asked = self._asked_at(wait)
            if asked is not None:
                seconds = max(0.0, wait.decided_at - asked)
                self.add("ApprovalWait", "Seconds", seconds, agent=agent)

    def _acting_now(self, run_id: str) -> str:
        if not self._knows(run_id) and self.store is not None:
            try:
                return self.store.load_head(run_id).active_agent
            except Exception:
                log.warning("metrics: run %s not read", run_id, exc_info=True)
        return self._agents(run_id)[1]

    def _asked_at(self, wait: _Wait) -> float | None:
        if self.store is None:
            return None
        try:
            after = max(-1, wait.seq - 1 - LOOKBACK_EVENTS)
            events = self.store.list_events(wait.run_id, after=after, limit=LOOKBACK_EVENTS)
        except Exception:
            log.warning("metrics: no approval wait for run %s", wait.run_id, exc_info=True)
            return None
        for event in reversed(events):
            if event.type != "approval_requested" or event.seq >= wait.seq:
                continue
            calls = event.data.get("calls") or []
            if any(str(c.get("tool_call_id")) == wait.call_id for c in calls):
                return event.at
        return None


def _chunks(points: list[tuple[str, str, float]]) -> list[list[tuple[str, str, float]]]:
    """EMF takes at most MAX_VALUES values of one metric in a line: more go in further lines."""
    chunks: list[list[tuple[str, str, float]]] = [[]]
    counts: dict[str, int] = {}
    for point in points:
        if counts.get(point[0], 0) == MAX_VALUES:
            chunks.append([])
            counts = {}
        chunks[-1].append(point)
        counts[point[0]] = counts.get(point[0], 0) + 1
    return chunks


def _print(document: dict[str, Any]) -> None:
    """What Powertools' flush does: one line on stdout, which Lambda sends to CloudWatch Logs
    (POWERTOOLS_METRICS_DISABLED turns it off, as for Powertools' own Metrics)."""
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    if not is_metrics_disabled():
        print(json.dumps(document, separators=(",", ":")), flush=True)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value)
