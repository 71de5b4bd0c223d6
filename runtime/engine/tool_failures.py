"""A failed tool can end the run (issue 25, the error port of seed 002).

By default a tool's failure goes back to the model as an error result and the run goes on
(`on_failure: continue`). A tool (or an agent, for all its tools) set to `fail_run` ends
the run with TOOL_FAILED and the tool's error once it has failed `max_consecutive_failures`
times in a row in this run (default 1): for a tool whose failure makes every later answer
wrong, such as a payment backend that is down, continuing only burns turns.

Only calls that ran count: a call denied by a hook or a person is a decision, not a failure.
"""

from __future__ import annotations

from runtime.errors import ToolFailed
from runtime.messages import Message, ToolResultMessage
from runtime.spec.plain import AgentfnSpec


def failure_policy(spec: AgentfnSpec, agent: str, tool_ref: str | None) -> tuple[str, int]:
    """(on_failure, max_consecutive_failures) for the tool: its own keys, else the agent's."""
    default = spec.agents[agent].tool_failures
    on_failure, limit = default.on_failure, default.max_consecutive_failures
    config = spec.tools.get(tool_ref or "")
    if config is not None:
        on_failure = config.on_failure or on_failure
        limit = config.max_consecutive_failures or limit
    return on_failure, limit


def tool_failure(
    spec: AgentfnSpec, agent: str, messages: list[Message], result: ToolResultMessage
) -> ToolFailed | None:
    """The error that ends the run after `result` (already recorded), or None to go on."""
    if result.success or result.outcome_unknown:
        return None
    on_failure, limit = failure_policy(spec, agent, result.tool_ref)
    if on_failure != "fail_run":
        return None
    failures = 0
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage) and message.tool_ref == result.tool_ref:
            if message.success:
                break
            failures += 1
    if failures < limit:
        return None
    times = f" ({failures} times in a row)" if failures > 1 else ""
    return ToolFailed(f"tool {result.tool_name} failed{times}: {result.content[:2000]}")
