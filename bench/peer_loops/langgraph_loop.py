"""LangGraph: its prebuilt ReAct agent, N turns of a scripted chat model calling an async
no-op tool, then answering; without a checkpointer, and with its in-memory one (argument
`--saver`), which keeps every step as agentfn's store does."""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from timing import report

warnings.filterwarnings("ignore")  # create_react_agent's deprecation notice
SAVER = "--saver" in sys.argv
if SAVER:
    sys.argv.remove("--saver")


class Scripted(BaseChatModel):
    turns: int
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}
        if self.calls < self.turns:
            call = {"name": "noop", "args": {"i": self.calls}, "id": f"c{self.calls}"}
            message = AIMessage(
                content=f"step {self.calls}", tool_calls=[call], usage_metadata=usage
            )
        else:
            message = AIMessage(content="done", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop, run_manager, **kw)


@tool
async def noop(i: int) -> dict[str, object]:
    """Does nothing."""
    return {"ok": True, "i": i}


def prepare(turns: int) -> Callable[[], None]:
    model = Scripted(turns=turns)
    agent = create_react_agent(
        model, [noop], prompt="bench", checkpointer=InMemorySaver() if SAVER else None
    )
    config = {"recursion_limit": 2 * turns + 10, "configurable": {"thread_id": "bench"}}

    def run() -> None:
        out = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, config))
        assert out["messages"][-1].content == "done" and model.calls == turns

    return run


if __name__ == "__main__":
    report(prepare)
