"""Trace and span ids of runs, without the OpenTelemetry SDK.

The API function starts runs and stores their trace ids without ever loading the SDK; only
the functions that advance runs (and so record spans) import it (runtime.observability.otel).
"""

from __future__ import annotations

import hashlib
import random

from runtime.store.base import RunHead, TraceRef


def new_trace_id(now: float) -> str:
    """32 hex digits, the first 8 the epoch seconds and the rest random: the form AWS X-Ray
    requires (it drops spans of other trace ids), and a valid W3C trace id as well."""
    return f"{int(now) & 0xFFFFFFFF:08x}{random.getrandbits(96):024x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"


def new_ref(now: float) -> TraceRef:
    """The trace of a run started now: its id and its root span's."""
    return TraceRef(trace_id=new_trace_id(now), span_id=new_span_id())


def child_ref(parent: RunHead) -> TraceRef:
    """A child run (an agent asked as a tool) is part of its parent's trace, its root span
    under the parent's."""
    ref = ref_of(parent)
    return TraceRef(trace_id=ref.trace_id, span_id=new_span_id(), parent_span_id=ref.span_id)


def ref_of(head: RunHead) -> TraceRef:
    """The run's trace: as stored, or, for a run started before telemetry was turned on,
    derived from its id, so every process that advances it still agrees on one trace."""
    if head.trace is not None:
        return head.trace
    digest = hashlib.sha256(head.run_id.encode()).hexdigest()
    return TraceRef(
        trace_id=f"{int(head.created_at) & 0xFFFFFFFF:08x}{digest[:24]}", span_id=digest[24:40]
    )
