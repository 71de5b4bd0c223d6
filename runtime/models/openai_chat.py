"""OpenAI Chat Completions, also spoken by Azure OpenAI, Ollama and OpenAI-compatible servers.

The four providers differ only in the URL, the auth header and the token-limit field, so one
class serves them all. `post_json` (the HTTP call and its error mapping) lives here too and
is shared with the Anthropic and Gemini providers, so every HTTP provider fails the same way.
"""

from __future__ import annotations

from typing import Any

import httpx

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage
from runtime.models.base import (
    ModelRequest,
    ModelResponse,
    SecretResolver,
    StopReason,
    error_for_status,
)
from runtime.spec.models import (
    AzureOpenAIModel,
    OllamaModel,
    OpenAICompatibleModel,
    OpenAIModel,
)

OpenAIConfig = OpenAIModel | AzureOpenAIModel | OllamaModel | OpenAICompatibleModel

_FINISH: dict[str, StopReason] = {"length": "max_tokens", "tool_calls": "tool_use"}


def scrub(text: str, secret: str | None) -> str:
    """`text` with the secret blanked, for servers that echo a bad key back."""
    return text.replace(secret, "***") if secret else text


def error_message(response: httpx.Response) -> str:
    """The human part of an error body: `{"error": {"message", "type"|"status"}}` in all the
    providers' dialects (Gemini sometimes wraps it in a list), else the raw text."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        kind = error.get("type") or error.get("status") or error.get("code")
        return f"{kind}: {message}" if kind and message else message or str(kind or "")
    return response.text[:500] or response.reason_phrase


async def post_json(
    client: httpx.AsyncClient | None,
    provider: str,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    timeout: float,
    secret: str | None = None,
) -> dict[str, Any]:
    """POST `body` and return the JSON answer; every failure becomes a ModelError (transient
    when retrying can help), with `secret` scrubbed from its text."""
    try:
        if client is None:
            async with httpx.AsyncClient(timeout=timeout) as own:
                response = await own.post(url, json=body, headers=headers, timeout=timeout)
        else:
            response = await client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TransportError as exc:
        text = scrub(f"{provider} request failed: {type(exc).__name__}: {exc}", secret)
        raise TransientModelError(text, provider=provider) from exc
    status = response.status_code
    if not response.is_success:
        raise error_for_status(
            provider, status, scrub(error_message(response), secret), response.headers
        )
    try:
        answer = response.json()
    except ValueError:
        snippet = scrub(response.text[:200], secret)
        raise ModelError(
            f"{provider} answered HTTP {status} with invalid JSON: {snippet!r}",
            status=status,
            provider=provider,
        ) from None
    if not isinstance(answer, dict):
        raise ModelError(
            f"{provider} answered with a JSON {type(answer).__name__}, not an object",
            provider=provider,
        )
    return answer


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


class OpenAIChatModel:
    """One Chat Completions call per request, for openai, azure_openai, ollama and
    openai_compatible."""

    def __init__(
        self,
        name: str,
        config: OpenAIConfig,
        secrets: SecretResolver,
        client: httpx.AsyncClient | None = None,
    ):
        self.name = name
        self.model_id = config.model_id
        self._config = config
        self._secrets = secrets
        self._client = client
        self._key: str | None = None

    def _api_key(self) -> str | None:
        """Resolved on first use, so a fallback that never runs never reads its secret."""
        if self._key is None and self._config.api_key:
            self._key = self._secrets(self._config.api_key)
        return self._key

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
        for i, call in enumerate(message.get("tool_calls") or [], start=1):
            function = call.get("function") or {}
            call_id = call.get("id") or f"call-{request.call_number + 1}-{i}"
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
