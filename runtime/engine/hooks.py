"""Hooks in a run: when each event fires, and how its decisions stay durable.

- `on_run_start`: before the first step; its outcome is committed (`@run_start` on the
  head) before the run goes on, and a denial fails the run with HOOK_DENIED.
- `pre_tool_use`: before a call runs and before a person is asked to approve it (so an
  approver sees the arguments as the hooks left them, and a denied call never waits). Each
  asked hook's answer is committed on the head, keyed by the call id, before the next step,
  like an approval decision; rule hooks are pure and simply evaluated again when needed.
- `post_tool_use`: on the result before it is committed: what the history keeps is the
  replaced result, and the tool-output cache holds it instead of the original.
- `pre_response`: on the final answer before the `succeeded` commit (in that same commit).
- `on_run_complete`: after that commit, awaited within its timeout; never fails the run.

A hook that fails (no answer in time, a network error, an answer outside the protocol) is
never silent: its `hook_decision` event carries the error, the run gets a warning, and
the log a line. It then allows (fail open) or, with `on_error: deny`, denies.

An agent without hooks pays one dictionary lookup per check, and nothing is imported for a
kind of hook that is not used (httpx only when an http hook is asked).
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from runtime.engine.commits import RunCursor
from runtime.engine.hook_chain import Bound, Events, HookChain, Outcome, log, schema_problem
from runtime.engine.hook_kinds import HookFailure, ask
from runtime.engine.hook_rules import as_text
from runtime.engine.result import final_result
from runtime.engine.toolrun import error_result, shape_output
from runtime.errors import HookDenied
from runtime.events import preview
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from runtime.structs import dump, replace
from runtime.tools.base import RichOutput, Tool, ToolContext

RUN_START = "@run_start"  # the head's hook_decisions key of the run's start
EDITED = "@edited"  # appended to a call id: the key of the chain on an approver's edit
BLOCKED = "The response was blocked by policy: {reason}"
#: Replaced arguments live on the run head until the call's result is recorded.
MAX_ARGUMENT_BYTES = 16 * 1024
#: Calls whose rule-hook events wait for their result's commit, at most, per engine.
MAX_BACKLOG = 1024


class HookPhase(HookChain):
    """The hook side of Engine: where each event's hooks fire and what they change."""

    # ---- provided by ToolPhase -----------------------------------------------------------

    async def _execute(self, run: RunCursor, call: ToolCall) -> ToolResultMessage:
        raise NotImplementedError  # runtime.engine.tool_phase

    def _gated(self, run: RunCursor, call: ToolCall) -> bool:
        raise NotImplementedError  # runtime.engine.tool_phase

    def _turn(self, run: RunCursor) -> int:
        raise NotImplementedError  # runtime.engine.tool_phase

    def _tool_hooks(
        self, run: RunCursor, event: str, call: ToolCall
    ) -> tuple[Tool, list[Bound]] | None:
        """The tool a call runs and the hooks of `event` that match it; None when none do
        (or the call runs no tool: an unknown name, arguments that did not parse)."""
        plan = self._hook_plan(run.agent)
        if not plan.tools or call.arguments is None:
            return None
        tool = self._toolbox(run.head).get(call.name)
        if tool is None:
            return None
        hooks = plan.for_tool(event, tool.reference)
        return (tool, hooks) if hooks else None

    # ---- pre_tool_use / post_tool_use ----------------------------------------------------

    async def _pre_tool_use(
        self, run: RunCursor, call: ToolCall, *, settle: bool = False, edited: bool = False
    ) -> tuple[ToolCall, ToolResultMessage | None]:
        """The call as the pre_tool_use hooks leave it, or the denial to record instead.
        `settle`: commit the whole outcome now (the call is about to wait for a person).
        `edited`: the arguments are an approver's edit, checked by the same hooks as the
        model's were (a person approving a call does not lift the policy on it); their
        progress is kept under a key of its own, so the first chain's is not reused."""
        found = self._tool_hooks(run, "pre_tool_use", call)
        if found is None:
            return call, None
        tool, hooks = found
        about: dict[str, Any] = {"tool_call_id": call.id, "tool_name": call.name}
        if edited:
            about["after_edit"] = True

        def payload(arguments: Any) -> dict[str, Any]:
            return {"tool": _tool_view(call, tool, arguments)}

        outcome = await self._chain(
            run,
            "pre_tool_use",
            hooks,
            call.arguments,
            payload,
            key=call.id + EDITED if edited else call.id,
            check=lambda arguments: _argument_problem(tool, arguments),
            about=about,
            durable=True,
            settle=settle,
        )
        self._note(run, call.id, outcome, replace=not edited)
        if outcome.denied is not None:
            message = f"a policy hook denied this call: {outcome.denied}; it was not run"
            return call, error_result(call, self._turn(run), message)
        if outcome.modified:
            call = replace(call, arguments=outcome.value)
        return call, None

    async def _settled(self, run: RunCursor, calls: list[ToolCall]) -> list[ToolCall]:
        """The calls about to wait for approval as the hooks left them (denied ones drop
        out: they never wait), every hook outcome committed before the person is asked."""
        kept: list[ToolCall] = []
        for call in calls:
            if call.id not in run.head.decisions and self._gated(run, call):
                call, denied = await self._pre_tool_use(run, call, settle=True)
                if denied is not None:
                    continue
            kept.append(call)
        return kept

    async def _checked_execute(self, run: RunCursor, call: ToolCall) -> ToolResultMessage:
        """Run a call that no person gates: its pre_tool_use hooks, then the tool."""
        call, denied = await self._pre_tool_use(run, call)
        return denied if denied is not None else await self._execute(run, call)

    async def _post_tool_use(
        self, run: RunCursor, call: ToolCall, result: ToolResultMessage
    ) -> ToolResultMessage:
        """The result as the post_tool_use hooks leave it (before it is committed)."""
        found = self._tool_hooks(run, "post_tool_use", call)
        if found is None:
            return result
        tool, hooks = found
        whole = result.content  # the whole output, not the preview the model reads
        if result.full_output_ref and result.full_size and result.full_size > len(whole):
            with contextlib.suppress(KeyError):  # expired: the preview is all there is
                whole = self.store.blobs.get(result.full_output_ref).decode("utf-8", "replace")

        def payload(value: Any) -> dict[str, Any]:
            output = value if value is not whole else result.output
            shown = {"content": as_text(value), "success": result.success, "output": output}
            return {"tool": _tool_view(call, tool, call.arguments), "result": shown}

        outcome = await self._chain(
            run,
            "post_tool_use",
            hooks,
            whole,
            payload,
            key=call.id,
            about={"tool_call_id": call.id, "tool_name": call.name},
        )
        self._note(run, call.id, outcome, replace=False)
        if not outcome.modified:
            return result
        return self._replace_result(run, tool, call, result, outcome.value)

    def _replace_result(
        self, run: RunCursor, tool: Tool, call: ToolCall, result: ToolResultMessage, value: Any
    ) -> ToolResultMessage:
        """A result with its output replaced, shaped like any output; the tool-output cache
        keeps the replacement too, so no cache tool can read the original back."""
        config = self.spec.agents[run.agent]
        cap = config.tool_result_max_chars or self.spec.defaults.tool_result_max_chars
        head = run.head
        ctx = ToolContext(head.run_id, head.session_id, head.agent, call.id)
        own = result.full_output_ref if result.reused_from is None else None  # not another's
        if own:
            whole = json.dumps(value, ensure_ascii=False, default=str)
            self.store.blobs.put(f"{own}.json", whole.encode())
        rich = RichOutput(text=as_text(value), full=value, is_error=not result.success)
        replaced = shape_output(
            tool,
            call,
            ctx,
            rich,
            turn=result.turn,
            cap=tool.max_chars or cap,
            blobs=self.store.blobs,
            duration_ms=result.duration_ms,
        )
        replaced.at = result.at
        if own and replaced.full_output_ref is None:
            self.store.blobs.put(own, replaced.content.encode())
        return replaced

    def _note(self, run: RunCursor, call_id: str, outcome: Outcome, *, replace: bool) -> None:
        """Keep a call's uncommitted hook events for the commit that records it. Rule
        decisions (pre) are evaluated again after a crash, so they replace what an earlier
        attempt left; post_tool_use adds to them."""
        backlog: dict[tuple[str, str], tuple[Events, list[str]]] = self.__dict__.setdefault(
            "_hook_backlog", {}
        )
        key = (run.head.run_id, call_id)
        earlier = ([], []) if replace else backlog.get(key, ([], []))
        events, warnings = [*earlier[0], *outcome.events], [*earlier[1], *outcome.warnings]
        if events or warnings:
            backlog[key] = (events, warnings)
            if len(backlog) > MAX_BACKLOG:  # calls never recorded here (a run moved on)
                backlog.pop(next(iter(backlog)))
        else:
            backlog.pop(key, None)

    def _hook_notes(self, run: RunCursor, call_id: str) -> tuple[Events, dict[str, Any]]:
        """(events, head update) the hooks of a call left for the commit that records it."""
        backlog = self.__dict__.get("_hook_backlog")
        noted = backlog.pop((run.head.run_id, call_id), None) if backlog else None
        if noted is None:
            return [], {}
        events, warnings = noted
        return events, ({"warnings": self._warned(run, warnings)} if warnings else {})

    # ---- on_run_start / pre_response / on_run_complete -----------------------------------

    def _run_start_due(self, run: RunCursor) -> bool:
        hooks = self._hook_plan(run.agent).on("on_run_start")
        if not hooks:
            return False
        saved = run.head.hook_decisions.get(RUN_START)
        return saved is None or saved.denied is not None or saved.done < len(hooks)

    async def _run_start_hooks(self, run: RunCursor) -> None:
        """Ask the on_run_start hooks about the caller's input; a denial fails the run."""
        text = next((m.content for m in run.messages if isinstance(m, UserMessage)), "")
        outcome = await self._chain(
            run,
            "on_run_start",
            self._hook_plan(run.agent).on("on_run_start"),
            text,
            lambda value: {"input": value},
            key=RUN_START,
            durable=True,
            settle=True,
        )
        if outcome.denied is not None:
            raise HookDenied(f"an on_run_start hook denied the run: {outcome.denied}")

    async def _review_response(
        self, run: RunCursor, update: dict[str, Any], events: Events, new: list[Message]
    ) -> None:
        """pre_response hooks on the final answer of a commit about to mark the run
        succeeded (`update`): they may replace it or block it; what they decide is part of
        that same commit, and the answer in the history is the one the caller gets."""
        hooks = self._hook_plan(run.agent).on("pre_response")
        if not hooks:
            return
        if "result" in update:
            answer = update["result"]
        else:
            answer = json.loads(self.store.blobs.get(update["result_ref"]))
        schema = self.spec.agents[run.head.agent].output_schema
        outcome = await self._chain(
            run,
            "pre_response",
            hooks,
            answer,
            lambda value: {"response": value},
            key="@response",
            check=lambda value: schema_problem(schema, value),
        )
        if outcome.denied is not None:
            replacement: Any = BLOCKED.format(reason=outcome.denied)
            outcome.warnings.append(f"pre_response: the response was blocked: {outcome.denied}")
        elif outcome.modified:
            replacement = outcome.value
        else:
            replacement = answer
        if outcome.denied is not None or outcome.modified:
            update.pop("result", None)
            update.pop("result_ref", None)
            self._store_result(run.head, replacement, update)
            _rewrite_answer(new, events, as_text(replacement))
        # Decided before the step completes: the hook events go before step_completed.
        at = next((i for i, (kind, _) in enumerate(events) if kind == "step_completed"), None)
        at = len(events) if at is None else at
        events[at:at] = outcome.events
        if outcome.warnings:
            update["warnings"] = self._warned(run, outcome.warnings)

    async def _run_complete_hooks(self, run: RunCursor) -> None:
        """on_run_complete: after the run's final commit, each hook once, within its timeout.
        Nothing it does can fail the run; a failure is an event, a warning and a log line."""
        hooks = self._hook_plan(run.agent).on("on_run_complete")
        if not hooks or run.head.status != "succeeded":
            return
        try:
            head = run.head
            result = final_result(head, self.store.blobs)
            finished = {"response": result, "usage": dump(head.usage)}
            events: Events = []
            warnings: list[str] = []
            for hook in hooks:
                payload = self._payload(run, "on_run_complete", hook, finished)
                began = time.perf_counter()
                data: dict[str, Any] = {"hook": hook.id, "type": hook.config.type}
                data.update(event="on_run_complete", decision="allow", reason=None)
                try:
                    await ask(
                        hook.config,
                        payload,
                        self._asking(run, f"on_run_complete:@run_complete:{hook.id}"),
                    )
                except HookFailure as exc:
                    data["error"] = self._failed(hook, "on_run_complete", str(exc), warnings)
                data["duration_ms"] = int((time.perf_counter() - began) * 1000)
                events.append(("hook_decision", data))
            update = {"warnings": self._warned(run, warnings)} if warnings else None
            run.head = self._commit(run.head, [], events, update=update, keep_lease=True)
        except Exception as exc:  # fire and forget: the run has already succeeded
            log.warning("on_run_complete hooks of run %s: %s", run.head.run_id, exc)


def _tool_view(call: ToolCall, tool: Tool, arguments: Any) -> dict[str, Any]:
    return {
        "name": call.name,
        "reference": tool.reference,
        "call_id": call.id,
        "arguments": arguments,
    }


def _argument_problem(tool: Tool, arguments: Any) -> str | None:
    """Why a hook's replacement arguments cannot be used (they are checked like an
    approver's edit, and kept on the head until the call's result is recorded)."""
    size = len(json.dumps(arguments, default=str).encode())
    if size > MAX_ARGUMENT_BYTES:
        return f"the replaced arguments are too large: {size} bytes, at most {MAX_ARGUMENT_BYTES}"
    return schema_problem(tool.input_schema, arguments)


def _rewrite_answer(new: list[Message], events: Events, text: str) -> None:
    """The final answer in the history (and its model_response event) as the caller gets
    it, so a later run of the session never reads what a hook replaced or blocked."""
    for index in range(len(new) - 1, -1, -1):
        message = new[index]
        if isinstance(message, AssistantMessage):
            new[index] = replace(message, text=text)
            break
    for kind, data in events:
        if kind == "model_response":
            data["text"] = preview(text)
