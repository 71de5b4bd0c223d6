"""Bedrock Knowledge Bases through the Retrieve API (`bedrock-agent-runtime`)."""

from __future__ import annotations

from typing import Any

from runtime.spec.plain import BedrockKnowledgeBase
from runtime.tools.base import ToolError
from runtime.tools.knowledge.base import Hit


class BedrockIndex:
    def __init__(self, name: str, config: BedrockKnowledgeBase, client: Any):
        self.name = name
        self.description = config.description
        self._config = config
        self._client = client

    def search(self, query: str, max_results: int) -> list[Hit]:
        try:
            answer = self._client.retrieve(
                knowledgeBaseId=self._config.knowledge_base_id,
                retrievalQuery={"text": query},
                retrievalConfiguration={
                    "vectorSearchConfiguration": {"numberOfResults": max_results}
                },
            )
        except Exception as exc:
            error = (getattr(exc, "response", None) or {}).get("Error") or {}
            message = error.get("Message") or type(exc).__name__
            raise ToolError(
                f"knowledge base {self.name!r} could not be searched: {message}"
            ) from None
        hits = []
        for i, result in enumerate(answer.get("retrievalResults", [])):
            location = result.get("location") or {}
            kind = str(location.get("type", "")).lower()
            where = (location.get(f"{kind}Location") or {}) if kind else {}
            source = where.get("uri") or where.get("url") or kind or "bedrock"
            text = (result.get("content") or {}).get("text", "")
            hits.append(
                Hit(self.name, str(source), f"{source}#{i}", float(result.get("score", 0)), text)
            )
        return hits
