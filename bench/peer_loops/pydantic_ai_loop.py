"""pydantic-ai: N turns of its FunctionModel calling an async no-op tool, then answering."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits
from timing import report


def prepare(turns: int) -> Callable[[], None]:
    calls = 0

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        usage = RequestUsage(input_tokens=10, output_tokens=2)  # as the script gives agentfn
        if calls < turns:
            parts = [TextPart(f"step {calls}"), ToolCallPart("noop", {"i": calls})]
            return ModelResponse(parts=parts, usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    agent = Agent(FunctionModel(model), instructions="bench")

    @agent.tool_plain
    async def noop(i: int) -> dict[str, object]:
        """Does nothing."""
        return {"ok": True, "i": i}

    def run() -> None:
        result = asyncio.run(agent.run("go", usage_limits=UsageLimits(request_limit=None)))
        assert result.output == "done" and calls == turns

    return run


if __name__ == "__main__":
    report(prepare)
