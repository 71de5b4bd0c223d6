"""Remote A2A agents asked as tools (`remote_agents`): the engine side.

An ask of a remote agent is a child of the run like a local one (the run commits
`awaiting_children` first, records every answer in one commit at the end), except that its
"run" is the remote agent's task, kept on the ref (`ChildRun.remote`). Each time the run is
advanced while it waits, every open remote task gets one request (runtime.protocols.
a2a_client.check: the message the first time, GetTask after), and what it said is
committed on the ref. Deployed (and on `agentfn dev`), nothing waits in a Lambda: the run
is released and its state machine's WaitForChildren times out after the remote agent's
`poll_interval` (runtime.service: `_route`) to advance it again. In one process (`agentfn
run`) the engine waits for it here, `poll_interval` apart, as it waits for local children.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from runtime.engine.commits import RunCursor
from runtime.engine.toolrun import answered_result, error_result
from runtime.messages import ToolCall, ToolResultMessage
from runtime.store.base import ChildRun, RemoteTask
from runtime.structs import replace

IN_PROCESS_WAIT_SECONDS = 900.0  # one process waits this long for a remote task at most


class RemoteAsks:
    spec: Any
    clock: Any
    child_starter: Any

    if TYPE_CHECKING:  # the engine's (runtime.engine.commits, toolsets): not defined here

        def _commit(self, *args: Any, **kwargs: Any) -> Any: ...

        def _toolbox(self, head: Any) -> Any: ...

        def secrets(self) -> Any: ...

        def _child_task(self, run: RunCursor, ref: ChildRun) -> str: ...

    async def _check_remotes(self, run: RunCursor) -> None:
        from runtime.protocols.a2a_client import check

        waited = 0.0
        while True:
            refs = list(run.head.children)
            changed = False
            for index, ref in enumerate(refs):
                if ref.remote is None or ref.remote.ended:
                    continue
                config = self.spec.remote_agents[ref.agent]
                task = self._child_task(run, ref)
                seen = await check(config, ref.remote, task, ref.run_id, self.secrets())
                if seen != ref.remote:
                    refs[index] = replace(ref, remote=seen)
                    changed = True
            if changed:
                run.head = self._commit(run.head, [], [], update={"children": refs})
            open_ = [r for r in refs if r.remote is not None and not r.remote.ended]
            if self.child_starter is not None or not open_:
                return  # deployed: the state machine comes back (service._route)
            if (
                any(r.remote.question for r in open_ if r.remote)
                or waited >= IN_PROCESS_WAIT_SECONDS
            ):
                return  # a person answers first (the run's result shows the question)
            interval = min(self.spec.remote_agents[r.agent].poll_interval for r in open_)
            await asyncio.sleep(interval)
            waited += interval

    def _remote_result(
        self, run: RunCursor, call: ToolCall, ref: ChildRun, turn: int
    ) -> ToolResultMessage:
        task = ref.remote or RemoteTask(error="no remote task")
        if task.error is not None:
            result = error_result(call, turn, f"{ref.agent}: {task.error}")
        else:
            result = answered_result(call, turn, task.answer, self.clock.now())
        result.tool_ref = self._toolbox(run.head)[call.name].reference
        return result


def remote_recheck_seconds(spec: Any, head: Any) -> int | None:
    """How long the state machine waits before looking at the run's open remote tasks again
    (None when it waits for none)."""
    open_ = [r for r in head.children if r.remote is not None and not r.remote.ended]
    if not open_:
        return None
    return int(min(spec.remote_agents[r.agent].poll_interval for r in open_))
