"""`agentfn run --trace`: a waterfall of a run in the terminal, built from its events.

Why events and not spans: every run has them, with or without `deployment.telemetry`; they
are durable, so the waterfall of a run that paused for a day is complete; and they carry
what a waterfall needs: each event's time (`at`), each model call's and tool call's
duration (`duration_ms` of `model_response` and `tool_result`), when a person was asked and
when they answered. The spans exported to a tracing backend show the same run.

Rows, in the order things started: model calls (█), tool calls (▒, a failed one ✗), waits
for a person (┄, a long wait drawn shortened, ≈ in its middle: a day-long approval would
otherwise flatten everything else to nothing) and one-off marks (◆: a compaction, a
handoff, a hook's denial). A child run (an agent asked as a tool) is indented under the
call that asked it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import Any

from runtime.events import Event
from runtime.store.base import RunStore

BARS = {"model": "█", "tool": "▒", "wait": "┄", "mark": "◆", "run": "─"}
MAX_CHILD_DEPTH = 4
#: A wait longer than this share of the time spent working is drawn shortened to it.
WAIT_SHARE = 0.25


@dataclass
class Row:
    kind: str  # model | tool | wait | mark | run
    label: str
    start: float
    end: float
    detail: str = ""
    depth: int = 0
    failed: bool = False


@dataclass
class Waterfall:
    run_id: str
    agent: str = ""
    status: str = "running"
    start: float = 0.0
    end: float = 0.0
    rows: list[Row] = field(default_factory=list)


def events_of(store: RunStore, run_id: str) -> list[Event]:
    """Every event of a run, in order (paginated reads of the store)."""
    found: list[Event] = []
    after = -1
    while True:
        page = store.list_events(run_id, after=after, limit=500)
        found += page
        if len(page) < 500:
            return found
        after = page[-1].seq


def collect(store: RunStore, run_id: str) -> Waterfall:
    """The rows of a run and of the runs it asked, from their events."""
    events = events_of(store, run_id)
    chart = Waterfall(run_id=run_id)
    if events:
        chart.start, chart.end = events[0].at, events[-1].at
        chart.agent = str(events[0].data.get("agent", ""))
    _rows(store, events, chart, 0)
    chart.end = max([chart.end, *(r.end for r in chart.rows)])
    return chart


def _rows(store: RunStore, events: list[Event], chart: Waterfall, depth: int) -> None:
    asked: dict[str, tuple[float, str]] = {}  # approval | reply → (when asked, label)
    decided: Row | None = None  # the approval wait that its decisions end (the last one)
    for event in events:
        d, at = event.data, event.at
        if event.type == "approval_decided" and decided is not None:
            decided.end, decided.detail = at, _verdict(d)  # another call of the same wait
            continue
        decided = None
        if event.type == "model_response":
            usage = d.get("usage") or {}
            detail = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tok"
            if d.get("cost_usd"):
                detail += f" · ${d['cost_usd']:.4f}"
            start = at - d.get("duration_ms", 0) / 1000
            label = f"{d.get('model', '?')} · step {d.get('turn', '?')}"
            chart.rows.append(Row("model", label, start, at, detail, depth))
        elif event.type == "tool_result":
            failed = not d.get("success", True)
            start = at - d.get("duration_ms", 0) / 1000
            label = f"{d.get('tool_name', '?')} {'✗' if failed else '✓'}"
            chart.rows.append(Row("tool", label, start, at, "", depth, failed))
        elif event.type == "approval_requested":
            names = ", ".join(str(c.get("tool_name")) for c in d.get("calls", []))
            asked["approval"] = (at, f"approval · {names}")
        elif event.type == "clarification_requested":
            asked["reply"] = (at, "reply · agent_clarify")
        elif event.type in ("approval_decided", "clarification_answered"):
            what = "approval" if event.type == "approval_decided" else "reply"
            question = asked.pop(what, None)
            if question is not None:
                verdict = _verdict(d) if what == "approval" else "answered"
                row = Row("wait", question[1], question[0], at, verdict, depth)
                chart.rows.append(row)
                decided = row if what == "approval" else None
        elif event.type in ("run_completed", "run_failed") and depth == 0:
            chart.status = "succeeded" if event.type == "run_completed" else "failed"
            if d.get("error_code") == "CANCELLED":
                chart.status = "cancelled"
        elif event.type == "child_run_started" and depth < MAX_CHILD_DEPTH:
            _child(store, str(d["run_id"]), str(d.get("agent", "")), chart, depth + 1)
        else:
            mark = _mark(event)
            if mark is not None:
                chart.rows.append(Row("mark", mark, at, at, "", depth))
    for what, (when, label) in asked.items():  # still waiting
        chart.rows.append(Row("wait", label, when, chart.end, "waiting", depth))
        if depth == 0:
            chart.status = "awaiting_approval" if what == "approval" else "awaiting_input"


def _child(store: RunStore, run_id: str, agent: str, chart: Waterfall, depth: int) -> None:
    events = events_of(store, run_id)
    if not events:
        return
    ended = next((e for e in events if e.type in ("run_completed", "run_failed")), None)
    status = "…" if ended is None else ("✓" if ended.type == "run_completed" else "✗")
    row = Row("run", f"{agent} {status}", events[0].at, events[-1].at, "asked", depth - 1)
    row.failed = status == "✗"
    chart.rows.append(row)
    _rows(store, events, chart, depth)


def _verdict(d: dict[str, Any]) -> str:
    if d.get("timed_out"):
        return "timed out"
    verdict = "approved" if d.get("approved") else "rejected"
    return verdict + (f" by {d['by']}" if d.get("by") else "")


def _mark(event: Event) -> str | None:
    d = event.data
    if event.type == "context_compacted":
        return f"compacted {d.get('before', 0):,}→{d.get('after', 0):,} tok"
    if event.type == "handoff":
        return f"handoff → {d.get('to')}"
    if event.type == "escalation":
        return f"escalation → {d.get('to')}"
    if event.type == "hook_decision" and (d.get("decision") != "allow" or d.get("error")):
        return f"hook {d.get('event')}: {d.get('decision')}"
    return None


# ---- rendering ------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} m {int(seconds % 60):02d} s"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} m"
    return f"{int(seconds // 86400)} d {int(seconds % 86400 // 3600):02d} h"


class _Axis:
    """Run time → columns, each wait longer than its share drawn shortened (linearly)."""

    def __init__(self, chart: Waterfall, width: int):
        self.start = chart.start
        waits = sorted((r.start, r.end) for r in chart.rows if r.kind == "wait" and r.end > r.start)
        waited = sum(end - start for start, end in waits)
        working = max(chart.end - chart.start - waited, 0.0)
        cap = max(working * WAIT_SHARE, 0.001) if working > 0 else 1.0
        self.waits = [(s, e, min(e - s, cap)) for s, e in waits]
        self.width = width
        self.total = max(self.visual(chart.end), 1e-9)

    def visual(self, t: float) -> float:
        v = t - self.start
        for start, end, shown in self.waits:
            if t > start:
                covered = min(t, end) - start
                v -= covered - covered * shown / (end - start)
        return v

    def column(self, t: float) -> float:
        return self.visual(t) / self.total * self.width

    def shortened(self, row: Row) -> bool:
        return any(s == row.start and e == row.end and shown < e - s for s, e, shown in self.waits)


def render(chart: Waterfall, width: int | None = None) -> str:
    """The waterfall as text; `width`: the whole line's (default: the terminal's)."""
    total_width = width or shutil.get_terminal_size((110, 24)).columns
    label_width = min(34, max([12, *(len(r.label) + 2 * r.depth + 6 for r in chart.rows)]))
    bar_width = max(20, total_width - label_width - 24)
    axis = _Axis(chart, bar_width)
    lines = [_header(chart)]
    rows = sorted(chart.rows, key=lambda r: (r.start, r.kind != "run"))
    for row in rows:
        kind = {"model": "model", "tool": "tool", "wait": "wait", "mark": "·", "run": "agent"}
        label = ("  " * row.depth + f"{kind[row.kind]:<5} {row.label}")[:label_width]
        offset = duration(row.start - chart.start) if row.start >= chart.start else "0 ms"
        took = duration(row.end - row.start) if row.kind != "mark" else ""
        bar = _bar(axis, row)
        detail = f" {row.detail}" if row.detail else ""
        lines.append(f"{label:<{label_width}} {'+' + offset:>10} {took:>9} │{bar}│{detail}")
    return "\n".join(lines)


def _header(chart: Waterfall) -> str:
    spent = {"model": 0.0, "tool": 0.0, "wait": 0.0}
    for row in chart.rows:
        if row.kind in spent and row.depth == 0:
            spent[row.kind] += row.end - row.start
    parts = [f"model {duration(spent['model'])}", f"tools {duration(spent['tool'])}"]
    if spent["wait"]:
        parts.append(f"waiting {duration(spent['wait'])}")
    return (
        f"waterfall · run {chart.run_id[:12]}… · {chart.agent} · {chart.status} · "
        f"{duration(chart.end - chart.start)} ({' · '.join(parts)})"
    )


def _bar(axis: _Axis, row: Row) -> str:
    cells = [" "] * axis.width
    begin = axis.column(row.start)
    end = axis.column(row.end)
    first = min(int(begin), axis.width - 1)
    if row.kind == "mark":
        cells[first] = BARS["mark"]
        return "".join(cells)
    last = max(first + 1, min(round(end), axis.width))
    char = BARS[row.kind]
    for i in range(first, last):
        cells[i] = char
    if row.kind == "wait" and axis.shortened(row) and last - first >= 3:
        cells[(first + last) // 2] = "≈"
    return "".join(cells)


def waterfall(store: RunStore, run_id: str, width: int | None = None) -> str:
    return render(collect(store, run_id), width)
