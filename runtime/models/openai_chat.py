"""OpenAI Chat Completions, also spoken by Azure OpenAI, Ollama, OpenAI-compatible servers and
Vercel AI Gateway.

The five providers differ only in the URL, the auth header and the token-limit field, so one
class serves them all (`ai_gateway` is `openai_compatible` with the gateway's base URL by
default and a required key).

The token limit: OpenAI's and Azure's reasoning models (o1, o3, o4-mini, gpt-5…) reject
`max_tokens` ("Unsupported parameter: 'max_tokens' is not supported with this model. Use
'max_completion_tokens' instead."), which OpenAI deprecated for every model in favour of
`max_completion_tokens`; Azure's non-reasoning deployments, older Azure API versions, Ollama
and most compatible servers only know `max_tokens`. So openai sends max_completion_tokens,
azure_openai chooses by the model id, the others send max_tokens; the spec's
`max_tokens_field` overrides the choice, and without it a rejection naming the field
switches to the other one (once, remembered for the model). Azure: "o1 series models will
only work with the max_completion_tokens parameter", and need API version
2024-12-01-preview or later (https://learn.microsoft.com/azure/ai-services/openai/how-to/reasoning).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.base import (
    ModelRequest,
    ModelResponse,
    StopReason,
    assemble_response,
    result_text,
)
from runtime.models.failures import classify_http
from runtime.models.http import HttpModel, post_json, post_stream
from runtime.models.streaming import CallBuffer, SseEvent, TextSink, event_json, unstreamed
from runtime.spec.plain import (
    AiGatewayModel,
    AzureOpenAIModel,
    OllamaModel,
    OpenAICompatibleModel,
    OpenAIModel,
)

OpenAIConfig = OpenAIModel | AzureOpenAIModel | OllamaModel | OpenAICompatibleModel | AiGatewayModel

_FINISH: dict[str, StopReason] = {"length": "max_tokens", "tool_calls": "tool_use"}
#: OpenAI reasoning model ids, bare or behind a deployment/provider prefix: o1, o3-mini,
#: o4-mini, gpt-5, gpt-5.1-chat, codex-mini…
_REASONING = re.compile(r"(^|[/:])(o\d+(-|$)|gpt-5|codex-mini)", re.IGNORECASE)
_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")


def limit_field(config: OpenAIConfig) -> str:
    """The request field that carries the token limit for this model (see the module)."""
    if config.max_tokens_field:
        return config.max_tokens_field
    if config.provider == "openai":
        return "max_completion_tokens"
    if isinstance(config, AzureOpenAIModel) and (
        _REASONING.search(config.model_id) or _REASONING.search(config.deployment)
    ):
        return "max_completion_tokens"
    return "max_tokens"


def _rejected_field(message: str, field: str) -> bool:
    """Whether an error says this token-limit field is not accepted: OpenAI/Azure
    "Unsupported parameter: 'max_tokens' …", older Azure versions "Unrecognized request
    argument supplied: max_completion_tokens", compatible servers "… 'max_completion_tokens'
    … not supported"."""
    lowered = message.lower()
    if field not in lowered or not re.search(r"unsupported|unrecognized|not supported", lowered):
        return False
    other = next(f for f in _LIMIT_FIELDS if f != field)
    # OpenAI names both ("… Use 'max_completion_tokens' instead."): the rejected one first
    return other not in lowered or lowered.index(field) < lowered.index(other)


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
            # tool messages take text only: images are described by the text; a failure
            # (an MCP isError result too) is said in the text, there is no error flag
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": result_text(message),
                }
            )
        else:
            wire.append({"role": "user", "content": message.content})
    return wire


class OpenAIChatModel(HttpModel[OpenAIConfig]):
    """One Chat Completions call per request, for openai, azure_openai, ollama,
    openai_compatible and ai_gateway."""

    _limit: str | None = None  # the token-limit field, once a rejection has decided it
    _usage_option = True  # stream_options.include_usage, until a server rejects it

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

    def _body(self, request: ModelRequest, limit: str) -> dict[str, Any]:
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
            body[limit] = config.max_tokens
        return body

    async def _ask(self, request: ModelRequest, limit: str) -> ModelResponse:
        key = self._api_key()
        url, headers = self._endpoint(key)
        body = self._body(request, limit)
        where: dict[str, Any] = {"headers": headers, "timeout": self._config.timeout, "secret": key}
        if request.on_text is None or not self._config.stream:
            answer = await post_json(self._client, self._config.provider, url, body=body, **where)
            return self._parse(answer)
        body["stream"] = True
        while True:
            if self._usage_option:
                body["stream_options"] = {"include_usage": True}  # usage in a last chunk
            try:
                return await self._read_stream(
                    post_stream(self._client, self._config.provider, url, body=body, **where),
                    request.on_text,
                )
            except ModelError as exc:
                # Older Azure API versions and some compatible servers reject the option
                # ("Unrecognized request argument supplied: stream_options"): stream without
                # it (no usage then, as those servers give none), decided once per model.
                if exc.status != 400 or "stream_options" not in str(exc) or not self._usage_option:
                    raise
                self._usage_option = False
                del body["stream_options"]

    async def _read_stream(
        self, events: AsyncIterator[SseEvent | dict[str, Any]], sink: TextSink
    ) -> ModelResponse:
        """Chat Completions chunks: `choices[0].delta` holds text and tool call fragments
        (by `index`: id and name first, then the arguments' text), `finish_reason` comes on
        the last, usage in a chunk of its own with no choices; `[DONE]` ends it."""
        provider = self._config.provider
        texts: list[str] = []
        calls = CallBuffer()
        finish, usage = None, None
        async for item in events:
            if isinstance(item, dict):  # the server did not stream
                return unstreamed(self._parse(item), sink)
            if item.data.strip() == "[DONE]":
                break
            chunk = event_json(item, provider)
            if isinstance(chunk.get("error"), dict):  # an error after the stream began
                error = chunk["error"]
                raise classify_http(provider, 500, str(error.get("message") or error), {}, chunk)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    texts.append(delta["content"])
                    sink(delta["content"])
                for call in delta.get("tool_calls") or []:
                    key, function = call.get("index", 0), call.get("function") or {}
                    calls.start(key, call.get("id") or "", function.get("name") or "")
                    if function.get("arguments"):
                        calls.extend(key, function["arguments"])
                finish = choice.get("finish_reason") or finish
        return self._response("".join(texts) or None, calls.finished(), finish, usage or {})

    async def request(self, request: ModelRequest) -> ModelResponse:
        config = self._config
        limit = self._limit or limit_field(config)
        try:
            return await self._ask(request, limit)
        except ModelError as exc:
            if (
                config.max_tokens is None
                or config.max_tokens_field is not None
                or self._limit is not None
                or exc.status != 400
                or not _rejected_field(str(exc), limit)
            ):
                raise
            self._limit = next(f for f in _LIMIT_FIELDS if f != limit)
            return await self._ask(request, self._limit)

    def _parse(self, answer: dict[str, Any]) -> ModelResponse:
        provider = self._config.provider
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
        content = message.get("content")
        if isinstance(content, list):  # content parts, from some compatible servers
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return self._response(
            content or None, calls, choice.get("finish_reason"), answer.get("usage") or {}
        )

    def _response(
        self, text: str | None, calls: list[ToolCall], finish: str | None, usage: dict[str, Any]
    ) -> ModelResponse:
        stop = _FINISH.get(finish or "", "end_turn")
        inputs, outputs = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
        return assemble_response([text or ""], calls, stop, inputs, outputs, self.model_id)
