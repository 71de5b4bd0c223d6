"""Runs decided in one process that another process left waiting (the local state,
infra.local.local_state, is shared; Step Functions executions are not).

moto keeps an execution — and the task token a waiting run's decision resumes — in the
memory of the process that started it, so a decision recorded in another process (`agentfn
dev`'s API, `agentfn approve RUN_ID`) finds no execution waiting for it. What is in the
shared runs table is enough to carry on without calling anything twice:

- an agent run (and the parents it belongs to) gets a new execution here, as the deployed
  sweeper restarts a run that lost its execution (runtime.sweeper): the next generation,
  which resumes from the run's committed state — tools already called are in its history;
- a workflow's step run re-enters its workflow's state machine here
  (`WorkflowService.reenter`): every step already finished is passed over by `plan`, the
  step that waits re-attaches to its existing runs (`run_item` finds each by its derived id
  and gives it the new execution's token), so no step and no tool runs twice.
"""

from __future__ import annotations

from runtime.service import RunService
from runtime.store.base import TERMINAL, RunHead


class SharedStateService(RunService):
    """The RunService of a stack whose runs table other processes share: a decision on a run
    no execution of this process waits for takes the run over (`take_over`)."""

    def _resume_if_decided(self, head: RunHead) -> None:
        super()._resume_if_decided(head)  # an execution here waits on its token: resumed
        if head.status == "running":
            take_over(self, head)


def take_over(service: RunService, head: RunHead) -> list[str]:
    """Give `head` (decided, running) an execution in this process if none runs it here;
    the ids of the runs (or the workflow run) given one."""
    if service.execution_status(head) == "RUNNING":
        return []
    if head.workflow_run_id:
        from runtime.workflows.service import WorkflowService

        workflow = head.workflow_run_id
        return [workflow] if WorkflowService(service).reenter(workflow) else []
    chain = [head]
    while chain[-1].parent_run_id:  # a child: its parents lost their executions too
        chain.append(service.engine.store.load_head(chain[-1].parent_run_id))
    started = []
    for run in reversed(chain):  # the root first: it waits for its children again
        if run.status in TERMINAL or service.execution_status(run) == "RUNNING":
            continue
        restarted = service.engine.next_generation(run.run_id)
        if service.start_execution(restarted):
            started.append(run.run_id)
    return started
