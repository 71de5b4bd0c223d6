"""`knowledge_search(query, knowledge_base_names?, max_results?)`: one tool per agent over
the knowledge bases it lists, read-only (it runs in parallel with other read-only calls)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from runtime.spec.plain import AgentfnSpec, BedrockKnowledgeBase
from runtime.tools.base import FunctionTool, ToolContext, ToolError
from runtime.tools.knowledge.base import Hit, KnowledgeBase

MAX_RESULTS = 20


def knowledge_search_tool(
    spec: AgentfnSpec, agent: str, bedrock_client: Callable[[str | None], Any]
) -> FunctionTool:
    names = list(spec.agents[agent].knowledge_bases)
    opened: dict[str, KnowledgeBase] = {}

    def base(name: str) -> KnowledgeBase:
        if name not in opened:
            config = spec.knowledge_bases.get(name)
            if config is None:
                raise ToolError(f"knowledge base {name!r} is not configured (knowledge_bases:)")
            if isinstance(config, BedrockKnowledgeBase):
                from runtime.tools.knowledge.bedrock import BedrockIndex

                opened[name] = BedrockIndex(name, config, bedrock_client(config.region))
            else:
                from runtime.tools.knowledge.local import load_local
                from runtime.tools.paths import project_dir

                opened[name] = load_local(name, config, project_dir(spec))
        return opened[name]

    async def search(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be non-empty text")
        wanted = arguments.get("knowledge_base_names") or names
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise ToolError(f"unknown knowledge base(s) {unknown}; this agent's: {names}")
        limit = arguments.get("max_results", 5)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RESULTS:
            raise ToolError(f"max_results is a whole number from 1 to {MAX_RESULTS}")

        def run() -> list[Hit]:
            hits = [hit for name in wanted for hit in base(name).search(query, limit)]
            return sorted(hits, key=lambda h: -h.score)[:limit]

        hits = await asyncio.to_thread(run)
        return {"query": query, "results": [h.as_dict() for h in hits]}

    described = "; ".join(
        f"{n}: {getattr(spec.knowledge_bases.get(n), 'description', '') or 'no description'}"
        for n in names
    )
    return FunctionTool(
        name="knowledge_search",
        description=(
            "Search the knowledge bases for passages relevant to a query; each result has its "
            f"source, chunk id, score and text. Knowledge bases: {described}."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "knowledge_base_names": {
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                },
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS},
            },
            "required": ["query"],
        },
        func=search,
        effect="read_only",
    )
