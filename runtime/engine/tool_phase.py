"""The tool phase of a step: run the latest answer's pending tool calls, commit each result.

Calls run in the model's order; consecutive read-only calls run concurrently. An
`agent_clarify` call pauses the run instead of running. An `at_most_once` call commits its
start first, so a crash between start and result is reported as "outcome unknown" rather
than run twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from runtime.engine.approval import apply_decision, rule_for, timeout_for
from runtime.engine.commits import BudgetSpent, RunCursor, wait_until
from runtime.engine.compaction import Compaction
from runtime.engine.hooks import EDITED, HookPhase
from runtime.engine.tool_failures import tool_failure
from runtime.engine.toolrun import error_result, execute, find_reusable, reuse_result
from runtime.engine.traced import Traced
from runtime.events import preview
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage
from runtime.observability.tracing import NOT_TRACED
from runtime.spec import AgentfnSpec
from runtime.store.base import Clarification, PendingApproval
from runtime.structs import dump, replace
from runtime.tools.base import Tool, ToolContext
from runtime.tools.builtins import CLARIFY
from runtime.tools.team import control_of

T = TypeVar("T")

OUTCOME_UNKNOWN = (
    "outcome unknown: this call started but the run was interrupted before its result was "
    "recorded; it was not run again. Check its effect before retrying."
)


class ToolPhase(Compaction, HookPhase, Traced):
    """The tool side of Engine (split out to keep modules small)."""

    spec: AgentfnSpec
    _rules: dict[tuple[str, str], bool]

    async def _bounded(self, run: RunCursor, call: Awaitable[T]) -> T:
        """Await within the advance's time budget; past it, raise BudgetSpent (what was cut
        off committed nothing, so whoever advances next simply does it again)."""
        if run.deadline is None:
            return await call
        try:
            async with asyncio.timeout(max(0.0, run.deadline - self.clock.monotonic())):
                return await call
        except TimeoutError:
            raise BudgetSpent from None

    def _gated(self, run: RunCursor, call: ToolCall) -> bool:
        if call.arguments is None:
            return False  # answered with an error without running: nothing to approve
        key = (run.agent, call.name)
        gated = self._rules.get(key)
        if gated is None:
            tool = self._toolbox(run.head).get(call.name)
            gated = rule_for(self.spec, run.agent, tool) is not None
            self._rules[key] = gated
        return gated

    def _batchable(self, run: RunCursor, call: ToolCall) -> bool:
        tool = self._toolbox(run.head).get(call.name)
        return (
            tool is not None
            and tool.effect == "read_only"
            and call.arguments is not None
            and call.name != CLARIFY
            and not self._gated(run, call)
        )

    def _control_of(self, tools: dict[str, Tool], call: ToolCall) -> tuple[str, str] | None:
        """The team control a call is (ask, transfer, help), by the tool's identity."""
        tool = tools.get(call.name)
        if tool is None or call.arguments is None:
            return None
        return control_of(tool.reference)

    async def _ask(self, run: RunCursor, calls: list[tuple[ToolCall, str]]) -> None:
        raise NotImplementedError  # runtime.engine.team

    def _hand_over(
        self, run: RunCursor, call: ToolCall, kind: str, target: str, rest: list[ToolCall]
    ) -> bool:
        raise NotImplementedError  # runtime.engine.team

    def _team_view(self, run: RunCursor) -> Any:
        raise NotImplementedError  # runtime.engine.team

    def _fits_budget(self, run: RunCursor, call: ToolCall) -> bool:
        """Whether an at_most_once call can finish (at its timeout) before the advance's
        deadline: such a call is started only when it need not be abandoned half way."""
        if run.deadline is None:
            return True
        config = self.spec.agents[run.agent]
        tool = self._toolbox(run.head).get(call.name)
        timeout = (tool.timeout if tool else None) or config.tool_timeout
        timeout = timeout or self.spec.defaults.tool_timeout
        return self.clock.monotonic() + timeout <= run.deadline

    async def _run_tools(self, run: RunCursor, pending: list[ToolCall]) -> None:
        tools = self._toolbox(run.head)
        index = 0
        while index < len(pending):
            call = pending[index]
            last = index + 1 == len(pending)
            if call.name == CLARIFY and call.arguments is not None:
                self._pause_for_clarification(run, call)
                return
            control = self._control_of(tools, call)
            if control is not None and control[0] == "ask":
                asks = [(call, control[1])]  # consecutive asks: children that run together
                while index + len(asks) < len(pending):
                    following = self._control_of(tools, pending[index + len(asks)])
                    if following is None or following[0] != "ask":
                        break
                    asks.append((pending[index + len(asks)], following[1]))
                await self._ask(run, asks)
                if run.head.status != "running":
                    return
                index += len(asks)
                continue
            if control is not None:
                if self._hand_over(run, call, control[0], control[1], pending[index + 1 :]):
                    return
                index += 1
                continue
            if self._batchable(run, call):
                batch = [call]
                while index + len(batch) < len(pending) and self._batchable(
                    run, pending[index + len(batch)]
                ):
                    batch.append(pending[index + len(batch)])
                # Read-only calls may be cut off at the deadline: they are simply run again.
                if len(batch) == 1:
                    results = [await self._bounded(run, self._checked_execute(run, batch[0]))]
                else:
                    gathered = asyncio.gather(*(self._checked_execute(run, c) for c in batch))
                    results = list(await self._bounded(run, gathered))
                for done in results:
                    self._record_result(run, done, last=index + 1 == len(pending))
                    index += 1
                for done in results:
                    self._end_on_failure(run, done)
                continue
            call, denied = await self._pre_tool_use(run, call)  # hooks, before any person
            if denied is not None:
                self._record_result(run, denied, last=last)
                index += 1
                continue
            if self._gated(run, call):
                decision = run.head.decisions.get(call.id)
                if decision is None:
                    self._pause_for_approval(run, await self._settled(run, pending[index:]))
                    return
                approved, replacement = apply_decision(call, decision, self._turn(run))
                if replacement is not None:
                    self._record_result(run, replacement, last=last)
                    index += 1
                    continue
                assert approved is not None
                call = approved
                decided_by = decision.by
                if decision.edited_inputs is not None:  # the edit meets the hooks too
                    call, denied = await self._pre_tool_use(run, call, edited=True)
                    if denied is not None:
                        self._record_result(run, replace(denied, decided_by=decided_by), last=last)
                        index += 1
                        continue
            else:
                decided_by = None
            tool = tools.get(call.name)
            once = tool is not None and tool.effect == "at_most_once" and call.arguments is not None
            if once and call.id in run.head.started_calls:
                result = error_result(call, self._turn(run), OUTCOME_UNKNOWN)
                result = replace(result, outcome_unknown=True)
                self._record_result(run, result, last=last)
                index += 1
                continue
            if once and not self._fits_budget(run, call):
                raise BudgetSpent  # the next invocation, with a whole Lambda's time, runs it
            if once:
                started = [*run.head.started_calls, call.id]
                notes, noted = self._hook_notes(run, call.id)
                run.head = self._commit(
                    run.head,
                    [],
                    [*notes, ("tool_call", self._call_event(run, call))],
                    update={**noted, "started_calls": started},
                )
            # An idempotent call cut off at the deadline is run again; an at_most_once one
            # was started only because it fits.
            execution = self._execute(run, call)
            result = await (execution if once else self._bounded(run, execution))
            result.decided_by = decided_by
            self._record_result(run, result, last=last, announced=once)
            self._end_on_failure(run, result)
            index += 1

    def _end_on_failure(self, run: RunCursor, result: ToolResultMessage) -> None:
        """Raise TOOL_FAILED when the tool's (or agent's) `on_failure: fail_run` says so."""
        failed = tool_failure(self.spec, run.agent, run.messages, result)
        if failed is not None:
            raise failed

    def _pause_for_approval(self, run: RunCursor, remaining: list[ToolCall]) -> None:
        """Pause with every undecided gated call of this step pending together."""
        now = self.clock.now()
        tools = self._toolbox(run.head)
        pending: list[PendingApproval] = []
        for call in remaining:
            if call.id in run.head.decisions or not self._gated(run, call):
                continue
            rule = rule_for(self.spec, run.agent, tools.get(call.name))
            assert rule is not None
            timeout = timeout_for(self.spec, rule)
            pending.append(
                PendingApproval(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    inputs=call.arguments,
                    expires_at=wait_until(run.head, now + timeout),
                    decisions=list(rule.decisions),
                    timeout_seconds=int(timeout),
                )
            )
        head = replace(run.head, status="awaiting_approval", pending_approval=pending)
        data = {"calls": [dump(p) for p in pending]}
        run.head = self._commit(head, [], [("approval_requested", data)], release=True)

    def _turn(self, run: RunCursor) -> int:
        return next(
            (m.turn for m in reversed(run.messages) if isinstance(m, AssistantMessage)),
            run.head.turn,
        )

    def _call_event(self, run: RunCursor, call: ToolCall) -> dict[str, Any]:
        event = {
            "turn": self._turn(run),
            "tool_call_id": call.id,
            "tool_name": call.name,
            "inputs": preview(call.arguments_json()),
        }
        tool = self._toolbox(run.head).get(call.name)
        if tool is not None and tool.open_world:  # MCP openWorldHint: reaches outside
            event["open_world"] = True
        return event

    def _session_outputs(self, run: RunCursor) -> list[ToolResultMessage]:
        return [m for m in (*run.history, *run.messages) if isinstance(m, ToolResultMessage)]

    async def _execute(self, run: RunCursor, call: ToolCall) -> ToolResultMessage:
        config = self.spec.agents[run.agent]
        tools = self._toolbox(run.head)
        cap = config.tool_result_max_chars or self.spec.defaults.tool_result_max_chars
        tool = tools.get(call.name)
        fit = self._result_share(run)  # the window's share for this result
        if tool is not None and tool.reuse_cached and call.arguments is not None:
            earlier = find_reusable(self._session_outputs(run), tool, call)
            if earlier is not None:
                reused = reuse_result(
                    tool, call, earlier, self.store.blobs, cap, self._turn(run), fit
                )
                if reused is not None:
                    reused.at = self.clock.now()
                    return await self._post_tool_use(run, call, reused)
        ctx = ToolContext(
            run.head.run_id,
            run.head.session_id,
            run.head.agent,
            call.id,
            blobs=self.store.blobs,
            session_outputs=lambda: self._session_outputs(run),
            team=self._team_view(run),
            now=self.clock.now,
        )
        result = await execute(
            tools,
            call,
            ctx,
            turn=self._turn(run),
            timeout=config.tool_timeout or self.spec.defaults.tool_timeout,
            max_chars=cap,
            blobs=self.store.blobs,
            fit=fit,
        )
        result.at = self.clock.now()
        return await self._post_tool_use(run, call, result)

    def _record_result(
        self,
        run: RunCursor,
        result: ToolResultMessage,
        *,
        last: bool,
        announced: bool = False,
    ) -> None:
        result = self._fit_result(run, result)  # a long error or denial: a preview too
        events, update = self._hook_notes(run, result.tool_call_id)  # hooks decided first
        if not announced:
            call = ToolCall(id=result.tool_call_id, name=result.tool_name, arguments=result.inputs)
            events.append(("tool_call", self._call_event(run, call)))
        done: dict[str, Any] = {
            "turn": result.turn,
            "tool_call_id": result.tool_call_id,
            "tool_name": result.tool_name,
            "success": result.success,
            "duration_ms": result.duration_ms,
            "output": preview(result.content),
        }
        if result.output_truncated:  # the result contract shows a preview of the output
            done.update(output_truncated=True, output_chars=result.full_size)
        events.append(("tool_result", done))
        if last:
            events.append(("step_completed", {"turn": result.turn}))
        if result.tool_ref is None:  # the identity the result is cached and matched under
            tool = self._toolbox(run.head).get(result.tool_name)
            result.tool_ref = tool.reference if tool is not None else None
        if result.tool_call_id in run.head.started_calls:
            update["started_calls"] = [
                c for c in run.head.started_calls if c != result.tool_call_id
            ]
        if result.tool_call_id in run.head.decisions:
            # A decision is only needed until its call's result is recorded: keep the head small.
            update["decisions"] = {
                k: v for k, v in run.head.decisions.items() if k != result.tool_call_id
            }
        keys = {result.tool_call_id, result.tool_call_id + EDITED}
        if keys & run.head.hook_decisions.keys():
            update["hook_decisions"] = {
                k: v for k, v in run.head.hook_decisions.items() if k not in keys
            }
        with self._tracer.tool(run, result) if self._tracer else NOT_TRACED:
            run.head = self._commit(run.head, [result], events, update=update)
        run.messages.append(result)

    def _pause_for_clarification(self, run: RunCursor, call: ToolCall) -> None:
        args = call.arguments or {}
        config = self.spec.agents[run.agent]
        timeout = config.input_timeout or self.spec.defaults.input_timeout
        clarification = Clarification(
            question=str(args.get("question", "")),
            reason=str(args["reason"]) if args.get("reason") is not None else None,
            tool_call_id=call.id,
            expires_at=wait_until(run.head, self.clock.now() + timeout),
        )
        head = replace(run.head, status="awaiting_input", clarification=clarification)
        run.head = self._commit(
            head,
            [],
            [("clarification_requested", dump(clarification))],
            release=True,
        )
