"""Runs as the deployed stack sees them: the API's operations and the state machine's tasks.

The API starts a run inline (by invoking the agent's own function, so each agent keeps its
own least-privilege role) for up to `wait_seconds`; a run that is not finished by then is
handed to the agent's state machine, which advances it, waits for people with task tokens,
and finishes it. Decisions are always recorded in DynamoDB first (the source of truth),
then the waiting execution is resumed with SendTaskSuccess.

The same class serves the deployed handlers, `agentfn dev` and the tests; AWS clients are
injected.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from runtime.engine.loop import Engine
from runtime.errors import InvalidRequest, StateConflict, WrongState
from runtime.store.base import PAUSED, TERMINAL, RunHead

log = logging.getLogger("agentfn.service")

MAX_INLINE_SECONDS = 25  # API Gateway gives up at 29 s
STEP_MARGIN_SECONDS = 10  # kept back from a Lambda's remaining time
RESULT_LIMIT_BYTES = 200_000  # Step Functions payloads stop at 256 KB
DECISION_RETRIES = 5


@dataclass
class Stack:
    """How this process reaches the rest of the deployment."""

    state_machines: dict[str, str] = field(default_factory=dict)  # agent → state machine ARN
    agent_functions: dict[str, str] = field(default_factory=dict)  # agent → function name/ARN
    event_bus: str = "default"


class RunService:
    def __init__(
        self,
        engine: Engine,
        stack: Stack,
        *,
        sfn: Any = None,
        lambda_client: Any = None,
        events: Any = None,
    ):
        self.engine = engine
        self.stack = stack
        self.sfn = sfn
        self.lambda_client = lambda_client
        self.events = events

    # ---- the API's operations ------------------------------------------------------------

    def agents(self) -> list[dict[str, Any]]:
        spec = self.engine.spec
        return [
            {"name": name, "description": agent.description, "model": spec.model_for(name)}
            for name, agent in spec.agents.items()
        ]

    def start(
        self, agent: str, text: str, session_id: str | None = None, wait_seconds: float = 0
    ) -> tuple[int, dict[str, Any]]:
        """(200, result) when the run finished within `wait_seconds`, else (202, run status)."""
        if agent not in self.engine.spec.agents:
            raise InvalidRequest(f"no agent named {agent!r}", field="agent", not_found=True)
        head = self.engine.start(agent, text, session_id)
        budget = min(max(0.0, wait_seconds), MAX_INLINE_SECONDS)
        if budget > 0:
            self._advance_inline(head, budget)
        head = self.engine.store.load_head(head.run_id)
        if head.status in TERMINAL:
            return 200, self.engine.result(head.run_id)
        self._start_execution(head)
        return 202, self._summary(head)

    def get(self, run_id: str) -> dict[str, Any]:
        return self.engine.result(run_id)

    def events_after(self, run_id: str, after: int = -1, limit: int = 100) -> dict[str, Any]:
        self.engine.store.load_head(run_id)  # 404 for an unknown run
        events = self.engine.store.list_events(run_id, after=after, limit=limit)
        return {
            "run_id": run_id,
            "events": [e.model_dump(mode="json") for e in events],
            "next_after": events[-1].seq if events else after,
        }

    def approve(
        self,
        run_id: str,
        approved: bool,
        *,
        tool_call_id: str | None = None,
        reason: str | None = None,
        edited_inputs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        head = self._retrying(
            run_id,
            lambda: self.engine.decide(
                run_id,
                approved,
                tool_call_id=tool_call_id,
                reason=reason,
                edited_inputs=edited_inputs,
            ),
        )
        self._resume_if_decided(head)
        return self.engine.result(run_id)

    def reply(self, run_id: str, text: str) -> dict[str, Any]:
        head = self._retrying(run_id, lambda: self.engine.reply(run_id, text))
        self._resume_if_decided(head)
        return self.engine.result(run_id)

    def cancel(self, run_id: str) -> dict[str, Any]:
        head = self._retrying(run_id, lambda: self.engine.cancel(run_id))
        arn = self._execution_arn(head)
        if self.sfn is not None and arn is not None:
            try:
                self.sfn.stop_execution(executionArn=arn, error="RunCancelled", cause="cancelled")
            except Exception as exc:  # already finished, or never started: the run is cancelled
                log.info("stop_execution: %s", type(exc).__name__)
            if head.task_token:
                # Release a task that waits for people. After a stop this is a no-op on AWS
                # (the token is dead, the error is ignored); an emulator whose worker blocks
                # on the token needs it to notice the stop.
                try:
                    self.sfn.send_task_failure(
                        taskToken=head.task_token, error="RunCancelled", cause="cancelled"
                    )
                except Exception as exc:
                    log.info("send_task_failure: %s", type(exc).__name__)
        self._notify(head)
        return self.engine.result(run_id)

    # ---- the state machine's tasks -------------------------------------------------------

    def step(self, event: dict[str, Any], remaining_seconds: float) -> dict[str, Any]:
        """One task of the agent's state machine (see infra/sam/asl.py for the contract)."""
        action = event.get("action", "advance")
        run_id = str(event["run_id"])
        if action == "advance":
            budget = max(1.0, remaining_seconds - STEP_MARGIN_SECONDS)
            if event.get("budget_seconds"):
                budget = min(budget, float(event["budget_seconds"]))
            return self._route(self.advance(run_id, budget))
        if action == "wait":
            return self._wait(run_id, str(event["task_token"]))
        if action == "timeout":
            if event.get("kind") == "input":
                head = self._retrying(
                    run_id, lambda: self.engine.expire_input(run_id), tolerate_state=True
                )
            else:
                head = self._retrying(
                    run_id, lambda: self.engine.expire_approvals(run_id), tolerate_state=True
                )
            return self._route(head)
        if action == "result":
            return self._bounded(self.engine.result(run_id))
        if action == "fail":
            error = event.get("error") or {}
            message = f"{error.get('Error', 'Error')}: {str(error.get('Cause', ''))[:500]}"
            head = self.engine.force_fail(run_id, "INTERNAL", message)
            self._notify(head)
            return self._route(head)
        raise InvalidRequest(f"unknown action {action!r}", field="action")

    def advance(self, run_id: str, budget: float) -> RunHead:
        import asyncio

        before = self.engine.store.load_head(run_id).status
        head = asyncio.run(self.engine.advance(run_id, budget))
        if head.status != before:
            self._notify(head)
        return head

    # ---- internals -----------------------------------------------------------------------

    def _advance_inline(self, head: RunHead, budget: float) -> None:
        payload = {"action": "advance", "run_id": head.run_id, "budget_seconds": budget}
        function = self.stack.agent_functions.get(head.agent)
        if self.lambda_client is None or function is None:
            self.advance(head.run_id, budget)  # one process (tests, `agentfn run`)
            return
        answer = self.lambda_client.invoke(
            FunctionName=function, InvocationType="RequestResponse", Payload=json.dumps(payload)
        )
        if answer.get("FunctionError"):  # leased, crashed: the state machine takes over
            log.warning("inline advance failed: %s", answer["Payload"].read()[:300])

    def _start_execution(self, head: RunHead) -> None:
        arn = self.stack.state_machines.get(head.agent)
        if self.sfn is None or arn is None:
            return
        # A retried request finds the execution already on its way: nothing to do.
        with contextlib.suppress(self.sfn.exceptions.ExecutionAlreadyExists):
            self.sfn.start_execution(
                stateMachineArn=arn, name=head.run_id, input=json.dumps({"run_id": head.run_id})
            )

    def _execution_arn(self, head: RunHead) -> str | None:
        arn = self.stack.state_machines.get(head.agent)
        if arn is None:
            return None
        return arn.replace(":stateMachine:", ":execution:") + f":{head.run_id}"

    def _wait(self, run_id: str, token: str) -> dict[str, Any]:
        head = self._retrying(run_id, lambda: self.engine.store_task_token(run_id, token))
        if head.status not in PAUSED:
            # The decision arrived before the token was stored: resume now ourselves.
            self._send_success(token, head)
        return {"run_id": run_id, "status": head.status}

    def _resume_if_decided(self, head: RunHead) -> None:
        if head.status == "running" and head.task_token:
            self._send_success(head.task_token, head)

    def _send_success(self, token: str, head: RunHead) -> None:
        if self.sfn is None:
            return
        try:
            self.sfn.send_task_success(taskToken=token, output=json.dumps({"run_id": head.run_id}))
        except Exception as exc:  # a stale token (already resumed, timed out): nothing waits
            log.info("send_task_success: %s", type(exc).__name__)

    def _retrying(self, run_id: str, operation: Any, *, tolerate_state: bool = False) -> RunHead:
        """Decisions race with the wait task storing its token; a lost race is re-read and
        tried again. With `tolerate_state`, a run no longer in the expected state is left
        as it is (a timeout that lost to a decision)."""
        for attempt in range(DECISION_RETRIES):
            try:
                head: RunHead = operation()
                return head
            except StateConflict:
                if attempt + 1 == DECISION_RETRIES:
                    raise
            except WrongState as exc:
                if not tolerate_state:
                    raise
                log.info("nothing to time out: run %s is %s", run_id, exc.status)
                break
        return self.engine.store.load_head(run_id)

    def _route(self, head: RunHead) -> dict[str, Any]:
        wait = 0
        if head.status == "awaiting_approval" and head.pending_approval:
            wait = min(p.timeout_seconds for p in head.pending_approval)
        return {"run_id": head.run_id, "status": head.status, "wait_seconds": wait}

    def _summary(self, head: RunHead) -> dict[str, Any]:
        return {
            "run_id": head.run_id,
            "agent": head.agent,
            "session_id": head.session_id,
            "status": head.status,
        }

    def _bounded(self, result: dict[str, Any]) -> dict[str, Any]:
        """The result as the execution's output, kept under Step Functions' payload limit."""
        if len(json.dumps(result, default=str)) <= RESULT_LIMIT_BYTES:
            return result
        slim = dict(result)
        slim["tool_calls"] = [
            {**c, "output": "[omitted from the execution output; GET /runs/{run_id} has it]"}
            for c in result.get("tool_calls", [])
        ]
        if len(json.dumps(slim, default=str)) > RESULT_LIMIT_BYTES:
            slim["result"] = "[too large for the execution output; GET /runs/{run_id} has it]"
        return slim

    def _notify(self, head: RunHead) -> None:
        """EventBridge: approval requested and run finished, so approvers can be notified."""
        if self.events is None:
            return
        if head.status == "awaiting_approval":
            kind = "Approval Requested"
        elif head.status in TERMINAL:
            kind = "Run Finished"
        else:
            return
        detail = self._summary(head)
        if head.pending_approval:
            detail["pending_approval"] = [p.model_dump(mode="json") for p in head.pending_approval]
        if head.error_code:
            detail["error_code"] = head.error_code
        try:
            self.events.put_events(
                Entries=[
                    {
                        "Source": "agentfn",
                        "DetailType": kind,
                        "Detail": json.dumps(detail),
                        "EventBusName": self.stack.event_bus,
                    }
                ]
            )
        except Exception as exc:  # notification is best effort; the run state is the truth
            log.warning("put_events failed: %s", type(exc).__name__)
