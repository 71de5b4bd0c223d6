"""Talking to Step Functions about a run: start its current execution, ask how it is,
resume the task that waits on its token, stop it. Every call tolerates what a retry or a
race can cause (an execution already started, a token nothing waits on any more)."""

from __future__ import annotations

import json
import logging
from typing import Any

from runtime.stack import Stack, execution_name
from runtime.store.base import RunHead

log = logging.getLogger("agentfn.service")

RESUME_ATTEMPTS = 4  # SendTaskSuccess tries before the sweeper is left to resume the run
#: Errors that mean a task token can never be used again: nothing waits on it.
STALE_TOKEN_ERRORS = ("TaskDoesNotExist", "InvalidToken", "TaskTimedOut")


class Executions:
    stack: Stack
    sfn: Any
    _sleep: Any

    def start_execution(self, head: RunHead) -> bool:
        """Start the run's current execution (idempotent: its name is fixed per generation).
        False when it could not be started: the run then waits for the sweeper."""
        arn = self.stack.state_machine(head.agent)
        if self.sfn is None or arn is None:
            return False
        try:
            self.sfn.start_execution(
                stateMachineArn=arn,
                name=execution_name(head),
                input=json.dumps({"run_id": head.run_id}),
            )
        except self.sfn.exceptions.ExecutionAlreadyExists:
            pass  # a retried request finds it already on its way
        except Exception:
            log.exception("could not start the execution of run %s", head.run_id)
            return False
        return True

    def _execution_arn(self, head: RunHead) -> str | None:
        arn = self.stack.state_machine(head.agent)
        if arn is None:
            return None
        return arn.replace(":stateMachine:", ":execution:") + f":{execution_name(head)}"

    def execution_status(self, head: RunHead) -> str | None:
        """The status of the run's current execution (RUNNING, SUCCEEDED, FAILED, TIMED_OUT,
        ABORTED), or None when it does not exist (or there is no state machine to ask)."""
        arn = self._execution_arn(head)
        if self.sfn is None or arn is None:
            return None
        try:
            status: str = self.sfn.describe_execution(executionArn=arn)["status"]
        except self.sfn.exceptions.ExecutionDoesNotExist:
            return None
        return status

    def resume(self, head: RunHead) -> bool:
        """Resume the execution waiting on the run's task token, if it has one."""
        return bool(head.task_token) and self._send_success(str(head.task_token), head)

    def _send_success(self, token: str, head: RunHead) -> bool:
        return self.send_token(token, head.run_id)

    def send_token(self, token: str, run_id: str | None) -> bool:
        """Resume the execution waiting on `token`, retrying passing failures. A token that
        nothing waits on any more is not an error. When every attempt fails, the decision is
        still recorded and the sweeper resumes the run later (False)."""
        if self.sfn is None:
            return False
        for attempt in range(RESUME_ATTEMPTS):
            try:
                self.sfn.send_task_success(taskToken=token, output=json.dumps({"run_id": run_id}))
                return True
            except Exception as exc:
                code = _error_code(exc)
                if code in STALE_TOKEN_ERRORS:
                    log.info("send_task_success: %s (nothing waits on it)", code)
                    return False
                last = attempt + 1 == RESUME_ATTEMPTS  # earlier failures are retried: info
                (log.warning if last else log.info)(
                    "send_task_success failed (attempt %d): %s", attempt + 1, code
                )
                if not last:
                    self._sleep(0.2 * 2**attempt)
        return False

    def stop_execution(self, head: RunHead) -> None:
        """Stop the run's execution, and release a task that waits on its token."""
        arn = self._execution_arn(head)
        if self.sfn is None or arn is None:
            return
        try:
            self.sfn.stop_execution(executionArn=arn, error="RunCancelled", cause="cancelled")
        except Exception as exc:  # already finished, or never started: the run is cancelled
            log.info("stop_execution: %s", type(exc).__name__)
        if head.task_token:
            # After a stop this is a no-op on AWS (the token is dead, the error is ignored);
            # an emulator whose worker blocks on the token needs it to notice the stop.
            try:
                self.sfn.send_task_failure(
                    taskToken=head.task_token, error="RunCancelled", cause="cancelled"
                )
            except Exception as exc:
                log.info("send_task_failure: %s", type(exc).__name__)


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str((response.get("Error") or {}).get("Code") or type(exc).__name__)
