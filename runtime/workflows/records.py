"""A workflow run as stored: one small, version-checked item (`WF#{id}` / `HEAD`).

It holds the workflow's input and, per step, which agent runs it started; results are never
copied here — they are read from those runs (each a real run with its own result), so the
item stays far under DynamoDB's 400 KB whatever the agents answer.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

from runtime.naming import TAG_LENGTH, agent_tag
from runtime.structs import Record

WorkflowStatus = Literal["running", "succeeded", "failed", "cancelled"]
StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped"]
WORKFLOW_TERMINAL = ("succeeded", "failed", "cancelled")
MAX_INPUT_CHARS = 64_000  # the workflow's input lives in its item


class StepRun(Record, kw_only=True):
    index: int  # the branch, the element of a map, 0 otherwise
    agent: str
    run_id: str
    attempt: int = 0


class StepState(Record, kw_only=True):
    status: StepStatus = "pending"
    iteration: int = 0  # a loop's current pass (0-based)
    count: int = 0  # runs this pass: branches, elements, or 1
    runs: list[StepRun] = msgspec.field(default_factory=list)  # this pass's latest attempt of each
    attempts: dict[int, int] = msgspec.field(default_factory=dict)  # index → retries used
    skipped: list[int] = msgspec.field(default_factory=list)  # branches whose `when` was false
    until_met: bool | None = None  # a loop: whether it ended by its condition
    result_ref: str | None = None  # an llm step: the object holding its answer
    error_code: str | None = None
    error_message: str | None = None


class WorkflowRun(Record, kw_only=True):
    workflow_run_id: str
    workflow: str
    status: WorkflowStatus = "running"
    version: int = 0
    input: Any = None
    steps: dict[str, StepState] = msgspec.field(default_factory=dict)
    created_at: float
    updated_at: float
    expires_at: int
    spec_hash: str
    cancelled_by: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    failed_step: str | None = None
    trigger: dict[str, str] | None = None  # what started it: {name, kind, event_id} (#28)


def workflow_tag(workflow: str) -> str:
    """Eight hex digits identifying the workflow in its runs' ids (as agent tags do)."""
    return agent_tag(f"workflow:{workflow}")


def step_run_id(
    agent: str, workflow_run_id: str, step: str, iteration: int, index: int, attempt: int
) -> str:
    """The same id for the same step run every time it is asked for: a retried task finds
    the run it started instead of starting a second one."""
    seed = f"{workflow_run_id}:{step}:{iteration}:{index}:{attempt}"
    return agent_tag(agent) + hashlib.sha256(seed.encode()).hexdigest()[: 32 - TAG_LENGTH]
