"""Compaction: the engine side of runtime.engine.context.

Before each model call the prompt is estimated; past the agent's threshold of the model's
window it is compacted in the reference order (seed 004): old tool results become
placeholders (lossless: each pruned output is in the tool-output cache under its id first),
then, if that is not enough, the conversation before the last `keep_turns` turns is
summarised by `compaction.model`. Each compaction is one commit (the new ContextState, the
summary message, a `context_compacted` event), so a crash before it redoes it and a crash
after it never asks for the summary again. After MAX_FAILURES compactions that did not get
under the threshold it stops trying; a provider that still refuses the prompt fails the run
with CONTEXT_OVERFLOW.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

from runtime.engine import context as ctx
from runtime.engine.commits import RunCursor
from runtime.engine.cost import call_cost, charged
from runtime.engine.toolrun import cache_key
from runtime.engine.toolsets import Toolsets
from runtime.errors import ModelError
from runtime.events import EventType
from runtime.messages import (
    AssistantMessage,
    Message,
    SummaryMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from runtime.models.base import Model, ModelRequest, ToolSpec
from runtime.models.failures import ContextOverflow
from runtime.models.windows import context_window
from runtime.spec.context import CompactionSettings
from runtime.tools.base import ToolContext

#: The share of the summarising model's window its transcript may take.
TRANSCRIPT_SHARE = 0.6
WIDE_TOOLS_SHARE = 0.5

T = TypeVar("T")


class Compaction(Toolsets):
    """The compaction side of Engine (split out to keep modules small)."""

    _model_cache: dict[str, Model]

    def _build_model(self, name: str) -> Model:
        raise NotImplementedError  # runtime.engine.loop

    async def _bounded(self, run: RunCursor, call: Awaitable[T]) -> T:
        raise NotImplementedError  # runtime.engine.tool_phase

    def _window(self, agent: str) -> int:
        return context_window(self.spec.models[self.spec.model_for(agent)])

    def _prompt(
        self, run: RunCursor, system: str, specs: list[ToolSpec]
    ) -> tuple[list[Message], int]:
        """The messages to send as the context stands, and their estimated tokens."""
        state = run.head.context
        readable = "session_cache_get" in self._toolbox(run.head)
        view = ctx.view(run.history, run.messages, run.base, state, readable)
        return view, ctx.estimate(system, specs, view, run.messages, run.base, state)

    async def _fit(
        self, run: RunCursor, system: str, specs: list[ToolSpec], *, forced: bool = False
    ) -> tuple[list[Message], int]:
        """The prompt, compacted first when it is past the threshold (or when `forced`: the
        provider said it is too long)."""
        view, estimated = self._prompt(run, system, specs)
        settings = self.spec.compaction_for(run.agent)
        window = self._window(run.agent)
        limit = int(window * settings.threshold)
        if not forced and (not settings.enabled or estimated <= limit):
            return view, estimated
        self._check_tool_room(run, specs, window)
        if run.head.context.failures >= ctx.MAX_FAILURES:
            return view, estimated  # it stopped trying: the model call decides
        await self._compact(run, system, specs, estimated, limit, settings, forced)
        return self._prompt(run, system, specs)

    def _check_tool_room(self, run: RunCursor, specs: list[ToolSpec], window: int) -> None:
        """Tool definitions that fill the window leave nothing to compact: say so."""
        needed = ctx.tools_tokens(specs)
        if needed >= window * WIDE_TOOLS_SHARE:
            raise ContextOverflow(
                f"the definitions of {len(specs)} tools take about {needed} tokens, "
                f"{needed * 100 // window}% of {self.spec.model_for(run.agent)}'s context "
                f"window ({window} tokens): offer fewer tools (mcp:SERVER/TOOL selects single "
                "tools of a server) or a model with a larger context_window",
                provider="agentfn",
            )

    async def _compact(
        self,
        run: RunCursor,
        system: str,
        specs: list[ToolSpec],
        before: int,
        limit: int,
        settings: CompactionSettings,
        forced: bool,
    ) -> None:
        head = run.head
        state = head.context.model_copy(deep=True)
        readable = "session_cache_get" in self._toolbox(head)
        keep = ctx.keep_from(run.messages, run.base, settings.keep_turns)
        pruned = [
            m
            for i, m in enumerate(run.messages)
            if state.pruned_before <= run.base + i < keep and ctx.prunable(m)
        ]
        if state.summary_seq is None and not state.history_pruned and run.history:
            pruned += [m for m in run.history if ctx.prunable(m)]
            state.history_pruned = True
        self._cache_pruned(run, pruned)  # placeholders only for outputs the cache holds
        state.pruned_before = max(state.pruned_before, keep)
        state.changed_at = head.msg_seq
        after = ctx.prompt_tokens(
            system, specs, ctx.view(run.history, run.messages, run.base, state, readable)
        )
        data: dict[str, Any] = {"before": before, "limit": limit, "pruned": len(pruned)}
        if forced:
            data["reason"] = "the provider said the prompt is too long"
        new: list[Message] = []
        usage = Usage()
        if after > limit or forced:
            cut, turns = keep, settings.keep_turns
            while cut <= run.base and turns > 1:
                turns -= 1
                cut = ctx.keep_from(run.messages, run.base, turns)
            if cut > run.base:
                older = ctx.view(
                    run.history, run.messages[: cut - run.base], run.base, state, readable
                )
                try:
                    summary = await self._summarise(run, older, settings, state.compactions)
                except ModelError as exc:  # the compaction failed; the run goes on
                    data["error"] = str(exc)
                else:
                    summary.covers_before = cut
                    usage = summary.usage
                    state.answers_before = _answers_before(
                        state.answers_before, run.messages[: cut - run.base], head.agent
                    )
                    state.base, state.summary_seq = cut, head.msg_seq
                    data.update(summarised=len(older), summary_model=summary.model)
                    new.append(summary)
                    kept = run.messages[cut - run.base :]
                    after = ctx.prompt_tokens(
                        system, specs, ctx.view([], [*kept, summary], cut, state, readable)
                    )
            else:
                data["error"] = "nothing older than the turns kept whole to summarise"
        ok = after <= limit and "error" not in data
        state.compactions += 1
        if not ok:
            state.failures += 1
        data.update(after=after, ok=ok, failures=state.failures)
        events: list[tuple[EventType, dict[str, Any]]] = [("context_compacted", data)]
        update: dict[str, Any] = {"context": state}
        if new:  # the summary's tokens and cost count like any model call's
            update["usage"] = head.usage + usage
            written = new[0]
            assert isinstance(written, SummaryMessage)
            cost = call_cost(self.spec.models[written.model].price, usage)
            update.update(charged(head, written.model, run.agent, cost))
        run.head = self._commit(head, new, events, update=update)
        if new:
            run.messages = [*run.messages[state.base - run.base :], *new]
            run.base = state.base

    def _cache_pruned(self, run: RunCursor, pruned: list[Message]) -> None:
        """Every pruned output readable by its id under this run's cache prefix (a copy of
        the full output when the result was answered from another call's cache)."""
        head = run.head
        blobs = self.store.blobs
        for message in pruned:
            assert isinstance(message, ToolResultMessage)
            key = cache_key(
                ToolContext(head.run_id, head.session_id, head.agent, message.tool_call_id)
            )
            if message.full_output_ref == key:
                continue
            body = message.content.encode()
            if message.full_output_ref is not None:
                with contextlib.suppress(KeyError):  # expired: keep what the model read
                    body = blobs.get(message.full_output_ref)
            blobs.put(key, body, "text/plain; charset=utf-8")

    async def _summarise(
        self, run: RunCursor, older: list[Message], settings: CompactionSettings, number: int
    ) -> SummaryMessage:
        from runtime.models.retry import request_with_fallbacks

        name = settings.model or self.spec.model_for(run.agent)
        config = self.spec.models[name]
        limit = int(context_window(config) * TRANSCRIPT_SHARE) * ctx.CHARS_PER_TOKEN
        text = ctx.transcript(older, limit)
        words = settings.summary_max_tokens * 3 // 4
        request = ModelRequest(
            system=ctx.SUMMARY_SYSTEM.format(words=words),
            messages=[UserMessage(content=text)],
            call_number=number,
            allow_tools=False,
            purpose="summary",
            estimated_tokens=ctx.tokens(text),
        )
        chain = []
        for model_name in [name, *config.fallbacks]:
            if model_name not in self._model_cache:
                self._model_cache[model_name] = self._build_model(model_name)
            chain.append((self._model_cache[model_name], self.spec.models[model_name].retry))
        model, response = await self._bounded(
            run, request_with_fallbacks(chain, request, self.clock)
        )
        summary = (response.text or "").strip()[: settings.summary_max_tokens * 4]
        if not summary:
            raise ModelError(f"{model.name} wrote an empty summary", provider="agentfn")
        return SummaryMessage(
            content=summary,
            covers_before=0,
            replaced=len(older),
            model=model.name,
            usage=response.usage,
        )


def _answers_before(
    counts: dict[str, int], summarised: list[Message], entry: str
) -> dict[str, int]:
    """Answers per agent before the new base (the scripted provider's index needs them)."""
    total = dict(counts)
    for message in summarised:
        if isinstance(message, AssistantMessage):
            agent = message.agent or entry
            total[agent] = total.get(agent, 0) + 1
    return total
