"""Answers without a model call, derived from what is persisted like every other step:

- a `return_direct` tool's output (or the output of an intent's tool) is the run's final
  answer, when it succeeded and fits the output schema (otherwise the model goes on);
- an intent of the acting agent that matches the caller's input, before any answer,
  answers as written, calls its tool, or hands the conversation to its agent.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from runtime.engine.commits import RunCursor
from runtime.engine.team import Events, TeamPhase
from runtime.events import preview
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.spec.plain import Intent
from runtime.store.base import RunHead

#: The `model` of an answer an intent gave (no model was asked).
INTENT_MODEL = "intent"
_WORDS = re.compile(r"[\W_]+")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def match_intent(intent: Intent, text: str) -> dict[str, str] | None:
    """The pattern's named groups (empty for a phrase) when `text` is the intent's request:
    one of its phrases, case and punctuation aside, or its pattern matching the whole input."""
    spoken = _WORDS.sub(" ", text.lower()).strip()
    if any(_WORDS.sub(" ", p.lower()).strip() == spoken for p in intent.phrases):
        return {}
    if intent.pattern is not None:
        found = re.fullmatch(intent.pattern, text.strip())
        if found is not None:
            return {k: v for k, v in found.groupdict().items() if v is not None}
    return None


def fill_arguments(template: Any, groups: dict[str, str]) -> Any:
    """An intent's tool arguments with `{group}` filled from its pattern's match."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda m: groups.get(m.group(1), m.group(0)), template)
    if isinstance(template, dict):
        return {k: fill_arguments(v, groups) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_arguments(v, groups) for v in template]
    return template


class Shortcuts(TeamPhase):
    # ---- answers without a model call ----------------------------------------------------

    async def _shortcut(self, run: RunCursor) -> bool:
        """Answer this step without asking the model: the output of a `return_direct` tool
        (or of an intent's tool) is the final answer; an intent that matches the caller's
        input answers, calls its tool or goes to its agent. True when it handled the step."""
        direct = self._direct_result(run)
        if direct is not None:
            await self._finish_with(run, direct[0], direct[1])
            return True
        intent = self._intent_for(run)
        if intent is None:
            return False
        await self._follow_intent(run, *intent)
        return True

    def _direct_result(self, run: RunCursor) -> tuple[Any, int] | None:
        """(the answer, its turn) when the latest answer's results end the run."""
        index = next(
            (
                i
                for i in range(len(run.messages) - 1, -1, -1)
                if isinstance(run.messages[i], AssistantMessage)
            ),
            None,
        )
        if index is None:
            return None
        answer = run.messages[index]
        assert isinstance(answer, AssistantMessage)
        results = [m for m in run.messages[index + 1 :] if isinstance(m, ToolResultMessage)]
        by_intent = answer.model == INTENT_MODEL
        for result in results:
            config = self.spec.tools.get(result.tool_ref or "")
            direct = by_intent or (config is not None and config.return_direct)
            if direct and result.success and result.reused_from is None:
                value = result.output if result.output is not None else result.content
                if self._fits_output_schema(run.head, value):
                    return value, answer.turn
        return None

    def _fits_output_schema(self, head: RunHead, value: Any) -> bool:
        schema = self.spec.agents[head.agent].output_schema
        if schema is None:
            return True
        from runtime.safety.schema_check import SchemaViolation, check

        try:
            check(schema, value)
        except SchemaViolation:
            return False  # the model makes the answer from it instead
        return True

    async def _finish_with(self, run: RunCursor, result: Any, turn: int) -> None:
        head = run.head
        update: dict[str, Any] = {"status": "succeeded"}
        self._store_result(head, result, update)
        events: Events = [
            ("step_completed", {"turn": turn}),
            (
                "run_completed",
                {
                    "turns_used": head.turn,
                    "tokens_input": head.usage.input_tokens,
                    "tokens_output": head.usage.output_tokens,
                    "cost_usd": round(head.cost_usd, 6),
                    "direct": True,
                },
            ),
        ]
        await self._review_response(run, update, events, [])  # pre_response hooks
        run.head = self._commit(head, [], events, update=update, release=True)

    def _intent_for(self, run: RunCursor) -> tuple[Intent, dict[str, str]] | None:
        """The active agent's first intent matching the caller's input, at the run's start
        (before any answer), with the pattern's named groups."""
        if any(isinstance(m, AssistantMessage) for m in run.messages):
            return None
        text = next((m.content for m in run.messages if isinstance(m, UserMessage)), "")
        for intent in self.spec.agents[run.agent].intents:
            groups = match_intent(intent, text)
            if groups is not None:
                return intent, groups
        return None

    async def _follow_intent(self, run: RunCursor, intent: Intent, groups: dict[str, str]) -> None:
        head = run.head
        then = (
            f"agent:{intent.agent}"
            if intent.agent is not None
            else f"tool:{intent.tool.name}"
            if intent.tool is not None
            else "answer"
        )
        what = intent.description or intent.pattern or intent.phrases[0]
        matched: Events = [("intent_matched", {"intent": preview(what), "then": then})]
        if intent.agent is not None:
            chain = [*(head.chain or [head.agent]), intent.agent]
            event: Events = [
                *matched,
                ("handoff", {"from": run.agent, "to": intent.agent, "reason": "intent"}),
            ]
            update = {
                "chain": chain,
                "agent_path": [*(head.agent_path or [head.agent]), intent.agent],
            }
            run.head = self._commit(head, [], event, update=update)
            return
        if intent.tool is not None:
            tools = self._toolbox(head)
            name = next(n for n, t in tools.items() if t.reference == intent.tool.name)
            arguments = fill_arguments(intent.tool.arguments, groups)
            call = ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=arguments)
            answer = AssistantMessage(tool_calls=[call], model=INTENT_MODEL, agent=run.agent)
            run.head = self._commit(head, [answer], [*matched, ("step_started", {"turn": 0})])
            run.messages.append(answer)
            return
        answer = AssistantMessage(text=intent.answer, model=INTENT_MODEL, agent=run.agent)
        run.head = self._commit(head, [answer], matched)
        run.messages.append(answer)
        await self._finish_with(run, intent.answer, 0)
