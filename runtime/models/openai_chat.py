"""OpenAI Chat Completions, also spoken by Azure OpenAI, Ollama and OpenAI-compatible servers.

The four providers differ only in the URL, the auth header and the token-limit field, so one
class serves them all.
"""

from __future__ import annotations

from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage
from runtime.models.base import ModelRequest, ModelResponse, StopReason
from runtime.models.http import HttpModel, post_json
from runtime.spec.models import (
    AzureOpenAIModel,
    OllamaModel,
    OpenAICompatibleModel,
    OpenAIModel,
)

OpenAIConfig = OpenAIModel | AzureOpenAIModel | OllamaModel | OpenAICompatibleModel

_FINISH: dict[str, StopReason] = {"length": "max_tokens", "tool_calls": "tool_use"}


def openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions messages, the system prompt first."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, AssistantMessage):
            item: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        # the raw text when it did not parse: the model sees what it sent
                        "function": {"name": call.name, "arguments": call.arguments_json() or "{}"},
                    }
                    for call in message.tool_calls
                ]
            elif item["content"] is None:
                item["content"] = ""
            wire.append(item)
        elif isinstance(message, ToolResultMessage):
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        else:
            wire.append({"role": "user", "content": message.content})
    return wire


class OpenAIChatModel(HttpModel[OpenAIConfig]):
    """One Chat Completions call per request, for openai, azure_openai, ollama and
    openai_compatible."""

    def _endpoint(self, key: str | None) -> tuple[str, dict[str, str]]:
        config = self._config
        base = str(config.base_url).rstrip("/") if config.base_url else "https://api.openai.com/v1"
        headers: dict[str, str] = {}
        if isinstance(config, AzureOpenAIModel):
            url = (
                f"{base}/openai/deployments/{config.deployment}/chat/completions"
                f"?api-version={config.api_version}"
            )
            headers["api-key"] = key or ""
            return url, headers
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if isinstance(config, OpenAIModel) and config.organization:
            headers["OpenAI-Organization"] = config.organization
        return f"{base}/chat/completions", headers

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        body: dict[str, Any] = {
            "model": config.model_id,
            "messages": openai_messages(request.system, request.messages),
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                }
                for tool in request.tools
            ]
            if not request.allow_tools:
                body["tool_choice"] = "none"
        if config.temperature is not None:
            body["temperature"] = config.temperature
        if config.max_tokens is not None:
            limit = "max_completion_tokens" if config.provider == "openai" else "max_tokens"
            body[limit] = config.max_tokens
        return body

    async def request(self, request: ModelRequest) -> ModelResponse:
        key = self._api_key()
        url, headers = self._endpoint(key)
        provider = self._config.provider
        answer = await post_json(
            self._client,
            provider,
            url,
            headers=headers,
            body=self._body(request),
            timeout=self._config.timeout,
            secret=key,
        )
        try:
            choice = answer["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(
                f"{provider} answered without choices[0].message", provider=provider
            ) from None
        calls: list[ToolCall] = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            call_id = call.get("id") or ""  # some compatible servers send none: the engine assigns
            calls.append(
                ToolCall.from_json(call_id, function.get("name", ""), function.get("arguments"))
            )
        stop = _FINISH.get(choice.get("finish_reason") or "", "end_turn")
        if calls and stop == "end_turn":
            stop = "tool_use"  # some compatible servers say "stop" even when calling tools
        usage = answer.get("usage") or {}
        content = message.get("content")
        if isinstance(content, list):  # content parts, from some compatible servers
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return ModelResponse(
            text=content or None,
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.get("prompt_tokens") or 0,
                output_tokens=usage.get("completion_tokens") or 0,
            ),
            stop_reason=stop,
            model_id=self.model_id,
        )
