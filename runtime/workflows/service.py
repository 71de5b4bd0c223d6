"""Workflow runs: the API's operations, and the tasks of a workflow's state machine.

The state machine (infra/sam/workflow_asl.py) walks the steps; for each it asks `plan`
(skip it, or which runs to start), starts each run in a Map iteration that waits on a task
token (`run_item`: the step run is created with the token on its head, and its end sends
it back — no polling), then asks `collect` (go on, retry failed runs, loop again, or fail).
Every task is idempotent: a step run's id is derived from its place in the workflow, so a
retried task finds the run it started; the workflow's item is version-checked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from runtime.errors import InvalidRequest, RunNotFound, StateConflict, WrongState
from runtime.safety.schema_check import SchemaViolation, check
from runtime.spec.workflows import WorkflowConfig, WorkflowStep
from runtime.structs import load_json
from runtime.workflows.records import (
    MAX_INPUT_CHARS,
    WORKFLOW_TERMINAL,
    StepState,
    WorkflowRun,
    workflow_tag,
)
from runtime.workflows.results import has_result, step_result, workflow_view
from runtime.workflows.steps import StepTasks

if TYPE_CHECKING:
    from runtime.service import RunService

log = logging.getLogger("agentfn.workflows")

TASK_ACTIONS = frozenset({"plan", "run_item", "recheck", "collect", "finish", "fail", "llm"})
SAVE_RETRIES = 5


class WorkflowService(StepTasks):
    def __init__(self, runs: RunService, workflow: str | None = None):
        self.runs = runs
        self.engine = runs.engine
        self.store = runs.engine.store
        self.workflow = workflow  # a deployed workflow function serves only its own

    # ---- the API's operations ------------------------------------------------------------

    def names(self) -> list[dict[str, Any]]:
        return [
            {"name": name, "description": w.description, "steps": [s.id for s in w.steps]}
            for name, w in self.engine.spec.workflows.items()
        ]

    def start(
        self,
        name: str,
        given: Any,
        *,
        workflow_run_id: str | None = None,
        trigger: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Start a workflow run. A triggered start names it (`workflow_run_id`, derived
        from its event) and records `trigger`: an existing run of that id is answered as it
        is (its execution started again: by name, so never twice)."""
        config = self._config(name)
        found: WorkflowRun | None = None
        if workflow_run_id is not None:
            with contextlib.suppress(InvalidRequest):
                found = self.load(workflow_run_id)
        if found is not None:
            self._start_execution(found)
            return self.view(found.workflow_run_id)
        value = self._checked_input(config, given)
        now = self.engine.clock.now()
        run = WorkflowRun(
            workflow_run_id=workflow_run_id or workflow_tag(name) + uuid.uuid4().hex[:24],
            trigger=trigger,
            workflow=name,
            input=value,
            steps={step.id: StepState() for step in config.steps},
            created_at=now,
            updated_at=now,
            expires_at=int(now + self.engine.spec.deployment.retention),
            spec_hash=self.engine.spec.spec_hash(),
        )
        self.store.save_workflow_run(run, None)
        self._start_execution(run)
        return self.view(run.workflow_run_id)

    def view(self, workflow_run_id: str) -> dict[str, Any]:
        run = self.load(workflow_run_id)
        return workflow_view(run, self._config(run.workflow), self.engine)

    def cancel(self, workflow_run_id: str, *, by: str | None = None) -> dict[str, Any]:
        """Cancel the workflow and every step run still going (a cancel cascades)."""

        def mark(run: WorkflowRun) -> bool:
            if run.status in WORKFLOW_TERMINAL:
                raise WrongState(f"workflow run is {run.status}", status=run.status)
            run.status, run.cancelled_by = "cancelled", by
            run.error_code, run.error_message = "CANCELLED", "the workflow run was cancelled"
            return True

        run = self._update(workflow_run_id, mark)
        self._stop_execution(run)
        for state in run.steps.values():
            for step_run in state.runs:
                with contextlib.suppress(RunNotFound, WrongState):  # not created, or finished
                    self.runs.cancel(step_run.run_id, by=by)
        return self.view(workflow_run_id)

    def load(self, workflow_run_id: str) -> WorkflowRun:
        try:
            stored = self.store.load_workflow_run(workflow_run_id)
        except RunNotFound:
            raise InvalidRequest(
                f"no workflow run {workflow_run_id!r}", field="workflow_run_id", not_found=True
            ) from None
        return load_json(WorkflowRun, stored, strict=False)

    # ---- the state machine's tasks -------------------------------------------------------

    def task(self, event: dict[str, Any]) -> dict[str, Any]:
        action = event.get("action")
        if action not in TASK_ACTIONS:
            raise InvalidRequest(f"unknown action {str(action)[:100]!r}", field="action")
        run = self.load(str(event["workflow_run_id"]))
        if self.workflow is not None and run.workflow != self.workflow:
            raise InvalidRequest(f"not a run of workflow {self.workflow}", field="workflow_run_id")
        step_id = str(event.get("step") or "")
        if action == "finish":
            return self._finish(run.workflow_run_id)
        if action == "fail":
            return self._fail(run.workflow_run_id, event.get("error") or {})
        step = self._step(run, step_id)
        if action == "plan":
            return self._plan(run, step)
        if action == "llm":
            return self._llm(run, step)
        item = int(event.get("item") or 0)
        if action == "run_item":
            return self._run_item(run, step, item, str(event["task_token"]))
        if action == "recheck":
            return {"done": self._item_finished(run, step, item)}
        return self._collect(run, step)

    def _finish(self, workflow_run_id: str) -> dict[str, Any]:
        def done(current: WorkflowRun) -> bool:
            if current.status != "running":
                return False
            current.status = "succeeded"
            return True

        run = self._update(workflow_run_id, done)
        return {"status": run.status}

    def _fail(self, workflow_run_id: str, error: dict[str, Any]) -> dict[str, Any]:
        def failed(current: WorkflowRun) -> bool:
            if current.status != "running":
                return False
            current.status = "failed"
            current.failed_step = error.get("step")
            current.error_code = str(error.get("code") or "INTERNAL")
            cause = (
                error.get("message") or f"{error.get('Error', 'Error')}: {error.get('Cause', '')}"
            )
            current.error_message = str(cause)[:1000]
            return True

        run = self._update(workflow_run_id, failed)
        return {"status": run.status}

    # ---- internals -----------------------------------------------------------------------

    def scope(self, run: WorkflowRun) -> dict[str, Any]:
        """What templates and conditions see: the input (whole and by property) and the
        results of the steps that ran so far (a loop's own: its latest pass)."""
        scope: dict[str, Any] = {"input": run.input}
        if isinstance(run.input, dict):
            scope.update(run.input)
        config = self._config(run.workflow)
        for step in config.steps:
            state = run.steps.get(step.id)
            if state is not None and has_result(state):
                scope[step.id] = step_result(step, state, self.engine)
        return scope

    def _agent_and_input(self, step: WorkflowStep, index: int) -> tuple[str, str]:
        if step.agent is not None:
            return step.agent, step.input or "{input}"
        if step.parallel is not None:
            branch = step.parallel[index]
            return branch.agent, branch.input
        if step.map is not None:
            return step.map.agent, step.map.input
        assert step.loop is not None
        return step.loop.agent, step.loop.input

    def _config(self, name: str) -> WorkflowConfig:
        config = self.engine.spec.workflows.get(name)
        if config is None:
            known = ", ".join(sorted(self.engine.spec.workflows)) or "none"
            raise InvalidRequest(
                f"no workflow named {name!r} (workflows: {known})", field="workflow", not_found=True
            )
        return config

    def _step(self, run: WorkflowRun, step_id: str) -> WorkflowStep:
        for step in self._config(run.workflow).steps:
            if step.id == step_id:
                return step
        raise InvalidRequest(f"workflow {run.workflow} has no step {step_id!r}", field="step")

    def _checked_input(self, config: WorkflowConfig, given: Any) -> Any:
        if len(json.dumps(given, default=str)) > MAX_INPUT_CHARS:
            raise InvalidRequest(f"input is over {MAX_INPUT_CHARS} characters", field="input")
        if config.input_schema is None:
            if not isinstance(given, str) or not given.strip():
                raise InvalidRequest(
                    "input must be non-empty text (the workflow has no input_schema)", field="input"
                )
            return given
        try:
            check(config.input_schema, given)
        except SchemaViolation as exc:
            raise InvalidRequest(
                f"input does not match the workflow's input_schema: {exc}", field="input"
            ) from None
        return given

    def _update(self, workflow_run_id: str, change: Any) -> WorkflowRun:
        """Apply `change` to the latest item (re-read and tried again on a lost race)."""
        for attempt in range(SAVE_RETRIES):
            run = self.load(workflow_run_id)
            expected = run.version
            if not change(run):
                return run
            run.version = expected + 1
            run.updated_at = self.engine.clock.now()
            try:
                self.store.save_workflow_run(run, expected)
                return run
            except StateConflict:
                if attempt + 1 == SAVE_RETRIES:
                    raise
        raise AssertionError("unreachable")

    def _start_execution(self, run: WorkflowRun) -> None:
        arn = self.runs.stack.workflow_state_machine(run.workflow)
        if self.runs.sfn is None or arn is None:
            raise InvalidRequest(
                "workflows run on Step Functions; this stack has none", field="workflow"
            )
        with contextlib.suppress(self.runs.sfn.exceptions.ExecutionAlreadyExists):
            self.runs.sfn.start_execution(
                stateMachineArn=arn,
                name=run.workflow_run_id,
                input=json.dumps({"workflow_run_id": run.workflow_run_id}),
            )

    def reenter(self, workflow_run_id: str) -> bool:
        """Start the state machine again for a running workflow whose execution is gone
        (it lived in another process: `agentfn run` locally). Nothing runs twice: `plan`
        passes over every step already finished, and the step that was waiting finds its
        runs again (`run_item`: each by its derived id, given the new task's token). False
        when the workflow has ended or its execution still runs."""
        run = self.load(workflow_run_id)
        execution = self._execution_arn(run)
        if run.status != "running" or execution is None:
            return False
        try:
            status = self.runs.sfn.describe_execution(executionArn=execution)["status"]
        except self.runs.sfn.exceptions.ExecutionDoesNotExist:
            status = None
        if status == "RUNNING":
            return False
        self._start_execution(run)
        return True

    def _execution_arn(self, run: WorkflowRun) -> str | None:
        arn = self.runs.stack.workflow_state_machine(run.workflow)
        if self.runs.sfn is None or arn is None:
            return None
        return arn.replace(":stateMachine:", ":execution:") + f":{run.workflow_run_id}"

    def _stop_execution(self, run: WorkflowRun) -> None:
        execution = self._execution_arn(run)
        if execution is None:
            return
        try:
            self.runs.sfn.stop_execution(
                executionArn=execution, error="WorkflowCancelled", cause="cancelled"
            )
        except Exception as exc:  # finished already
            log.info("stop_execution: %s", type(exc).__name__)
