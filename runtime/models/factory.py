"""Build a Model from its spec configuration, importing only the provider it needs."""

from __future__ import annotations

from typing import Any

from runtime.models.base import Model, SecretResolver
from runtime.spec import plain as spec
from runtime.spec.plain import ModelConfig


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
    if isinstance(config, spec.ScriptedModel):
        from runtime.models.scripted import ScriptedModelClient

        return ScriptedModelClient(name, config)
    if isinstance(config, spec.BedrockModel):
        from runtime.models.bedrock import BedrockConverseModel

        return BedrockConverseModel(name, config, client=boto_client)
    if isinstance(config, spec.OpenAIModel | spec.AzureOpenAIModel) and config.api == "responses":
        from runtime.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name, config, secrets, client=http_client)
    if isinstance(
        config,
        spec.OpenAIModel
        | spec.AzureOpenAIModel
        | spec.OllamaModel
        | spec.OpenAICompatibleModel
        | spec.AiGatewayModel,
    ):
        from runtime.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel(name, config, secrets, client=http_client)
    if isinstance(config, spec.AnthropicModel):
        from runtime.models.anthropic import AnthropicMessagesModel

        return AnthropicMessagesModel(name, config, secrets, client=http_client)
    if isinstance(config, spec.GeminiModel):
        from runtime.models.gemini import GeminiModel

        return GeminiModel(name, config, secrets, client=http_client)
    raise ValueError(f"unknown provider {config.provider!r}")  # pragma: no cover
