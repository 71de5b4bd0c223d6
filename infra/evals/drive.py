"""Drive one case's runs to their end, answering people's questions from the case.

An agent case is `agentfn run`'s loop (infra.cli.run_cli.follow) without a terminal: the
engine advances the run; a run (or an asked agent's run) that waits for approval gets the
case's next matching `approvals` entry, one waiting for an answer its next `replies`
entry. When none is left the run stays waiting, which is then its status. A workflow
case starts the workflow's state machine on the embedded stack and answers its step
runs the same way.
"""

from __future__ import annotations

import time
from typing import Any

from infra.evals.assertions import Outcome
from infra.evals.format import Approval, Case
from infra.evals.outcome import Collector, outcome_of
from runtime.spec import AgentfnSpec

WORKFLOW_SECONDS = 300.0


class Answers:
    """The case's scripted human answers, consumed in order."""

    def __init__(self, case: Case):
        self.approvals = list(case.approvals)
        self.replies = list(case.replies)

    def approval_for(self, tool: str) -> Approval | None:
        for index, approval in enumerate(self.approvals):
            if approval.tool in (tool, "*"):
                return self.approvals.pop(index)
        return None

    def reply(self) -> str | None:
        return self.replies.pop(0) if self.replies else None


def _answer(decide: Any, reply: Any, waiting: Any, answers: Answers) -> bool:
    """Answer what `waiting` waits for; False when the case has no answer for it."""
    if waiting.status == "awaiting_input" and waiting.clarification is not None:
        text = answers.reply()
        if text is None:
            return False
        reply(waiting.run_id, text)
        return True
    decided = False
    for pending in [p for p in waiting.pending_approval if p.tool_call_id not in waiting.decisions]:
        approval = answers.approval_for(pending.tool_name)
        if approval is None:
            continue
        decide(
            waiting.run_id,
            approval.decision == "approve",
            tool_call_id=pending.tool_call_id,
            reason=approval.reason,
            edited_inputs=approval.edit,
            by="eval",
        )
        decided = True
    return decided


def drive_agent(
    spec: AgentfnSpec, case: Case, clients: Any, models: Any, collector: Collector, clock: Any
) -> Outcome:
    from runtime.engine.loop import Engine
    from runtime.teams import waiting_for_a_person
    from runtime.tools.threads import run_loop

    engine = Engine(spec, clients.store(), models=models, listener=collector, clock=clock)
    answers, results, session = Answers(case), [], None
    for text in case.messages:
        head = engine.start(case.target, text, session)
        session = head.session_id
        while True:
            head = run_loop(engine.advance(head.run_id))
            waiting = waiting_for_a_person(engine.store, head)
            if waiting is None:
                break

            def decide(run_id: str, approved: bool, **kwargs: Any) -> None:
                engine.decide(run_id, approved=approved, **kwargs)

            if not _answer(decide, lambda r, t: engine.reply(r, t, by="eval"), waiting, answers):
                break
        results.append(engine.result(head.run_id))
        if head.status != "succeeded":
            break
    return outcome_of(engine.store, results, collector)


def drive_workflow(
    spec: AgentfnSpec, case: Case, clients: Any, models: Any, collector: Collector, clock: Any
) -> Outcome:
    from infra.local.embedded_stack import EmbeddedStack
    from runtime.workflows.service import WorkflowService

    options: dict[str, Any] = {"models": models, "listener": collector}
    if clock is not None:
        options["clock"] = clock
    stack = EmbeddedStack(spec, clients, engine_options=options)
    workflows = WorkflowService(stack.service)
    given = case.input
    if spec.workflows[case.target].input_schema is not None and isinstance(given, str):
        import json

        given = json.loads(given)
    view = workflows.start(case.target, given)
    answers, deadline = Answers(case), time.monotonic() + WORKFLOW_SECONDS
    store, runs = workflows.engine.store, workflows.runs

    def reply(run_id: str, text: str) -> None:
        runs.reply(run_id, text, by="eval")

    while view["status"] == "running" and time.monotonic() < deadline:
        waiting = _waiting_step(store, view)
        if waiting is not None and not _answer(runs.approve, reply, waiting, answers):
            break
        time.sleep(0.05)
        view = workflows.view(view["workflow_run_id"])
    step_results = [
        workflows.engine.result(r["run_id"]) for step in view["steps"] for r in step["runs"]
    ]
    outcome = outcome_of(store, step_results or [{"status": view["status"]}], collector)
    status = view["status"]
    if status == "running" and step_results:
        status = next(
            (r["status"] for r in step_results if str(r["status"]).startswith("awaiting")), status
        )
    outcome.status = status
    outcome.result = view.get("result")
    outcome.error_code, outcome.error_message = view.get("error_code"), view.get("error_message")
    return outcome


def _waiting_step(store: Any, view: dict[str, Any]) -> Any:
    """The step run that waits for a person, if one does."""
    for step in view["steps"]:
        for step_run in step["runs"]:
            if step_run["status"] in ("awaiting_approval", "awaiting_input"):
                return store.load_head(step_run["run_id"])
    return None
