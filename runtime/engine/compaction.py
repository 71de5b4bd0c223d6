"""Compaction: the engine side of runtime.engine.context.

Every request fits the model's window by construction (issue 25): before each model call
the prompt is estimated, and a prompt past the agent's threshold of the window (or past
what the window leaves beside the answer's reserve, whatever happened before) is compacted.
Each way of compacting is measured before any model is asked, and the least lossy one that
fits is taken: old tool results become placeholders (lossless: each pruned output is in the
tool-output cache under its id first); the conversation before the last `keep_turns` turns
is summarised by `compaction.model`; fewer turns are kept when they alone do not fit; the
latest results become placeholders too; everything but the user's latest message is
summarised. New tool results are shown as previews when longer than their share of the
window (`_result_share`). Each compaction is one commit (the new ContextState, the summary
message, a `context_compacted` event), so a crash before it redoes it and a crash after it
never asks for the summary again. Only a system prompt, tools and user message that cannot
fit together (or a summary that cannot be written when one is needed) fail the run with
CONTEXT_OVERFLOW, at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

from runtime.engine import context as ctx
from runtime.engine.commits import RunCursor
from runtime.engine.cost import call_cost, charged
from runtime.engine.toolrun import cache_key, preview_text
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
from runtime.models.windows import context_window, prompt_budget
from runtime.spec.context import CompactionSettings
from runtime.structs import replace
from runtime.tools.base import ToolContext

#: The share of the summarising model's window its transcript may take.
TRANSCRIPT_SHARE = 0.6
#: Tokens the rendered system prompt may take beyond its template (variables, a team's
#: block, the final-turn note) when a result's share is worked out.
PROMPT_SLACK = 200
#: The shortest preview of a result, and what its notice takes.
MIN_PREVIEW_CHARS = 200
NOTICE_CHARS = 240
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
        return self._sizes(agent)[0]

    def _budget(self, agent: str) -> int:
        """The most tokens a prompt of this agent may take: the smallest window of its model
        and fallbacks (any of them may answer the same request) less the answer's reserve."""
        return self._sizes(agent)[1]

    def _sizes(self, agent: str) -> tuple[int, int]:
        """(window, budget) of the agent: fixed by the spec, so worked out once per engine
        (every turn asks for them several times)."""
        known: dict[str, tuple[int, int]] = self.__dict__.setdefault("_agent_sizes", {})
        found = known.get(agent)
        if found is None:
            name = self.spec.model_for(agent)
            names = [name, *self.spec.models[name].fallbacks]
            budget = min(prompt_budget(self.spec.models[n]) for n in names)
            found = known[agent] = (context_window(self.spec.models[name]), budget)
        return found

    def _prompt(
        self, run: RunCursor, system: str, specs: list[ToolSpec]
    ) -> tuple[list[Message], int]:
        """The messages to send as the context stands, and their estimated tokens (the
        larger of the usage-based estimate and the whole prompt counted)."""
        state = run.head.context
        readable = "session_cache_get" in self._toolbox(run.head)
        view = ctx.view(run.history, run.messages, run.base, state, readable)
        estimated = ctx.estimate(system, specs, view, run.messages, run.base, state)
        return view, max(estimated, ctx.prompt_tokens(system, specs, view))

    async def _fit(
        self, run: RunCursor, system: str, specs: list[ToolSpec], *, forced: bool = False
    ) -> tuple[list[Message], int]:
        """The prompt, inside the window by construction: compacted first when it is past
        the threshold (proactively, until compaction has failed MAX_FAILURES times), past
        what the window leaves beside the answer's reserve (always), or when `forced` (the
        provider said it is too long). Fails with CONTEXT_OVERFLOW, without a model call,
        only when the system prompt, tools and the user's message alone do not fit."""
        view, estimated = self._prompt(run, system, specs)
        settings = self.spec.compaction_for(run.agent)
        window = self._window(run.agent)
        hard = self._budget(run.agent)
        limit = min(int(window * settings.threshold), hard)
        if not forced and estimated <= hard:
            stopped = run.head.context.failures >= ctx.MAX_FAILURES
            if not settings.enabled or estimated <= limit or stopped:
                return view, estimated
        self._check_tool_room(run, specs, window)
        self._check_floor(run, system, specs, hard)
        if forced:  # our estimate was short of the provider's count: aim lower
            limit = min(limit, estimated * 3 // 4)
        error = await self._compact(run, system, specs, estimated, limit, hard, settings, forced)
        view, estimated = self._prompt(run, system, specs)
        if estimated > hard:
            why = f" (the summary failed: {error})" if error else ""
            raise ContextOverflow(
                f"the prompt still takes about {estimated} tokens after compaction, over the "
                f"{hard} that {self.spec.model_for(run.agent)}'s context window ({window}) "
                f"leaves beside the answer's reserve{why}",
                provider="agentfn",
            )
        return view, estimated

    def _check_floor(self, run: RunCursor, system: str, specs: list[ToolSpec], hard: int) -> None:
        """What no compaction can shorten (the system prompt, the tool definitions and the
        user's latest message) must fit, else the run fails at once: no model call could
        succeed, and none is paid for."""
        users = ctx.trailing_user(run.messages)
        message = sum(ctx.message_tokens(m) for m in run.messages[len(run.messages) - users :])
        fixed = ctx.tokens(system) + ctx.tools_tokens(specs)
        if fixed + message > hard:
            raise ContextOverflow(
                f"the system prompt and tool definitions (about {fixed} tokens) and the "
                f"user's message ({message}) take more than the {hard} tokens that "
                f"{self.spec.model_for(run.agent)}'s context window leaves beside the "
                "answer's reserve: shorten the message or use a model with a larger "
                "context_window",
                provider="agentfn",
            )

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

    def _plan(
        self,
        run: RunCursor,
        fixed: int,
        allowance: int,
        targets: tuple[int, int],
        settings: CompactionSettings,
        forced: bool,
    ) -> tuple[int, int, bool]:
        """The least lossy way to compact that fits the target (else the hard limit, else the
        smallest there is), measured before any summary is asked for."""
        state = run.head.context
        readable = "session_cache_get" in self._toolbox(run.head)
        summary = ctx.MESSAGE_TOKENS + ctx.tokens(ctx.SUMMARY_INTRO) + allowance + 2
        options = ctx.plans(run.messages, run.base, settings.keep_turns)
        if forced:  # the provider refused: summarise, whatever the estimate says
            options = options[1:]
        sizes: list[int] = []
        for cut, prune_to, summarise in options:
            prune_to = max(prune_to, state.pruned_before)
            if summarise and cut > run.base:
                size = summary + ctx.kept_tokens(run.messages, run.base, cut, prune_to, readable)
            else:
                pruned = replace(state, pruned_before=prune_to)
                if state.summary_seq is None and run.history:
                    pruned.history_pruned = True
                view = ctx.view(run.history, run.messages, run.base, pruned, readable)
                size = sum(ctx.message_tokens(m) for m in view)
            sizes.append(fixed + size)
        for target in targets:
            for option, size in zip(options, sizes, strict=True):
                if size <= target:
                    return option
        return options[-1]

    async def _compact(
        self,
        run: RunCursor,
        system: str,
        specs: list[ToolSpec],
        before: int,
        limit: int,
        hard: int,
        settings: CompactionSettings,
        forced: bool,
    ) -> str | None:
        """One compaction, one commit: the plan that fits (placeholders, a summary, fewer
        kept turns, the latest results as placeholders, everything summarised). Returns
        the summary's error, if it failed."""
        head = run.head
        state = replace(head.context, answers_before=dict(head.context.answers_before))  # deep
        readable = "session_cache_get" in self._toolbox(head)
        fixed = ctx.tokens(system) + ctx.tools_tokens(specs)
        allowance = ctx.summary_allowance(limit - fixed, settings.summary_max_tokens)
        cut, prune_to, summarise = self._plan(
            run, fixed, allowance, (limit, hard), settings, forced
        )
        prune_to = max(prune_to, state.pruned_before)
        pruned = [
            m
            for i, m in enumerate(run.messages)
            if state.pruned_before <= run.base + i < prune_to and ctx.prunable(m)
        ]
        if state.summary_seq is None and not state.history_pruned and run.history:
            pruned += [m for m in run.history if ctx.prunable(m)]
            state.history_pruned = True
        self._cache_pruned(run, pruned)  # placeholders only for outputs the cache holds
        state.pruned_before = prune_to
        state.changed_at = head.msg_seq
        after = ctx.prompt_tokens(
            system, specs, ctx.view(run.history, run.messages, run.base, state, readable)
        )
        data: dict[str, Any] = {"before": before, "limit": limit, "pruned": len(pruned)}
        if forced:
            data["reason"] = "the provider said the prompt is too long"
        kept = ctx.keep_from(run.messages, run.base, settings.keep_turns)
        if summarise and cut > kept:
            data["kept_turns"] = "fewer"  # the kept turns alone did not fit
        new: list[Message] = []
        usage = Usage()
        if summarise and cut > run.base:
            older = ctx.view(run.history, run.messages[: cut - run.base], run.base, state, readable)
            try:
                summary = await self._summarise(run, older, settings, state.compactions, allowance)
            except ModelError as exc:  # the compaction failed; the run goes on if it fits
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
                rest = run.messages[cut - run.base :]
                after = ctx.prompt_tokens(
                    system, specs, ctx.view([], [*rest, summary], cut, state, readable)
                )
        elif summarise:
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
        return data.get("error")

    def _result_share(self, run: RunCursor) -> int:
        """The characters one new tool result may show the model: its even part, among the
        latest answer's calls, of half the room the window leaves beside the system prompt,
        tools and the answer's reserve. A longer output is shown as a preview (its whole in
        the cache, paged with session_cache_get)."""
        head = run.head
        last = next((m for m in reversed(run.messages) if isinstance(m, AssistantMessage)), None)
        calls = max(1, len(last.tool_calls)) if last is not None else 1
        specs = self._tool_specs(head)
        rooms: dict[str, tuple[list[ToolSpec], int]] = self.__dict__.setdefault("_rooms", {})
        known = rooms.get(run.agent)
        if known is not None and known[0] is specs:  # the same tools (MCP ones can change)
            room = known[1]
        else:
            config = self.spec.agents[run.agent]
            # A computed prompt's size is known per turn only: the whole request is measured
            # before each call anyway (the guarantee), this share is the first cut.
            written = config.system_prompt if isinstance(config.system_prompt, str) else ""
            fixed = ctx.tokens(written) + ctx.tools_tokens(specs)
            room = self._budget(run.agent) - fixed - PROMPT_SLACK
            rooms[run.agent] = (specs, room)
        each = int(room * ctx.RESULTS_SHARE) // calls
        return max(MIN_PREVIEW_CHARS, each * ctx.CHARS_PER_TOKEN - NOTICE_CHARS)

    def _fit_result(self, run: RunCursor, result: ToolResultMessage) -> ToolResultMessage:
        """A result whose text is over its share and not yet in the cache (an error, a
        denial, a child's answer) goes there whole, and the model reads a preview."""
        share = self._result_share(run)
        if len(result.content) <= share or result.full_output_ref is not None:
            return result
        head = run.head
        key = cache_key(ToolContext(head.run_id, head.session_id, head.agent, result.tool_call_id))
        self.store.blobs.put(key, result.content.encode(), "text/plain; charset=utf-8")
        return replace(
            result,
            content=preview_text(result.content, share, result.tool_call_id),
            full_output_ref=key,
            full_size=len(result.content),
        )

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
        self,
        run: RunCursor,
        older: list[Message],
        settings: CompactionSettings,
        number: int,
        allowance: int,
    ) -> SummaryMessage:
        from runtime.models.retry import request_with_fallbacks

        name = settings.model or self.spec.model_for(run.agent)
        config = self.spec.models[name]
        limit = int(context_window(config) * TRANSCRIPT_SHARE) * ctx.CHARS_PER_TOKEN
        text = ctx.transcript(older, limit)
        words = allowance * 3 // 4
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
        summary = (response.text or "").strip()[: allowance * ctx.CHARS_PER_TOKEN]
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
