"""An httpx.MockTransport answering from a queue, for tests that need several different
answers in a row (a rejection, then the retried request's answer) and the bodies sent."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import httpx

from runtime.models.base import Model
from runtime.models.factory import build_model
from runtime.spec import models as spec


class MockWire:
    def __init__(self, *answers: tuple[int, Any] | tuple[int, Any, dict[str, str]]):
        self._answers = deque(answers)
        self.sent: list[dict[str, Any]] = []

    def queue(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._answers.append((status, body, headers or {}))

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        status, body, *rest = self._answers.popleft()
        return httpx.Response(status, json=body, headers=rest[0] if rest else {})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self._answer))

    def model(self, name: str = "m", **config: Any) -> Model:
        """A provider adapter (any HTTP provider: `provider=` decides) on this wire."""
        provider = config["provider"]
        config.setdefault("api_key", "${secret:key}")
        if provider in ("openai_compatible", "azure_openai"):
            config.setdefault("base_url", "https://llm.example.test/v1")
        if provider == "azure_openai":
            config.setdefault("deployment", "prod")
        kinds = {
            "openai": spec.OpenAIModel,
            "azure_openai": spec.AzureOpenAIModel,
            "openai_compatible": spec.OpenAICompatibleModel,
            "ollama": spec.OllamaModel,
            "anthropic": spec.AnthropicModel,
            "gemini": spec.GeminiModel,
        }
        return build_model(
            name,
            kinds[provider](**config).to_runtime(),
            lambda _: "sk-test",
            http_client=self.client(),
        )


def text_answer(provider: str, text: str = "ok") -> dict[str, Any]:
    """A minimal successful answer in the provider's own format."""
    if provider == "anthropic":
        return {
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1},
        }
    if provider == "gemini":
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
        }
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
