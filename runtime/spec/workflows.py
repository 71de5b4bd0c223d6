"""Workflows: sequential, parallel, mapped and looping compositions of agent runs.

Each workflow compiles to a Step Functions state machine of its own (infra/sam/workflow_asl.py)
whose every step is a real agent run (its own id, events, approvals). Inputs of steps are
rendered from the workflow's input and earlier steps' results with a small template language
(runtime/workflows/template.py): `{ticket}`, `{classify.category}`, `{item}`; conditions
(`when`, `until`) compare such references with literals — nothing is ever executed.
Which references resolve is checked at validation (infra/checks/workflow_checks.py).
"""

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from runtime.spec.methods import StepMethods, WorkflowMethods
from runtime.spec.models import SpecModel
from runtime.spec.shared import STEP_KINDS
from runtime.spec.triggers import TriggerConfig
from runtime.spec.types import Name


class Branch(SpecModel):
    """One agent run of a `parallel` step."""

    agent: Name
    input: str = Field("{input}", description="Template of the run's input.")
    when: str | None = Field(None, description="Condition; false: the branch is skipped.")


class MapStep(SpecModel):
    """One run of `agent` per element of a list from the input or an earlier result."""

    over: str = Field(description="Reference to a list, e.g. `{plan.tasks}`.")
    agent: Name
    input: str = Field("{item}", description="Template; `{item}` is the element.")
    max_concurrency: int = Field(4, ge=1, le=40, description="Runs at once (the Map state's).")
    max_items: int = Field(100, ge=1, le=1000, description="A longer list fails the step.")


class LoopStep(SpecModel):
    """Runs `agent` again until `until` holds on its result, at most `max_iterations` times."""

    agent: Name
    input: str = Field("{input}", description="Template; the step's own id is its previous result.")
    until: str = Field(description="Condition on the step's latest result, e.g. `{review.ok}`.")
    max_iterations: int = Field(3, ge=1, le=25)


class LlmStep(SpecModel):
    """One model call and nothing else: no agent loop, no tools, no history. Its answer is
    the step's result, as an agent step's run result is (runtime.workflows.llm_step)."""

    model: Name = Field(description="A model of `models` (its retry and fallbacks apply).")
    prompt: str = Field(min_length=1, description="Template of the user message.")
    system: str = Field("", description="System prompt (plain text).")
    output_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema the answer must match; the result is then that value."
    )


class WorkflowStep(StepMethods, SpecModel):
    id: Name
    agent: Name | None = Field(None, description="An agent step: one run of this agent.")
    input: str | None = Field(None, description="An agent step's input template ({input}).")
    parallel: list[Branch] | None = Field(None, min_length=1, max_length=20)
    map: MapStep | None = None
    loop: LoopStep | None = None
    llm: LlmStep | None = Field(None, description="One model call, no agent loop.")
    when: str | None = Field(None, description="Condition; false: the step is skipped.")
    on_error: Literal["fail", "continue"] = Field(
        "fail", description="`continue`: a failed step's result is null and the workflow goes on."
    )
    retries: int = Field(0, ge=0, le=5, description="Failed runs of the step started again.")
    max_turns: int | None = Field(
        None, ge=1, le=1000, description="The step's runs' turn limit (≤ each agent's own)."
    )

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        kinds = [kind for kind in STEP_KINDS if getattr(self, kind) is not None]
        if len(kinds) != 1:
            listed = ", ".join(f"`{k}`" for k in STEP_KINDS)
            raise ValueError(f"a step has exactly one of {listed} (got {len(kinds)})")
        if self.input is not None and self.agent is None:
            raise ValueError("`input` belongs to an agent step; set it inside the branch")
        return self


class WorkflowConfig(WorkflowMethods, SpecModel):
    description: str = ""
    input_schema: dict[str, Any] | None = Field(
        None,
        description="JSON Schema of the input (an object: its properties are `{name}`); "
        "absent: the input is text, `{input}`.",
    )
    steps: list[WorkflowStep] = Field(min_length=1, max_length=50)
    triggers: list[TriggerConfig] = Field(
        default_factory=list,
        max_length=20,
        description="Schedules, webhooks, queues, S3 uploads and events that start runs.",
    )

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        seen: set[str] = set()
        for step in self.steps:
            if step.id in seen:
                raise ValueError(f"step id {step.id!r} is used twice")
            seen.add(step.id)
        return self

    @model_validator(mode="after")
    def _fits_one_execution(self) -> Self:
        events = history_events(self)
        if events > HISTORY_BUDGET:
            raise ValueError(
                f"this workflow may need {events:,} Step Functions history events, more than "
                f"one execution holds ({HISTORY_BUDGET:,} of 25,000 kept for it): lower a "
                "map's max_items, a loop's max_iterations or a step's retries"
            )
        return self


#: Step Functions ends an execution at 25,000 history events; a margin is kept for the
#: safety-net rechecks of step runs that wait a long time for people.
HISTORY_BUDGET = 20_000
_STEP_EVENTS = 18  # plan task, choice, the Map's own, collect task, choice
_RUN_EVENTS = 8  # one Map iteration: entered, scheduled, started, submitted, succeeded, exited…


def history_events(config: WorkflowConfig) -> int:
    """The most history events a run of this workflow can write (every retry and loop pass
    used), so a workflow that could outgrow one execution is refused at validation."""
    total = 10
    for step in config.steps:
        runs = 1
        if step.parallel is not None:
            runs = len(step.parallel)
        elif step.map is not None:
            runs = step.map.max_items
        passes = step.loop.max_iterations if step.loop is not None else 1
        total += passes * (_STEP_EVENTS + runs * (1 + step.retries) * _RUN_EVENTS)
    return total
