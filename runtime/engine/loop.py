"""The resumable agent loop.

A run advances by *commits*: each persisted operation is one atomic store commit (the new
head, conditional on the version read, plus the step's new message and event items). The
next thing to do is always derived from what is persisted, so any process can pick a run
up after any commit:

- the latest answer has tool calls without results → run those tools (model order;
  consecutive read-only calls concurrently), committing each result;
- otherwise → call the model (a persisted answer is never requested again).

An `at_most_once` call commits its start before running; if a crash leaves a start without
a result, the call is reported to the model as "outcome unknown", never re-run blind.
A lease on the head keeps two workers from advancing one run at once.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any

from runtime.clock import Clock, SystemClock
from runtime.engine import output as out
from runtime.engine.commits import BudgetSpent, RunCursor
from runtime.engine.compat import agent_hash
from runtime.engine.computed_prompt import agent_prompt
from runtime.engine.cost import call_cost, charged, check_budget, next_call
from runtime.engine.interventions import Interventions
from runtime.engine.prompt import FINAL_TURN_NOTE
from runtime.engine.result import build_result
from runtime.engine.state import answer_text, doom_loop, own_call_ids, pending_calls
from runtime.engine.team import MovedOn
from runtime.errors import MaxTurnsExceeded, OutputInvalid, RunError, SpecChanged, StateConflict
from runtime.events import EventListener, EventType, preview
from runtime.messages import AssistantMessage, Message, SummaryMessage, UserMessage
from runtime.models.base import Model, ModelRequest, ToolSpec
from runtime.models.failures import ContextOverflow
from runtime.naming import new_run_id
from runtime.observability.tracing import tracer_for
from runtime.spec import AgentfnSpec
from runtime.store.base import TERMINAL, RunHead, RunStore, new_head
from runtime.structs import dump
from runtime.tools.base import Tool

MAX_CONTINUATIONS = 3
MAX_CORRECTIONS = 2


class Engine(Interventions):
    """Advances runs of one spec against one store. Cheap to create; reuse it when warm."""

    def __init__(
        self,
        spec: AgentfnSpec,
        store: RunStore,
        *,
        clock: Clock | None = None,
        models: Any = None,  # (agent run, model name) -> Model; default: runtime.models.factory
        listener: EventListener | None = None,
        lease_seconds: float = 120.0,
        secrets: Any = None,  # (text) -> text with ${secret:…} resolved
        lambda_client: Any = None,  # () -> boto3 Lambda client, for Lambda tools
        scope: str | None = None,  # a deployed agent function: the agent it may run
        child_starter: Any = None,  # (child head) -> None: starts a child's execution
        chunks: Any = None,  # runtime.live.live.ChunkListener: the answer's text as it streams
    ):
        self.spec = spec
        self.store = store
        self.clock = clock or SystemClock()
        self._tracer = tracer_for(spec, self.clock, secrets)  # None: telemetry is off
        self.listener = listener if self._tracer is None else self._tracer.listening(listener)
        self.lease_seconds = lease_seconds
        self.owner = uuid.uuid4().hex
        self._models = models
        self._model_cache: dict[str, Model] = {}
        self._toolsets: dict[tuple[str, bool], dict[str, Tool]] = {}
        self._specs: dict[tuple[str, bool], list[ToolSpec]] = {}
        self._mcp: dict[str, dict[str, Tool]] = {}
        self._secrets = secrets
        self._lambda_client = lambda_client
        self._lambda: Any = None
        self._rules: dict[tuple[str, str], bool] = {}
        self.scope = scope
        self.child_starter = child_starter
        self.chunks = chunks

    # ---- public operations -------------------------------------------------------------

    def start(
        self,
        agent: str,
        text: str,
        session_id: str | None = None,
        *,
        step_of: Any = None,
        max_turns: int | None = None,
        answer_pending: bool = True,
        run_id: str | None = None,
        trigger: dict[str, str] | None = None,
    ) -> RunHead:
        """A new run; `step_of` (workflows.service.StepLink): a workflow's step run (its id, its
        end's token); `run_id`, `trigger`: a triggered run's (runtime.triggers)."""
        now = self.clock.now()
        config = self.spec.agents[agent]
        answered = self.answered_instead(
            agent, text, session_id, step_of, max_turns, answer_pending
        )
        if answered is not None:
            return answered
        run_id = step_of.run_id if step_of is not None else run_id or new_run_id(agent)
        # Validated (as pydantic did): the caller's values come from outside (a request, a
        # trigger, a workflow step); coerced as pydantic's lax mode did.
        head = new_head(
            run_id=run_id,
            agent=agent,
            session_id=session_id or uuid.uuid4().hex,
            run_key=f"{int(now * 1000):013d}-{run_id}",
            spec_hash=self.spec.spec_hash(),
            agent_hash=agent_hash(self.spec, agent),
            created_at=now,
            updated_at=now,
            # Every item of the run expires together (TTL and the bucket's lifecycle);
            # waits are cut to end before then (commits.wait_until).
            expires_at=int(now + (config.session.ttl or self.spec.deployment.retention)),
            input_preview=preview(text, 200),
            trace=self._tracer.new_ref(now) if self._tracer else None,
            workflow_run_id=step_of.workflow_run_id if step_of is not None else None,
            workflow_token=step_of.token if step_of is not None else None,
            max_turns=max_turns,
            trigger=trigger,
        )
        chain = self._route_input(agent, text)
        if session_id is not None:
            session = self.store.session_state(agent, session_id)
            head.session_spent = session.spent  # what the session's budget has used
            if chain is None:
                chain = session.chain  # who has the session now
        if chain and chain != [agent]:
            head.chain, head.agent_path = chain, list(chain)
        data: dict[str, Any] = {
            "agent": agent,
            "session_id": head.session_id,
            "input": preview(text),
        }
        if head.chain:
            data["active_agent"] = head.active_agent
        data.update({"trigger": trigger} if trigger else {})
        return self._commit(head, [UserMessage(content=text)], [("run_started", data)], create=True)

    async def run(self, agent: str, text: str, session_id: str | None = None) -> RunHead:
        head = self.start(agent, text, session_id)
        return await self.advance(head.run_id)

    async def advance(
        self, run_id: str, budget_seconds: float | None = None, head: RunHead | None = None
    ) -> RunHead:
        """Advance until the run finishes, pauses, or the time budget is spent.

        The budget bounds everything the advance waits for: a model call still in flight
        when it runs out is dropped (it is asked again later, nothing was committed), and a
        tool call starts only if its timeout fits in what is left (a started tool is never
        abandoned half way). The run is then released for the next invocation. `head`: the
        run's head as just read by the caller (one read fewer; taking the lease checks it
        is still the current one)."""
        head = head or self.store.load_head(run_id)
        if head.status not in ("running", "awaiting_children"):
            return head
        if self.scope is not None and head.active_agent != self.scope:
            return head  # the conversation is another agent's: its function advances it
        if head.agent_hash != agent_hash(self.spec, head.agent):
            return self._fail(head, SpecChanged("the agent's spec changed since this run started"))
        head = self._acquire(head)
        base = head.context.base  # a compacted run loads from its summary, not its start
        run = RunCursor(head, self.store.load_messages(head, base), base=base)
        if budget_seconds is not None:
            run.deadline = self.clock.monotonic() + budget_seconds
        if self.spec.agents[head.agent].session.enabled:
            limit = self.spec.agents[head.agent].session.history_limit
            run.history = self.store.session_history(head, limit)
        try:
            async with AsyncExitStack() as connections:  # MCP sessions close on every exit
                if self._tracer is not None:  # the advance's span (and the run's, at its end)
                    connections.enter_context(self._tracer.advance(run))
                if run.head.status == "awaiting_children":
                    await self._collect_children(run)
                while run.head.status == "running":
                    if run.deadline is not None and self.clock.monotonic() > run.deadline:
                        raise BudgetSpent
                    if self.scope is not None and run.agent != self.scope:
                        raise MovedOn  # handed off: the next agent's function goes on
                    await self._discover_mcp(run, connections)  # the acting agent's servers
                    await self._step(run)
                await self._run_complete_hooks(run)  # after the final commit; never fails it
        except BudgetSpent:  # another invocation (the state machine's) carries on
            run.head = self._commit(run.head, [], [], release=True)
        except RunError as exc:
            run.head = self._fail(run.head, exc)
        except StateConflict:
            return self.store.load_head(run_id)  # someone else changed the run: back off
        return run.head

    def result(self, run_id: str) -> dict[str, Any]:
        head, messages = self.store.load_run(run_id)
        result = build_result(head, messages, self.store.blobs)
        if head.children:  # what the children wait for shows on the parent
            result["children"] = [self._child_view(c) for c in head.children]
        return result

    def force_fail(self, run_id: str, code: str, message: str) -> RunHead:
        """Mark a run failed whatever holds its lease (the supervisor's verdict after a crash)."""
        head = self.store.load_head(run_id)
        if head.status in TERMINAL:
            return head
        error = RunError(message)
        error.error_code = code
        return self._fail(head, error)

    # ---- the step ----------------------------------------------------------------------

    async def _step(self, run: RunCursor) -> None:
        pending = pending_calls(run.messages)
        if pending:
            await self._run_tools(run, pending)
        elif self._run_start_due(run):  # on_run_start hooks, before anything else
            await self._run_start_hooks(run)
        elif not await self._shortcut(run):  # a tool's direct answer, or an intent
            await self._call_model(run)

    def _models_for(self, run: RunCursor) -> list[tuple[Model, Any]]:
        chain: list[tuple[Model, Any]] = []
        names = [self.spec.model_for(run.agent)]
        names += [n for n in self.spec.models[names[0]].fallbacks if n not in names]
        for name in names:
            if name not in self._model_cache:
                self._model_cache[name] = self._build_model(name)
            chain.append((self._model_cache[name], self.spec.models[name].retry))
        return chain

    def _build_model(self, name: str) -> Model:
        if self._models is not None:
            model: Model = self._models(name)
            return model
        from runtime.models.factory import build_model
        from runtime.secrets import SecretResolver

        return build_model(name, self.spec.models[name], SecretResolver(self.spec))

    async def _call_model(self, run: RunCursor) -> None:
        head = run.head
        agent = run.agent
        max_turns = self._max_turns(head)
        last = next((m for m in reversed(run.messages) if not isinstance(m, SummaryMessage)), None)
        follow_up = isinstance(last, UserMessage) and last.purpose is not None
        if not follow_up and head.turn >= max_turns:
            raise MaxTurnsExceeded(f"reached max_turns ({max_turns}) without a final answer")
        turn = head.turn if follow_up else head.turn + 1
        final_turn = turn >= max_turns
        specs = self._tool_specs(head)
        system = await agent_prompt(run, self.spec, self.store.blobs, turn, self.clock.now())
        system += FINAL_TURN_NOTE if final_turn else ""
        messages, estimated = await self._fit(run, system, specs)
        model_name = self.spec.model_for(agent)
        check_budget(self.spec, run.head, next_call(self.spec, model_name, estimated))
        earlier = run.head.context.answers_before.get(agent, 0)  # answers before the summary
        request = ModelRequest(
            system=system,
            messages=messages,
            tools=specs,
            call_number=earlier + run.answers_by(agent),
            allow_tools=not final_turn,
            estimated_tokens=estimated,
            turn=turn,
        )
        started = self.clock.monotonic()
        try:
            model, response = await self._bounded(run, self._request(run, request))
        except ContextOverflow as refused:  # compact (prune, then summarise), ask once more
            compactions, before = run.head.context.compactions, request.messages
            request.messages, request.estimated_tokens = await self._fit(
                run, system, specs, forced=True
            )
            if run.head.context.compactions == compactions or request.messages == before:
                # It had stopped trying, or there was nothing to prune or summarise (the
                # first answer of a run, say): the same prompt would only be refused again.
                raise ContextOverflow(
                    f"{refused}; nothing left to compact", provider=refused.provider
                ) from refused
            request.attempt = 1  # a new attempt at this answer (the scripted index reads it)
            model, response = await self._bounded(run, self._request(run, request))
        head = run.head  # a compaction committed
        duration_ms = int((self.clock.monotonic() - started) * 1000)
        cost = call_cost(self.spec.models[model.name].price, response.usage)
        answer = AssistantMessage(
            text=response.text,
            tool_calls=own_call_ids(response.tool_calls),
            usage=response.usage,
            model=model.name,
            agent=agent,
            model_id=response.model_id or model.model_id,
            stop_reason=response.stop_reason,
            turn=turn,
        )
        events: list[tuple[EventType, dict[str, Any]]] = []
        if not follow_up:
            events.append(("step_started", {"turn": turn}))
        events.append(
            (
                "model_response",
                {
                    "turn": turn,
                    "model": model.name,
                    "text": preview(response.text),
                    "tool_calls": [c.name for c in response.tool_calls],
                    "usage": dump(response.usage),
                    "stop_reason": response.stop_reason,
                    "duration_ms": duration_ms,
                    "cost_usd": round(cost, 6),
                },
            )
        )
        by_agent = dict(head.usage_by_agent)
        by_agent[agent] = by_agent[agent] + response.usage if agent in by_agent else response.usage
        update: dict[str, Any] = {
            "turn": turn,
            "answers": head.answers + 1,
            "usage": head.usage + response.usage,
            "usage_by_agent": by_agent,
            "model_used": answer.model_id,
            "help_request": None,  # the supervisor has read it
            **charged(head, model.name, agent, cost),
        }
        new: list[Message] = [answer]
        failure: RunError | None = None
        if answer.tool_calls:
            update["continuations"] = 0
            if final_turn:
                failure = MaxTurnsExceeded(
                    f"reached max_turns ({max_turns}): the model still asked for tools "
                    "on its final turn"
                )
            else:
                failure = doom_loop(run.messages, answer.tool_calls)
        else:
            failure = self._conclude(run, answer, update, new, events)
            if update.get("status") == "succeeded":
                await self._review_response(run, update, events, new)  # pre_response hooks
                if update.get("truncated"):
                    warnings = update.get("warnings", run.head.warnings)
                    update["warnings"] = [*warnings, out.TRUNCATED.format(n=MAX_CONTINUATIONS)]
        if failure is not None:
            run.head = self._commit(head, new, events, update=update)
            raise failure
        finished = update.get("status", "running") != "running"
        run.head = self._commit(head, new, events, update=update, release=finished)
        run.messages.extend(new)

    def _conclude(
        self,
        run: RunCursor,
        answer: AssistantMessage,
        update: dict[str, Any],
        new: list[Message],
        events: list[tuple[EventType, dict[str, Any]]],
    ) -> RunError | None:
        """A final answer: continue a cut-off answer, correct an invalid one, or finish."""
        head = run.head
        if answer.stop_reason == "max_tokens" and head.continuations < MAX_CONTINUATIONS:
            update["continuations"] = head.continuations + 1
            new.append(UserMessage(content=out.CONTINUE_PROMPT, purpose="continue"))
            return None
        schema = self.spec.agents[head.agent].output_schema  # the team answers as its entry
        text = answer_text([*run.messages, answer])
        result, problem = out.result_from_answer(text, schema)
        if problem is not None and schema is not None:
            if head.corrections < MAX_CORRECTIONS:
                update["corrections"] = head.corrections + 1
                update["continuations"] = 0
                new.append(
                    UserMessage(content=out.correction_prompt(problem, schema), purpose="correct")
                )
                return None
            return OutputInvalid(
                f"the final answer failed the output schema after {MAX_CORRECTIONS} "
                f"corrections: {problem}"
            )
        update["status"] = "succeeded"
        self._store_result(head, result, update)
        events.append(("step_completed", {"turn": answer.turn}))
        usage = update["usage"]
        completed = {
            "turns_used": update["turn"],
            "tokens_input": usage.input_tokens,
            "tokens_output": usage.output_tokens,
            "cost_usd": round(update["cost_usd"], 6),
        }
        if answer.stop_reason == "max_tokens":  # still cut off: the best there is, marked
            update["truncated"] = completed["truncated"] = True
        events.append(("run_completed", completed))
        return None
