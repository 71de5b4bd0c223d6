"""The orchestration side of teams (runtime.engine.team is the engine side): which runs an
agent's function may advance, where a person's decision on a parent run goes, how a parent
waits for its children and is woken by the last one, and how a cancel reaches them.

A run belongs to its entry agent (its id carries that agent's tag); its conversation may be
with any agent the entry agent can hand off to, and each of those agents' functions may
advance it (and only those: IAM says the same). A child run is its own agent's run.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from runtime.errors import RunNotFound, WrongState
from runtime.naming import agent_tag
from runtime.spec.graph import handoff_paths
from runtime.store.base import TERMINAL, RunHead, RunStore

if TYPE_CHECKING:
    from runtime.engine.loop import Engine
    from runtime.stack import Stack

log = logging.getLogger("agentfn.teams")


def entry_agents_of(engine: Engine, agent: str) -> set[str]:
    """The agents whose runs `agent`'s function may advance: those that can hand a
    conversation to it (itself included)."""
    spec = engine.spec
    return {entry for entry in spec.agents if agent in handoff_paths(spec, entry)}


def waiting_for_a_person(
    store: RunStore,
    head: RunHead,
    waiting: str | None = None,
    tool_call_id: str | None = None,
) -> RunHead | None:
    """The run under `head` (itself, a child, a grandchild…) that waits for a person's
    answer: of the kind `waiting` (`awaiting_input`/`awaiting_approval`) when given, holding
    `tool_call_id` when given. None when no run does."""
    if head.status != "awaiting_children":
        if head.status not in (waiting or PEOPLE_WAITS):
            return None
        ids = [p.tool_call_id for p in head.pending_approval]
        if head.clarification is not None:
            ids.append(head.clarification.tool_call_id)
        return head if tool_call_id is None or tool_call_id in ids else None
    for child in head.children:
        try:
            found = waiting_for_a_person(
                store, store.load_head(child.run_id), waiting, tool_call_id
            )
        except RunNotFound:
            continue
        if found is not None:
            return found
    return None


PEOPLE_WAITS = ("awaiting_input", "awaiting_approval")


def decision_data(approved: bool, reason: str | None, edited: dict[str, Any] | None) -> Any:
    """An approval as the data part an A2A task waiting for it takes (runtime.protocols)."""
    data = {"approved": approved, "reason": reason, "edited_inputs": edited}
    return {k: v for k, v in data.items() if v is not None}


class TeamOrchestration:
    engine: Engine
    stack: Stack
    sfn: Any
    agent: str | None

    def may_advance(self, run_id: str) -> bool:
        """Whether this function may work on the run (always, outside a deployed function)."""
        if self.agent is None:
            return True
        return any(
            run_id.startswith(agent_tag(e)) for e in entry_agents_of(self.engine, self.agent)
        )

    def decision_target(self, run_id: str, waiting: str, tool_call_id: str | None) -> str:
        """The run a decision is for: the run itself, or, while it waits for its children, the
        child (or grandchild) that waits for this kind of answer (the one holding
        `tool_call_id` when given)."""
        head = self.engine.store.load_head(run_id)
        found = waiting_for_a_person(self.engine.store, head, waiting, tool_call_id)
        return found.run_id if found is not None else run_id

    def cancel_children(self, head: RunHead, by: str | None) -> None:
        """A cancelled parent cancels every child still running (and theirs), remote A2A
        tasks included (best effort: the remote may refuse or be gone)."""
        for child in head.children:
            if child.remote is not None:
                self._cancel_remote(child.agent, child.remote)
                continue
            with contextlib.suppress(RunNotFound, WrongState):  # not created, or finished
                self.cancel(child.run_id, by=by)  # type: ignore[attr-defined]

    def children_done(self, head: RunHead) -> bool:
        for child in head.children:
            try:
                if self.engine.store.load_head(child.run_id).status not in TERMINAL:
                    return False
            except RunNotFound:
                return False
        return True

    def wake_parent(self, child: RunHead) -> None:
        """A child finished: resume its parent if it waits (the last child's wake is the one
        that finds every child done; an early wake just waits again)."""
        if child.parent_run_id is None or self.sfn is None:
            return
        try:
            parent = self.engine.store.load_head(child.parent_run_id)
        except RunNotFound:
            return
        if parent.status == "awaiting_children" and parent.task_token:
            self._send_success(parent.task_token, parent)  # type: ignore[attr-defined]

    def function_for(self, head: RunHead) -> str:
        """The function that advances the run next: the agent that has its conversation."""
        return self.stack.function(head.active_agent) or ""

    def children_wait_end(self, head: RunHead) -> float:
        """When a run waiting for its children is looked at again: before its data expires,
        and every `poll_interval` of the remote A2A tasks it waits for (remote_agents)."""
        from runtime.engine.commits import wait_until
        from runtime.engine.remote_asks import remote_recheck_seconds

        recheck = remote_recheck_seconds(self.engine.spec, head)
        end = wait_until(head, head.expires_at)
        return end if recheck is None else min(end, self.engine.clock.now() + recheck)

    def forward_to_remote(self, run_id: str, *, data: Any = None, text: str = "") -> bool:
        """A decision or reply for a run that waits for a remote A2A agent's question (an ask
        of `remote_agents`) goes to that remote task, and the run is woken to read it again.
        False when no remote task of the run waits for input (the answer is the run's own)."""
        import asyncio

        from runtime.protocols.a2a_client import answer

        head = self.engine.store.load_head(run_id)
        if head.status != "awaiting_children":
            return False
        for ref in head.children:
            remote = ref.remote
            if remote is None or remote.ended or remote.question is None:
                continue
            config = self.engine.spec.remote_agents[ref.agent]
            kind = "approval" if data is not None else "reply"
            log.info("run %s: %s forwarded to remote task %s", run_id, kind, remote.task_id)
            asyncio.run(answer(config, remote, self.engine.secrets(), data=data, text=text))
            if head.task_token and self.sfn is not None:
                self._send_success(head.task_token, head)  # type: ignore[attr-defined]
            return True
        return False

    def _cancel_remote(self, agent: str, remote: Any) -> None:
        import asyncio

        from runtime.protocols.a2a_client import cancel

        if remote.ended or not remote.task_id:
            return
        config = self.engine.spec.remote_agents[agent]
        try:
            asyncio.run(cancel(config, remote, self.engine.secrets()))
        except Exception as exc:  # the asking run is cancelled whatever the remote says
            log.warning("remote task %s not cancelled: %s", remote.task_id, type(exc).__name__)
