"""Strands Agents: N turns of a scripted model (its stream events) calling an async no-op
tool, then answering, with the agent's defaults."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from strands import Agent, tool
from strands.models.model import Model
from timing import report

logging.disable(logging.CRITICAL)


class Scripted(Model):
    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any
    ) -> AsyncIterator[Any]:
        self.calls += 1
        last = self.calls >= self.turns
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": "done" if last else f"step {self.calls}"}}}
        yield {"contentBlockStop": {}}
        if not last:
            use = {"name": "noop", "toolUseId": f"c{self.calls}"}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {
                "contentBlockDelta": {
                    "delta": {"toolUse": {"input": json.dumps({"i": self.calls})}}
                }
            }
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn" if last else "tool_use"}}
        usage = {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12}
        yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}


@tool
async def noop(i: int) -> dict[str, object]:
    """Does nothing."""
    return {"ok": True, "i": i}


def prepare(turns: int) -> Callable[[], None]:
    model = Scripted(turns)
    agent = Agent(model=model, tools=[noop], system_prompt="bench", callback_handler=None)

    def run() -> None:
        result = asyncio.run(agent.invoke_async("go"))
        assert model.calls == turns and "done" in str(result)

    return run


if __name__ == "__main__":
    report(prepare)
