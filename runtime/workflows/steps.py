"""The tasks a workflow's state machine runs for each step: `plan` it, start each of its
runs with the token of the Map iteration that waits for it (`run_item`), and `collect` what
they did. See runtime.workflows.service for the whole protocol."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.errors import RunNotFound, StateConflict
from runtime.spec.plain import WorkflowStep
from runtime.store.base import TERMINAL
from runtime.workflows.records import StepRun, WorkflowRun, step_run_id
from runtime.workflows.template import holds, lookup, render

#: A step that ended without stopping its workflow: `plan` never starts it again (a failed
#: step that stops the workflow fails the workflow, and a stopped workflow plans nothing).
PASSED = ("succeeded", "skipped", "failed")

if TYPE_CHECKING:
    from runtime.engine.loop import Engine
    from runtime.service import RunService


@dataclass(frozen=True)
class StepLink:
    """What makes a run a workflow's step run (Engine.start's `step_of`)."""

    run_id: str
    workflow_run_id: str
    token: str | None


class StepTasks:
    runs: RunService
    engine: Engine

    def scope(self, run: WorkflowRun) -> dict[str, Any]:
        raise NotImplementedError  # runtime.workflows.service.WorkflowService

    def load(self, workflow_run_id: str) -> WorkflowRun:
        raise NotImplementedError  # runtime.workflows.service.WorkflowService

    def _update(self, workflow_run_id: str, change: Any) -> WorkflowRun:
        raise NotImplementedError  # runtime.workflows.service.WorkflowService

    def _fail(self, workflow_run_id: str, error: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError  # runtime.workflows.service.WorkflowService

    def _agent_and_input(self, step: WorkflowStep, index: int) -> tuple[str, str]:
        raise NotImplementedError  # runtime.workflows.service.WorkflowService

    def _plan(self, run: WorkflowRun, step: WorkflowStep) -> dict[str, Any]:
        """Skip the step (`when` false, every branch skipped, an empty list) or say how many
        runs to start. A cancelled or failed workflow starts nothing more."""
        if run.status != "running":
            return {"run": False, "items": [], "stop": True}
        if run.steps[step.id].status in PASSED:  # a re-entered workflow (reenter): done
            return {"run": False, "items": [], "stop": False}
        scope = self.scope(run)
        items: list[int] = [0]
        skipped: list[int] = []
        problem = None
        if step.when is not None and not holds(step.when, scope):
            items = []
        elif step.parallel is not None:
            items = []
            for i, branch in enumerate(step.parallel):
                (items if branch.when is None or holds(branch.when, scope) else skipped).append(i)
        elif step.map is not None:
            elements = lookup(step.map.over.strip()[1:-1], scope)
            if not isinstance(elements, list):
                problem = (
                    f"map over {step.map.over}: expected a list, got {type(elements).__name__}"
                )
            elif len(elements) > step.map.max_items:
                problem = (
                    f"map over {step.map.over}: {len(elements)} items, "
                    f"more than max_items ({step.map.max_items})"
                )
            else:
                items = list(range(len(elements)))

        def planned(current: WorkflowRun) -> bool:
            own = current.steps[step.id]
            if problem is not None:
                own.status, own.error_code, own.error_message = "failed", "WORKFLOW_INPUT", problem
            elif not items:
                own.status = "skipped"
            else:
                own.status, own.count, own.skipped = "running", len(items) + len(skipped), skipped
                own.runs = [r for r in own.runs if r.index in items]  # this pass's
            return True

        self._update(run.workflow_run_id, planned)
        if problem is not None:
            if step.on_error == "fail":
                self._fail(
                    run.workflow_run_id,
                    {"code": "WORKFLOW_INPUT", "message": problem, "step": step.id},
                )
                return {"run": False, "items": [], "stop": True}
            return {"run": False, "items": [], "stop": False}
        return {"run": bool(items), "items": items, "stop": False}

    def _run_item(
        self, run: WorkflowRun, step: WorkflowStep, index: int, token: str
    ) -> dict[str, Any]:
        """Start the step's run for `index` with this task's token on it; a run that exists
        (a retried task, a recheck) gets the new token, and one already finished answers at
        once."""
        state = run.steps[step.id]
        attempt = state.attempts.get(index, 0)
        agent, template = self._agent_and_input(step, index)
        run_id = step_run_id(agent, run.workflow_run_id, step.id, state.iteration, index, attempt)
        try:
            head = self.engine.store.load_head(run_id)
        except RunNotFound:
            scope = self.scope(run)
            if step.map is not None:
                scope["item"] = (
                    lookup(step.map.over.strip()[1:-1], scope) or [None] * (index + 1)
                )[index]
            text = render(template, scope)
            if run.status != "running":  # cancelled meanwhile: start nothing more
                self.runs.send_token(token, None)
                return {"run_id": None}
            link = StepLink(run_id, run.workflow_run_id, token)
            try:
                head = self.engine.start(agent, text, step_of=link, max_turns=step.max_turns)
            except StateConflict:  # a retried task raced its first attempt
                head = self.engine.store.load_head(run_id)
            self._record_run(
                run.workflow_run_id,
                step.id,
                StepRun(index=index, agent=agent, run_id=run_id, attempt=attempt),
            )
        else:
            head = self.runs._retrying(
                run_id, lambda: self.engine.store_workflow_token(run_id, token)
            )
        if head.status in TERMINAL:
            self.runs.send_token(token, run_id)
        else:
            self.runs.start_execution(head)
        return {"run_id": run_id}

    def _llm(self, run: WorkflowRun, step: WorkflowStep) -> dict[str, Any]:
        """An `llm` step's one call (runtime.workflows.llm_step), tried 1 + `retries` times;
        answers how to go on as `collect` does. A step that already answered (a retried
        task) is not asked again."""
        from runtime.workflows import llm_step

        assert step.llm is not None
        state = run.steps[step.id]
        if run.status != "running":
            return {"next": "stop", "items": []}
        if state.status == "succeeded":
            return {"next": "continue", "items": []}
        code, message = "MODEL_ERROR", ""
        for attempt in range(1 + step.retries):
            prompt = render(step.llm.prompt, self.scope(run))
            try:
                value = llm_step.call(self.engine, step.llm, prompt)
            except llm_step.LlmStepFailed as exc:
                code, message = exc.code, str(exc)
                continue
            key = llm_step.result_key(run.workflow_run_id, step.id, state.iteration, attempt)
            self.engine.store.blobs.put(key, json.dumps(value).encode())

            def answered(current: WorkflowRun, key: str = key) -> bool:
                own = current.steps[step.id]
                own.status, own.result_ref, own.count = "succeeded", key, 1
                return True

            self._update(run.workflow_run_id, answered)
            return {"next": "continue", "items": []}

        def failed_step(current: WorkflowRun) -> bool:
            own = current.steps[step.id]
            own.status, own.error_code, own.error_message = "failed", code, message[:1000]
            return True

        self._update(run.workflow_run_id, failed_step)
        if step.on_error == "continue":
            return {"next": "continue", "items": []}
        self._fail(run.workflow_run_id, {"code": code, "message": message, "step": step.id})
        return {"next": "fail", "items": []}

    def _record_run(self, workflow_run_id: str, step_id: str, step_run: StepRun) -> None:
        def add(current: WorkflowRun) -> bool:
            runs = current.steps[step_id].runs
            if any(r.run_id == step_run.run_id for r in runs):
                return False
            current.steps[step_id].runs = [r for r in runs if r.index != step_run.index] + [
                step_run
            ]
            return True

        self._update(workflow_run_id, add)

    def _item_finished(self, run: WorkflowRun, step: WorkflowStep, index: int) -> bool:
        for step_run in run.steps[step.id].runs:
            if step_run.index == index:
                try:
                    return self.engine.store.load_head(step_run.run_id).status in TERMINAL
                except RunNotFound:
                    return False
        return run.status != "running"

    def _collect(self, run: WorkflowRun, step: WorkflowStep) -> dict[str, Any]:
        """After the step's runs ended: retry failed ones, loop again, go on, or fail."""
        state = run.steps[step.id]
        heads = {r.index: self.engine.store.load_head(r.run_id) for r in state.runs}
        failed = [i for i, h in heads.items() if h.status != "succeeded"]
        if run.status != "running":
            return {"next": "stop", "items": []}
        retry = [i for i in failed if state.attempts.get(i, 0) < step.retries]
        if retry:

            def again(current: WorkflowRun) -> bool:
                own = current.steps[step.id]
                for i in retry:
                    own.attempts[i] = own.attempts.get(i, 0) + 1
                return True

            self._update(run.workflow_run_id, again)
            return {"next": "again", "items": retry}
        if failed:
            first = heads[failed[0]]
            code, message = first.error_code or "FAILED", first.error_message or first.status
            continuing = step.on_error == "continue"

            def failed_step(current: WorkflowRun) -> bool:
                own = current.steps[step.id]
                own.status, own.error_code, own.error_message = "failed", code, message
                return True

            self._update(run.workflow_run_id, failed_step)
            if not continuing:
                self._fail(run.workflow_run_id, {"code": code, "message": message, "step": step.id})
                return {"next": "fail", "items": []}
            return {"next": "continue", "items": []}
        if step.loop is not None:
            met = holds(step.loop.until, self.scope(self.load(run.workflow_run_id)))
            last = state.iteration + 1 >= step.loop.max_iterations
            if not met and not last:

                def next_pass(current: WorkflowRun) -> bool:
                    own = current.steps[step.id]
                    own.iteration, own.runs, own.attempts = own.iteration + 1, [], {}
                    return True

                self._update(run.workflow_run_id, next_pass)
                return {"next": "repeat", "items": []}

        def succeeded(current: WorkflowRun) -> bool:
            own = current.steps[step.id]
            own.status = "succeeded"
            if step.loop is not None:
                own.until_met = holds(step.loop.until, self.scope(current))
            return True

        self._update(run.workflow_run_id, succeeded)
        return {"next": "continue", "items": []}
