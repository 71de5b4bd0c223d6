"""Build a Model from its spec configuration, importing only the provider it needs."""

from __future__ import annotations

from typing import Any

from runtime.models.base import Model, SecretResolver
from runtime.spec.models import ModelConfig


def build_model(
    name: str,
    config: ModelConfig,
    secrets: SecretResolver,
    *,
    http_client: Any = None,
    boto_client: Any = None,
) -> Model:
    """A ready Model. `http_client` (httpx.AsyncClient) and `boto_client` are injectable
    for tests and connection reuse; providers create their own when not given."""
    provider = config.provider
    if provider == "scripted":
        from runtime.models.scripted import ScriptedModelClient

        return ScriptedModelClient(name, config)
    if provider == "bedrock":
        from runtime.models.bedrock import BedrockConverseModel

        return BedrockConverseModel(name, config, client=boto_client)
    if provider in {"openai", "azure_openai", "ollama", "openai_compatible"}:
        from runtime.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel(name, config, secrets, client=http_client)
    if provider == "anthropic":
        from runtime.models.anthropic import AnthropicMessagesModel

        return AnthropicMessagesModel(name, config, secrets, client=http_client)
    if provider == "gemini":
        from runtime.models.gemini import GeminiModel

        return GeminiModel(name, config, secrets, client=http_client)
    raise ValueError(f"unknown provider {provider!r}")  # pragma: no cover - the spec forbids it
