"""Teams: handoffs, escalation and sub-agents asked as tools, as commits of the run store.

- **Handoff** (`transfer_to_<name>`): one commit answers the call ("conversation transferred
  to …"), answers any call of the same answer that had not run, and pushes the agent onto
  the run's `chain`. The next step is the new agent's: its prompt, model and tools, the whole
  conversation. Deployed, the step then moves to that agent's own function (see
  `Engine.scope`), so each agent's code keeps its own role.
- **Escalation** (`request_help`): the same, popping the chain back to the supervisor, whose
  next prompt shows the reason. In a child run it ends the child (`ESCALATED`): its asker
  hears the reason as the tool's error.
- **Ask** (`ask_<name>(task)`): each call becomes a child run of its own, whose id is derived
  from this run and the call (a crash or a retry never starts two). The parent commits
  `awaiting_children` first, then creates and starts the children; when every child has
  finished, one commit records each child's answer as its call's result and adds the
  children's tokens and turns to the parent's. In one process the children advance inline
  and concurrently; deployed, each is an execution of its agent's own state machine, and
  the last to finish wakes the parent (no polling).

Limits: a delegation is refused (as the tool's error, the run goes on) beyond
`defaults.max_depth` or towards an agent already above it (no cycles at run time).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import Any

from runtime.engine.commits import BudgetSpent, RunCursor
from runtime.engine.compat import agent_hash
from runtime.engine.cost import child_budget
from runtime.engine.remote_asks import RemoteAsks
from runtime.engine.result import final_result
from runtime.engine.tool_phase import ToolPhase
from runtime.engine.toolrun import answered_result, error_result
from runtime.errors import InvalidRequest, RunError, RunNotFound, StateConflict
from runtime.events import EventType, preview
from runtime.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from runtime.naming import agent_tag
from runtime.spec.graph import handoff_paths
from runtime.store.base import TERMINAL, ChildRun, HelpRequest, RemoteTask, RunHead, new_head
from runtime.structs import replace
from runtime.tools.team import TeamView, team_view

Events = list[tuple[EventType, dict[str, Any]]]


class Escalated(RunError):
    error_code = "ESCALATED"


class MovedOn(BudgetSpent):
    """The conversation moved to an agent this engine may not run (another function)."""


MENTION = re.compile(r"^\s*@([A-Za-z][A-Za-z0-9_-]{0,63})\b")


def child_run_id(parent_run_id: str, call_id: str, agent: str) -> str:
    """The child's id: its agent's tag, then a digest of the parent run and the call, so the
    same call can only ever start the same child."""
    digest = hashlib.sha256(f"{parent_run_id}/{call_id}".encode()).hexdigest()
    return agent_tag(agent) + digest[:24]


class TeamPhase(RemoteAsks, ToolPhase):
    #: When set (a deployed agent function), the agent whose code this engine may run; a run
    #: whose conversation moved to another agent is released for that agent's function.
    scope: str | None
    #: Starts a child run's execution (deployed); None: children advance in this process.
    child_starter: Any

    async def advance(self, run_id: str, budget_seconds: float | None = None) -> RunHead:
        raise NotImplementedError  # runtime.engine.loop.Engine

    def _team_view(self, run: RunCursor) -> TeamView:
        """What the acting agent may know of its team: the same for every call in one role
        (the spec does not change under an engine), so made once per role."""
        key = (run.head.agent, run.agent, run.head.supervisor)
        views: dict[tuple[str, str, str | None], TeamView] = self.__dict__.setdefault(
            "_team_views", {}
        )
        view = views.get(key)
        if view is None:
            view = views[key] = team_view(self.spec, *key)
        return view

    def _route_input(self, agent: str, text: str) -> list[str] | None:
        """An input that starts with `@name` goes to that member of the agent's team (the
        handoff chain from the agent to it); None when the input names no one."""
        mention = MENTION.match(text)
        if mention is None:
            return None
        target = mention.group(1)
        paths = handoff_paths(self.spec, agent)
        if target not in paths:
            members = ", ".join(f"@{name}" for name in paths) or f"@{agent}"
            raise InvalidRequest(
                f"@{target} is not in {agent}'s team; who can be mentioned: {members}",
                field="input",
            )
        path = paths[target]
        if len(path) - 1 > self.spec.defaults.max_depth:
            raise InvalidRequest(f"@{target} is deeper than max_depth", field="input")
        return path

    def _max_turns(self, head: RunHead) -> int:
        """The team's turn budget: the entry agent's (a child's share of its parent's)."""
        config = self.spec.agents[head.agent]
        own = config.max_turns or self.spec.defaults.max_turns
        if head.max_turns:  # the caller's per-run limit (never above the agent's own)
            own = min(own, head.max_turns)
        return min(own, head.turn_budget) if head.turn_budget else own

    def _delegation_problem(self, head: RunHead, target: str) -> str | None:
        above = [*head.ancestors, *(head.chain or [head.agent])]
        if target in above:
            return f"{target} is already working on this conversation above you"
        limit = self.spec.defaults.max_depth
        if head.delegation_depth + 1 > limit:
            return f"delegating to {target} would go deeper than max_depth ({limit})"
        return None

    # ---- handoff and escalation --------------------------------------------------------

    def _hand_over(
        self, run: RunCursor, call: ToolCall, kind: str, target: str, rest: list[ToolCall]
    ) -> bool:
        """Transfer the conversation (`transfer`) or hand it back (`help`). False when it was
        refused: the call has its error result and the step goes on."""
        head = run.head
        turn = self._turn(run)
        reason = str((call.arguments or {}).get("reason") or "")
        if kind == "transfer":
            problem = self._delegation_problem(head, target)
            if problem is not None:
                self._record_result(run, error_result(call, turn, problem), last=not rest)
                return False
            to, chain = target, [*(head.chain or [head.agent]), target]
            text = f"Conversation transferred to {target}."
            event: tuple[EventType, dict[str, Any]] = (
                "handoff",
                {"from": run.agent, "to": target, "reason": preview(reason)},
            )
            update: dict[str, Any] = {"chain": chain, "help_request": None}
        else:
            supervisor = head.supervisor
            if supervisor is None:
                if head.parent_run_id is None:
                    problem = "you have no supervisor to ask; answer as best you can"
                    self._record_result(run, error_result(call, turn, problem), last=not rest)
                    return False
                raise Escalated(f"{run.agent} asked for help: {reason}")
            to, chain = supervisor, head.chain[:-1]
            text = f"Asked {supervisor} for help; the conversation is back with them."
            event = ("escalation", {"from": run.agent, "to": supervisor, "reason": preview(reason)})
            update = {"chain": chain, "help_request": HelpRequest(agent=run.agent, reason=reason)}
        update["agent_path"] = [*(head.agent_path or [head.agent]), to]
        done = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            tool_ref=self._toolbox(head)[call.name].reference,
            content=text,
            inputs=call.arguments,
            output={"to": to},
            turn=turn,
            at=self.clock.now(),
        )
        skipped = [
            error_result(c, turn, f"not run: the conversation went to {to} first") for c in rest
        ]
        messages: list[Message] = [done, *skipped]
        events: Events = [event, ("step_completed", {"turn": turn})]
        run.head = self._commit(head, messages, events, update=update)
        run.messages.extend(messages)
        return True

    # ---- children ----------------------------------------------------------------------

    async def _ask(self, run: RunCursor, calls: list[tuple[ToolCall, str]]) -> None:
        """Start a child run per call (refused ones get their error), then wait for them."""
        refs: list[ChildRun] = []
        turn = self._turn(run)
        for call, target in calls:
            problem = self._delegation_problem(run.head, target)
            if problem is not None:
                self._record_result(run, error_result(call, turn, problem), last=False)
                continue
            remote = RemoteTask() if target in self.spec.remote_agents else None
            refs.append(
                ChildRun(
                    tool_call_id=call.id,
                    run_id=child_run_id(run.head.run_id, call.id, target),
                    agent=target,
                    remote=remote,
                )
            )
        if not refs:
            return
        events: Events = [
            (
                "child_run_started",
                {"tool_call_id": r.tool_call_id, "run_id": r.run_id, "agent": r.agent},
            )
            for r in refs
        ]
        update = {"status": "awaiting_children", "children": refs}
        run.head = self._commit(run.head, [], events, update=update)
        await self._collect_children(run)

    def _child_task(self, run: RunCursor, ref: ChildRun) -> str:
        for message in reversed(run.messages):
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls:
                    if call.id == ref.tool_call_id:
                        return str((call.arguments or {}).get("task") or "")
        return ""

    def _create_child(self, run: RunCursor, ref: ChildRun) -> RunHead:
        """The child's head (idempotent: an existing one is kept as it is)."""
        parent = run.head
        now = self.clock.now()
        config = self.spec.agents[ref.agent]
        ttl = config.session.ttl or self.spec.deployment.retention
        task = self._child_task(run, ref)
        head = new_head(
            run_id=ref.run_id,
            agent=ref.agent,
            session_id=ref.run_id,
            run_key=f"{int(now * 1000):013d}-{ref.run_id}",
            spec_hash=self.spec.spec_hash(),
            agent_hash=agent_hash(self.spec, ref.agent),
            created_at=now,
            updated_at=now,
            expires_at=min(parent.expires_at, int(now + ttl)),
            input_preview=preview(task, 200),
            parent_run_id=parent.run_id,
            parent_call_id=ref.tool_call_id,
            depth=parent.delegation_depth + 1,
            ancestors=[*parent.ancestors, *(parent.chain or [parent.agent])],
            turn_budget=max(1, self._max_turns(parent) - parent.turn),
            budget_left=child_budget(self.spec, parent, share=len(parent.children)),
            trace=self._tracer.child_ref(parent) if self._tracer else None,  # the parent's trace
        )
        data = {
            "agent": ref.agent,
            "session_id": head.session_id,
            "input": preview(task),
            "parent_run_id": parent.run_id,
        }
        try:
            return self._commit(
                head, [UserMessage(content=task)], [("run_started", data)], create=True
            )
        except StateConflict:
            return self.store.load_head(ref.run_id)

    async def _collect_children(self, run: RunCursor) -> None:
        """Make sure every child exists and runs; once all have finished, record their
        answers and carry on. Otherwise the run stays `awaiting_children`, released."""
        heads: list[RunHead] = []
        created: list[RunHead] = []
        if any(ref.remote is not None for ref in run.head.children):
            await self._check_remotes(run)  # one request each (runtime.engine.remote_asks)
        for ref in run.head.children:
            if ref.remote is not None:
                continue
            try:
                child = self.store.load_head(ref.run_id)
            except RunNotFound:
                child = self._create_child(run, ref)
                created.append(child)
            heads.append(child)
        if self.child_starter is not None:
            for child in heads:
                if child.status not in TERMINAL:
                    self.child_starter(child)  # idempotent: named by the child's run id
        else:
            moving = [h for h in heads if h.status == "running"]
            if moving:
                await asyncio.gather(*(self.advance(h.run_id) for h in moving))
                heads = [self.store.load_head(h.run_id) for h in heads]
        remote_open = any(r.remote is not None and not r.remote.ended for r in run.head.children)
        if remote_open or any(h.status not in TERMINAL for h in heads):
            run.head = self._commit(run.head, [], [], release=True)
            return
        self._record_children(run, heads)

    def _record_children(self, run: RunCursor, children: list[RunHead]) -> None:
        head = run.head
        turn = self._turn(run)
        calls = {
            c.id: c for m in run.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        }
        results: list[Message] = []
        events: Events = []
        usage, by_agent, turns = head.usage, dict(head.usage_by_agent), head.turn
        costs: dict[str, Any] = {
            "cost_usd": head.cost_usd,
            "cost_by_model": dict(head.cost_by_model),
            "cost_by_agent": dict(head.cost_by_agent),
        }
        for child in children:
            call = calls[child.parent_call_id or ""]
            if child.status == "succeeded":
                answer = final_result(child, self.store.blobs)
                result = answered_result(call, turn, answer, self.clock.now(), child.run_id)
            else:
                why = f"{child.agent} {child.status}: {child.error_code}: {child.error_message}"
                result = replace(error_result(call, turn, why), child_run_id=child.run_id)
            result.tool_ref = self._toolbox(head)[call.name].reference
            results.append(result)
            events.append(
                (
                    "child_run_finished",
                    {"run_id": child.run_id, "agent": child.agent, "status": child.status},
                )
            )
            usage = usage + child.usage
            for name, used in (child.usage_by_agent or {child.agent: child.usage}).items():
                by_agent[name] = by_agent.get(name, Usage()) + used
            turns += child.turn
            costs["cost_usd"] += child.cost_usd
            for key in ("cost_by_model", "cost_by_agent"):
                for name, cost in getattr(child, key).items():
                    costs[key][name] = costs[key].get(name, 0.0) + cost
        for ref in run.head.children:  # remote asks: their answers, kept on the refs
            if ref.remote is not None:
                results.append(self._remote_result(run, calls[ref.tool_call_id], ref, turn))
                events.append(
                    (
                        "child_run_finished",
                        {"run_id": ref.run_id, "agent": ref.agent, "status": ref.remote.state},
                    )
                )
        events.append(("step_completed", {"turn": turn}))
        update = {
            "status": "running",
            "children": [],
            "usage": usage,
            "usage_by_agent": by_agent,
            "turn": turns,
            **costs,
        }
        run.head = self._commit(head, results, events, update=update)
        run.messages.extend(results)
