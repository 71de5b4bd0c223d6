"""Runs as the deployed stack sees them: the API's operations and the state machine's tasks.

The API starts a run inline (by invoking the agent's own function, so each agent keeps its
own least-privilege role) for up to `wait_seconds`; a run that is not finished by then is
handed to the agent's state machine, which advances it, waits for people with task tokens,
and finishes it. Decisions are always recorded in DynamoDB first (the source of truth),
then the waiting execution is resumed with SendTaskSuccess.

The same class serves the deployed handlers, `agentfn dev` and the tests (clients injected).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from typing import Any

from runtime.engine.loop import Engine
from runtime.errors import InvalidRequest, RunNotFound, StateConflict, WrongState
from runtime.executions import Executions
from runtime.notifications import Notifications
from runtime.observability import logs
from runtime.stack import Stack
from runtime.store.base import PAUSED, TERMINAL, RunHead
from runtime.structs import dump
from runtime.teams import TeamOrchestration

log = logging.getLogger("agentfn.service")

MAX_INLINE_SECONDS = 25  # API Gateway gives up at 29 s
API_MARGIN_SECONDS = 4  # kept back from the API's own remaining time for the answer
STEP_MARGIN_SECONDS = 10  # kept back from a Lambda's remaining time
TASK_ACTIONS = frozenset({"advance", "continue", "wait", "timeout", "fail"})  # infra/sam/asl.py
DECISION_RETRIES = 5
#: Advance loops one execution runs before the run continues in a fresh execution, so no
#: execution nears Step Functions' 25,000-event history limit (infra/sam/asl.py proves the
#: worst case per loop times this stays under it).
MAX_LOOPS = 80
LONG_POLL_INTERVAL = 0.5  # seconds between reads of a long poll (GET …/events?wait=)


class RunService(Executions, TeamOrchestration, Notifications):
    def __init__(
        self,
        engine: Engine,
        stack: Stack,
        *,
        sfn: Any = None,
        lambda_client: Any = None,
        events: Any = None,
        agent: str | None = None,
        sleep: Any = time.sleep,
    ):
        self.engine = engine
        self.stack = stack
        self.sfn = sfn
        self.lambda_client = lambda_client
        self.events = events
        self.agent = agent  # the agent function's own agent: it advances its team's runs only
        self._sleep = sleep
        if sfn is not None and stack.state_machine_prefix:
            engine.child_starter = self.start_execution  # children: executions of their own

    # ---- the API's operations ------------------------------------------------------------

    def agents(self) -> list[dict[str, Any]]:
        spec = self.engine.spec
        return [
            {"name": name, "description": agent.description, "model": spec.model_for(name)}
            for name, agent in spec.agents.items()
        ]

    def start(
        self,
        agent: str,
        text: str,
        session_id: str | None = None,
        wait_seconds: float = 0,
        *,
        time_left: float | None = None,
        max_turns: int | None = None,
        run_id: str | None = None,
        trigger: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """(200, result) when the run finished within `wait_seconds`, else (202, run status).

        A triggered start (runtime.triggers.starter) names the run (`run_id`, derived from
        its event: the idempotency key) and records `trigger`: a run of that id that already
        exists is answered as it is (its execution started again if the first delivery could
        not start it: StartExecution by name is idempotent), never started twice.

        No path leaves a run without an owner: whatever the inline attempt does (throttled,
        crashed, out of time), a run that is not finished is handed to its state machine
        before answering, and the answer always carries the run id. `time_left` (the API's
        own remaining time) bounds the inline attempt, in-flight model call included."""
        if agent not in self.engine.spec.agents:
            hint = (
                f"; {agent!r} is a workflow: POST /workflows/{agent}/runs"
                if agent in self.engine.spec.workflows
                else ""
            )
            raise InvalidRequest(f"no agent named {agent!r}{hint}", field="agent", not_found=True)
        budget = min(max(0.0, wait_seconds), MAX_INLINE_SECONDS)
        if time_left is not None:
            budget = min(budget, time_left - API_MARGIN_SECONDS)
        if run_id is not None:
            existing = self._existing(run_id)
            if existing is not None:
                return existing
        waiting = self.engine.pending_question(agent, session_id) if session_id else None
        if waiting is not None and trigger is None:  # it answers the question the run asked
            return self._answer_pending(waiting, text, budget)
        try:
            head = self.engine.start(
                agent,
                text,
                session_id,
                max_turns=max_turns,
                answer_pending=False,
                run_id=run_id,
                trigger=trigger,
            )
        except StateConflict:
            found = self._existing(run_id) if run_id is not None else None
            if found is None:  # a concurrent delivery of the same event created it
                raise
            return found
        try:
            if budget >= 1:
                self._advance_inline(head, budget)
        except Exception:  # the state machine takes over; the caller still gets the run id
            log.exception("inline advance of run %s failed", head.run_id)
        finally:
            head = self.engine.store.load_head(head.run_id)
            if head.status not in TERMINAL:
                self.start_execution(head)
        if head.status in TERMINAL:
            return 200, self.engine.result(head.run_id)
        return 202, self._summary(head)

    def _existing(self, run_id: str) -> tuple[int, dict[str, Any]] | None:
        """A redelivered event's run (its execution started again, by name: at most once)."""
        try:
            head = self.engine.store.load_head(run_id)
        except RunNotFound:
            return None
        if head.status in TERMINAL:
            return 200, self.engine.result(run_id)
        if head.status == "running":
            self.start_execution(head)  # idempotent: the same name, the same execution
        return 202, self._summary(head)

    def _answer_pending(
        self, waiting: RunHead, text: str, budget: float
    ) -> tuple[int, dict[str, Any]]:
        """Reply to the waiting run (its execution resumes) and, within `budget`, wait for
        it to finish or pause again, as a start would; the answer is that run's."""
        self.reply(waiting.run_id, text)
        deadline = time.monotonic() + budget
        head = self.engine.store.load_head(waiting.run_id)
        if budget >= 1 and self.sfn is None and head.status == "running":
            self._advance_inline(head, budget)  # one process: no execution to resume
        while head.status == "running" and time.monotonic() + LONG_POLL_INTERVAL < deadline:
            self._sleep(LONG_POLL_INTERVAL)
            head = self.engine.store.load_head(waiting.run_id)
        if head.status in TERMINAL:
            return 200, self.engine.result(head.run_id)
        return 202, self._summary(head)

    def delete_session(self, agent: str, session_id: str) -> dict[str, Any]:
        """Delete a session, its runs' items and objects (store.delete_session); a run of it
        that has not ended is 409 (cancel it first): nothing goes under a running execution."""
        if agent not in self.engine.spec.agents:
            raise InvalidRequest(f"no agent named {agent!r}", field="agent", not_found=True)
        store = self.engine.store
        for run_id in store.session_runs(agent, session_id):
            with contextlib.suppress(RunNotFound):  # a half-deleted session: go on
                head = store.load_head(run_id)
                if head.status not in TERMINAL:
                    raise WrongState(
                        f"run {run_id} of session {session_id} is {head.status}; cancel it "
                        "before deleting the session",
                        status=head.status,
                    )
        deleted = store.delete_session(agent, session_id)
        return {"agent": agent, "session_id": session_id, "deleted_runs": deleted}

    def get(self, run_id: str) -> dict[str, Any]:
        return self.engine.result(run_id)

    def events_after(
        self, run_id: str, after: int = -1, limit: int = 100, wait: float = 0.0
    ) -> dict[str, Any]:
        """Events after `after`; with `wait`, a long poll: up to that many seconds for the
        next one, unless the run has ended (then nothing more will come)."""
        store = self.engine.store
        deadline = time.monotonic() + wait
        while True:
            head = store.load_head(run_id)  # 404 for an unknown run; read before the events,
            events = store.list_events(run_id, after=after, limit=limit)  # which commit with it
            if events or head.status in TERMINAL or time.monotonic() >= deadline:
                break
            time.sleep(min(LONG_POLL_INTERVAL, max(0.0, deadline - time.monotonic())))
        return {
            "run_id": run_id,
            "events": [dump(e) for e in events],
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
        by: str | None = None,
    ) -> dict[str, Any]:
        """Record the decision, then resume the waiting execution. A repeated identical
        decision (a retry after a lost answer) resumes it again instead of answering 409. A
        parent waiting for its children passes the decision to the child that waits."""
        decision = {"approved": approved, "reason": reason, "edited_inputs": edited_inputs}
        if self.forward_to_remote(
            run_id, data={k: v for k, v in decision.items() if v is not None}
        ):
            return self.engine.result(run_id)
        target = self.decision_target(run_id, "awaiting_approval", tool_call_id)
        head = self._retrying(
            target,
            lambda: self.engine.decide(
                target,
                approved,
                tool_call_id=tool_call_id,
                reason=reason,
                edited_inputs=edited_inputs,
                by=by,
            ),
        )
        self._resume_if_decided(head)
        return self.engine.result(run_id)

    def reply(self, run_id: str, text: str, *, by: str | None = None) -> dict[str, Any]:
        if self.forward_to_remote(run_id, text=text):
            return self.engine.result(run_id)
        target = self.decision_target(run_id, "awaiting_input", None)
        head = self._retrying(target, lambda: self.engine.reply(target, text, by=by))
        self._resume_if_decided(head)
        return self.engine.result(run_id)

    def cancel(self, run_id: str, *, by: str | None = None) -> dict[str, Any]:
        head = self._retrying(run_id, lambda: self.engine.cancel(run_id, by=by))
        self.stop_execution(head)
        self.cancel_children(head, by)
        self.notify(head)
        return self.engine.result(run_id)

    # ---- the state machine's tasks -------------------------------------------------------

    def step(self, event: dict[str, Any], remaining_seconds: float) -> dict[str, Any]:
        """One task of the agent's state machine (see infra/sam/asl.py for the contract)."""
        action = event.get("action", "advance")
        if action not in TASK_ACTIONS:
            raise InvalidRequest(f"unknown action {str(action)[:100]!r}", field="action")
        run_id = str(event["run_id"])
        if not self.may_advance(run_id):
            raise InvalidRequest(
                f"run {run_id} is not a run of agent {self.agent}'s team", field="run_id"
            )
        loops = int(event.get("loops") or 0)
        routed = self._task(action, run_id, loops, event, remaining_seconds)
        if not routed.get("function"):  # no stack names (a test): stay where the task ran
            routed["function"] = event.get("function", "")
        return routed

    def _task(
        self,
        action: str,
        run_id: str,
        loops: int,
        event: dict[str, Any],
        remaining_seconds: float,
    ) -> dict[str, Any]:
        if action == "advance":
            budget = max(1.0, remaining_seconds - STEP_MARGIN_SECONDS)
            if event.get("budget_seconds"):
                budget = min(budget, float(event["budget_seconds"]))
            return self._route(self.advance(run_id, budget), loops + 1)
        if action == "continue":
            return self._continue(run_id, loops)
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
            return self._route(head, loops)
        if action == "fail":
            error = event.get("error") or {}
            message = f"{error.get('Error', 'Error')}: {str(error.get('Cause', ''))[:500]}"
            head = self.engine.force_fail(run_id, "INTERNAL", message)
            self.notify(head)
            return self._route(head, loops)
        raise AssertionError(action)  # TASK_ACTIONS lists every branch above

    def advance(self, run_id: str, budget: float) -> RunHead:
        from runtime.tools.threads import run_loop

        loaded = self.engine.store.load_head(run_id)
        logs.bind_head(loaded)  # the run's keys on every log line of this advance (deployed)
        head = run_loop(self.engine.advance(run_id, budget, loaded))
        if head.status != loaded.status:
            self.notify(head)
        return head

    # ---- internals -----------------------------------------------------------------------

    def _advance_inline(self, head: RunHead, budget: float) -> None:
        payload = {"action": "advance", "run_id": head.run_id, "budget_seconds": budget}
        function = self.stack.function(head.active_agent)  # who has the conversation
        if self.lambda_client is None or function is None:
            self.advance(head.run_id, budget)  # one process (tests, `agentfn run`)
            return
        answer = self.lambda_client.invoke(
            FunctionName=function, InvocationType="RequestResponse", Payload=json.dumps(payload)
        )
        if answer.get("FunctionError"):  # leased, crashed: the state machine takes over
            log.warning("inline advance failed: %s", answer["Payload"].read()[:300])

    def _continue(self, run_id: str, loops: int) -> dict[str, Any]:
        """Carry the run on in a fresh execution of the same state machine (the current one
        then ends): the generation is committed first, so a retried task starts the same
        execution again, never a second one."""
        head = self.engine.store.load_head(run_id)
        if head.status not in TERMINAL:
            head = self._retrying(run_id, lambda: self.engine.next_generation(run_id))
            self.start_execution(head)
        return {**self._route(head, loops), "continued": True}

    def _wait(self, run_id: str, token: str) -> dict[str, Any]:
        head = self._retrying(run_id, lambda: self.engine.store_task_token(run_id, token))
        children = head.status == "awaiting_children"
        if head.status not in PAUSED or (children and self.children_done(head)):
            # The decision (or the last child) came before the token was stored: resume now.
            self._send_success(token, head)
        return {"run_id": run_id, "status": head.status}

    def _resume_if_decided(self, head: RunHead) -> None:
        if head.status == "running" and head.task_token:
            self._send_success(head.task_token, head)

    def _retrying(self, run_id: str, operation: Any, *, tolerate_state: bool = False) -> RunHead:
        """Decisions race with the wait task storing its token; a lost race is re-read and
        tried again. With `tolerate_state`, a run no longer in the expected state is left
        as it is (a timeout that lost to a decision)."""
        for attempt in range(DECISION_RETRIES):
            try:
                head: RunHead = operation()
                logs.bind_head(head)
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

    def _route(self, head: RunHead, loops: int = 0) -> dict[str, Any]:
        """What the state machine routes on: ids and small values only, never results (the
        256 KB state limit can never be reached). `wait_seconds` is what is left of the wait
        the run is in (a restarted execution waits only the rest); `loops` counts advances in
        this execution."""
        ends: list[float] = []
        if head.status == "awaiting_approval" and head.pending_approval:
            ends = [min(p.expires_at for p in head.pending_approval)]
        elif head.status == "awaiting_input" and head.clarification is not None:
            ends = [head.clarification.expires_at]
        elif head.status == "awaiting_children":  # before the data expires, or a remote look
            ends = [self.children_wait_end(head)]
        wait = max(1, math.ceil(ends[0] - self.engine.clock.now())) if ends else 0
        return {
            "run_id": head.run_id,
            "function": self.function_for(head),
            "status": head.status,
            "wait_seconds": wait,
            "loops": loops,
            "continue": loops >= MAX_LOOPS,
        }
