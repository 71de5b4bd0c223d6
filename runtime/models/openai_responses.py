"""OpenAI's Responses API (`POST /v1/responses`), chosen per model with `api: responses` on
`openai` and `azure_openai` models.

Why an option and not a provider: the key, base URL, organization, Azure resource and
deployment are the same settings for both APIs of the same account, and a model moves from
one API to the other by one line. Only the wire differs:

- request: `instructions` (the system prompt), `input` items (user/assistant messages,
  `function_call` and `function_call_output` items), function `tools` with their schema at
  the top level, `max_output_tokens`; `store: false` because agentfn keeps the history and
  sends it whole each turn — nothing is gained by OpenAI keeping a copy;
- answer: `output` items (`message` with `output_text` parts, `function_call` with its
  `call_id`, `reasoning` — its tokens are counted in the output usage, its content is not
  text for the user), `usage.input_tokens` / `output_tokens`, `status: incomplete` with
  `incomplete_details.reason: max_output_tokens` for a cut answer;
- stream: typed server-sent events (`response.output_text.delta`,
  `response.output_item.added`, `response.function_call_arguments.delta`,
  `response.completed` carrying the whole response, `error` / `response.failed`)
  (https://platform.openai.com/docs/api-reference/responses-streaming).

Azure serves the same API at `{resource}/openai/v1/responses` with the deployment name as
`model` (https://learn.microsoft.com/azure/ai-foundry/openai/how-to/responses).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.base import ModelRequest, ModelResponse, StopReason, assemble_response
from runtime.models.base import result_text as tool_text
from runtime.models.failures import classify_http
from runtime.models.http import HttpModel, post_json, post_stream
from runtime.models.streaming import CallBuffer, SseEvent, TextSink, event_json, unstreamed
from runtime.spec.plain import AzureOpenAIModel, OpenAIModel

ResponsesConfig = OpenAIModel | AzureOpenAIModel


def responses_input(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Responses `input` items. An assistant turn is its text (when it
    has some) then one `function_call` item per call; a tool result is a
    `function_call_output` naming the call's id (text only: a failure is said in the text)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            if message.text:
                items.append({"role": "assistant", "content": message.text})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments_json() or "{}",
                }
                for call in message.tool_calls
            )
        elif isinstance(message, ToolResultMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": tool_text(message),
                }
            )
        else:
            items.append({"role": "user", "content": message.content})
    return items


def _failure(provider: str, error: Any, status: int | None = None) -> ModelError:
    """An error reported inside a 200 answer or a stream (`error` event, `response.failed`):
    classified like an HTTP error of the same kind (quota, rate limit, bad request)."""
    error = error if isinstance(error, dict) else {"message": str(error)}
    code = str(error.get("code") or error.get("type") or "")
    message = str(error.get("message") or code or "the response failed")
    text = f"{code}: {message}" if code and code not in message else message
    if status is None:
        invalid = "invalid" in code or str(error.get("type") or "") == "invalid_request_error"
        status = 429 if "rate_limit" in code else 400 if invalid else 500
    return classify_http(provider, status, text, {}, {"error": error})


class OpenAIResponsesModel(HttpModel[ResponsesConfig]):
    """One Responses call per request, for openai and azure_openai models with
    `api: responses`."""

    def _endpoint(self, key: str | None) -> tuple[str, dict[str, str]]:
        config = self._config
        if isinstance(config, AzureOpenAIModel):
            return f"{str(config.base_url).rstrip('/')}/openai/v1/responses", {"api-key": key or ""}
        base = str(config.base_url).rstrip("/") if config.base_url else "https://api.openai.com/v1"
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if config.organization:
            headers["OpenAI-Organization"] = config.organization
        return f"{base}/responses", headers

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        model = config.deployment if isinstance(config, AzureOpenAIModel) else config.model_id
        body: dict[str, Any] = {
            "model": model,
            "input": responses_input(request.messages),
            "store": False,
        }
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                }
                for tool in request.tools
            ]
            if not request.allow_tools:
                body["tool_choice"] = "none"
        if config.temperature is not None:
            body["temperature"] = config.temperature
        if config.max_tokens is not None:
            body["max_output_tokens"] = config.max_tokens
        return body

    async def request(self, request: ModelRequest) -> ModelResponse:
        key = self._api_key()
        url, headers = self._endpoint(key)
        body = self._body(request)
        where: dict[str, Any] = {"headers": headers, "timeout": self._config.timeout, "secret": key}
        provider = self._config.provider
        if request.on_text is None or not self._config.stream:
            return self._parse(await post_json(self._client, provider, url, body=body, **where))
        body["stream"] = True
        stream = post_stream(self._client, provider, url, body=body, **where)
        return await self._read_stream(stream, request.on_text)

    async def _read_stream(
        self, events: AsyncIterator[SseEvent | dict[str, Any]], sink: TextSink
    ) -> ModelResponse:
        """Text deltas go to `sink` as they come; function calls are keyed by their
        `output_index`. `response.completed` (or `.incomplete`) carries the whole response,
        which is the answer; the deltas are the answer only if it came without output."""
        provider = self._config.provider
        texts: list[str] = []
        calls = CallBuffer()
        final: dict[str, Any] | None = None
        async for item in events:
            if isinstance(item, dict):  # the server did not stream
                return unstreamed(self._parse(item), sink)
            event = event_json(item, provider)
            kind = str(event.get("type") or item.event)
            if kind == "response.output_text.delta":
                texts.append(str(event.get("delta") or ""))
                sink(texts[-1])
            elif kind in ("response.output_item.added", "response.output_item.done"):
                call = event.get("item") or {}
                if call.get("type") == "function_call":
                    index = int(event.get("output_index") or 0)
                    calls.start(index, call.get("call_id") or "", call.get("name") or "")
                    partial = calls.calls[index]
                    if kind.endswith(".done") and call.get("arguments"):
                        partial.arguments = call["arguments"]
            elif kind == "response.function_call_arguments.delta":
                calls.extend(int(event.get("output_index") or 0), str(event.get("delta") or ""))
            elif kind == "error":
                raise _failure(provider, event.get("error") or event)
            elif kind == "response.failed":
                raise _failure(provider, (event.get("response") or {}).get("error") or event)
            elif kind in ("response.completed", "response.incomplete"):
                final = event.get("response") or {}
        if final is None:
            raise _failure(provider, {"message": "the stream ended before response.completed"})
        if final.get("output"):
            return self._parse(final)
        stop = self._stop(final, bool(calls.calls))
        usage = final.get("usage") or {}
        return assemble_response(
            ["".join(texts)],
            calls.finished(),
            stop,
            usage.get("input_tokens") or 0,
            usage.get("output_tokens") or 0,
            self.model_id,
        )

    @staticmethod
    def _stop(answer: dict[str, Any], has_calls: bool) -> StopReason:
        details = answer.get("incomplete_details") or {}
        if answer.get("status") == "incomplete" and details.get("reason") == "max_output_tokens":
            return "max_tokens"
        return "tool_use" if has_calls else "end_turn"

    def _parse(self, answer: dict[str, Any]) -> ModelResponse:
        provider = self._config.provider
        if answer.get("status") == "failed" or answer.get("error"):
            raise _failure(provider, answer.get("error") or {"message": "the response failed"})
        output = answer.get("output")
        if not isinstance(output, list):
            raise ModelError(f"{provider} answered without an `output` list", provider=provider)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for item in output:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message":
                for part in item.get("content") or []:
                    if part.get("type") == "output_text":
                        texts.append(str(part.get("text") or ""))
                    elif part.get("type") == "refusal":
                        texts.append(str(part.get("refusal") or ""))
            elif kind == "function_call":
                calls.append(
                    ToolCall.from_json(
                        item.get("call_id") or item.get("id") or "",
                        item.get("name") or "",
                        item.get("arguments"),
                    )
                )
            # reasoning items: their tokens are in usage.output_tokens; not user-facing text
        usage = answer.get("usage") or {}
        return assemble_response(
            texts,
            calls,
            self._stop(answer, bool(calls)),
            usage.get("input_tokens") or 0,
            usage.get("output_tokens") or 0,
            self.model_id,
        )
