"""The tool phase of a step: run the latest answer's pending tool calls, commit each result.

Calls run in the model's order; consecutive read-only calls run concurrently. An
`agent_clarify` call pauses the run instead of running. An `at_most_once` call commits its
start first, so a crash between start and result is reported as "outcome unknown" rather
than run twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from runtime.engine.commits import Persistence, RunCursor
from runtime.engine.toolrun import error_result, execute
from runtime.events import EventType, preview
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage
from runtime.spec import AgentfnSpec
from runtime.store.base import Clarification
from runtime.tools.base import Tool, ToolContext
from runtime.tools.builtins import CLARIFY

OUTCOME_UNKNOWN = (
    "outcome unknown: this call started but the run was interrupted before its result was "
    "recorded; it was not run again. Check its effect before retrying."
)


class ToolPhase(Persistence):
    """The tool side of Engine (split out to keep modules small)."""

    spec: AgentfnSpec

    def _tools(self, agent: str) -> dict[str, Tool]:
        raise NotImplementedError

    async def _run_tools(self, run: RunCursor, pending: list[ToolCall]) -> None:
        tools = self._tools(run.head.agent)
        index = 0
        while index < len(pending):
            call = pending[index]
            if call.name == CLARIFY and call.arguments is not None:
                self._pause_for_clarification(run, call)
                return
            tool = tools.get(call.name)
            if tool is not None and tool.effect == "read_only" and call.arguments is not None:
                batch = [call]
                while index + len(batch) < len(pending):
                    nxt = pending[index + len(batch)]
                    candidate = tools.get(nxt.name)
                    if nxt.name == CLARIFY or candidate is None or candidate.effect != "read_only":
                        break
                    batch.append(nxt)
                results = await asyncio.gather(*(self._execute(run, c) for c in batch))
                for done in results:
                    self._record_result(run, done, last=index + 1 == len(pending))
                    index += 1
                continue
            if tool is not None and tool.effect == "at_most_once" and call.arguments is not None:
                if call.id in run.head.started_calls:
                    result = error_result(call, self._turn(run), OUTCOME_UNKNOWN)
                    result = result.model_copy(update={"outcome_unknown": True})
                    self._record_result(run, result, last=index + 1 == len(pending))
                    index += 1
                    continue
                started = [*run.head.started_calls, call.id]
                run.head = self._commit(
                    run.head.model_copy(update={"started_calls": started}),
                    [],
                    [("tool_call", self._call_event(run, call))],
                )
            result = await self._execute(run, call)
            self._record_result(
                run,
                result,
                last=index + 1 == len(pending),
                announced=tool is not None and tool.effect == "at_most_once",
            )
            index += 1

    def _turn(self, run: RunCursor) -> int:
        return next(
            (m.turn for m in reversed(run.messages) if isinstance(m, AssistantMessage)),
            run.head.turn,
        )

    def _call_event(self, run: RunCursor, call: ToolCall) -> dict[str, Any]:
        return {
            "turn": self._turn(run),
            "tool_call_id": call.id,
            "tool_name": call.name,
            "inputs": preview(call.arguments_json()),
        }

    async def _execute(self, run: RunCursor, call: ToolCall) -> ToolResultMessage:
        config = self.spec.agents[run.head.agent]
        ctx = ToolContext(run.head.run_id, run.head.session_id, run.head.agent, call.id)
        return await execute(
            self._tools(run.head.agent),
            call,
            ctx,
            turn=self._turn(run),
            timeout=config.tool_timeout or self.spec.defaults.tool_timeout,
            max_chars=config.tool_result_max_chars or self.spec.defaults.tool_result_max_chars,
            blobs=self.store.blobs,
        )

    def _record_result(
        self,
        run: RunCursor,
        result: ToolResultMessage,
        *,
        last: bool,
        announced: bool = False,
    ) -> None:
        call = ToolCall(id=result.tool_call_id, name=result.tool_name, arguments=result.inputs)
        events: list[tuple[EventType, dict[str, Any]]] = []
        if not announced:
            events.append(("tool_call", self._call_event(run, call)))
        events.append(
            (
                "tool_result",
                {
                    "turn": result.turn,
                    "tool_call_id": result.tool_call_id,
                    "tool_name": result.tool_name,
                    "success": result.success,
                    "duration_ms": result.duration_ms,
                    "output": preview(result.content),
                },
            )
        )
        if last:
            events.append(("step_completed", {"turn": result.turn}))
        started = [c for c in run.head.started_calls if c != result.tool_call_id]
        run.head = self._commit(
            run.head.model_copy(update={"started_calls": started}), [result], events
        )
        run.messages.append(result)

    def _pause_for_clarification(self, run: RunCursor, call: ToolCall) -> None:
        args = call.arguments or {}
        clarification = Clarification(
            question=str(args.get("question", "")),
            reason=str(args["reason"]) if args.get("reason") is not None else None,
            tool_call_id=call.id,
        )
        head = run.head.model_copy(
            update={"status": "awaiting_input", "clarification": clarification}
        )
        run.head = self._commit(
            head,
            [],
            [("clarification_requested", clarification.model_dump(mode="json"))],
            release=True,
        )
