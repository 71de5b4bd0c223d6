"""Google Gemini `generateContent` (Generative Language API) over plain HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.anthropic import merge_turns
from runtime.models.base import ModelRequest, ModelResponse, StopReason, images_of, wire_usage
from runtime.models.failures import classify_http
from runtime.models.gemini_schema import gemini_parameters
from runtime.models.http import HttpModel, post_json, post_stream
from runtime.models.streaming import SseEvent, TextSink, event_json, unstreamed
from runtime.spec.models import GeminiModel as GeminiConfig
from runtime.structs import replace

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: The documented stand-in for a thought signature the history does not have: function
#: calls another model made (a fallback of another provider, an earlier model of the
#: session). Gemini 3 answers 400 when the first function call of a step comes back
#: without one. https://ai.google.dev/gemini-api/docs/thought-signatures (FAQ: "How do I
#: transfer history from a different model…": "context_engineering_is_the_way_to_go" or
#: "skip_thought_signature_validator").
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"
#: Images a Gemini 3 `functionResponse` may carry as `parts` (inline data), per
#: https://ai.google.dev/gemini-api/docs/function-calling#multimodal-function-responses
FUNCTION_RESPONSE_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp"})


def gemini_generation(model_id: str) -> int | None:
    """The Gemini generation of a model id (`gemini-3-pro-preview` → 3), None when the id
    does not say (an alias such as `gemini-flash-latest`)."""
    match = re.search(r"gemini-(\d+)", model_id)
    return int(match.group(1)) if match else None


def _call_part(call: ToolCall, first_of_step: bool, placeholder: bool) -> dict[str, Any]:
    """A function call part with its id and its thought signature: Gemini's own when it gave
    one, else (first call of a step only, as Gemini itself signs) the placeholder."""
    part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments or {}}}
    if call.id:
        part["functionCall"]["id"] = call.id
    signature = (call.provider_data or {}).get("thoughtSignature")
    if signature:
        part["thoughtSignature"] = signature
    elif first_of_step and placeholder:
        part["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return part


def _response_part(message: ToolResultMessage, with_images: bool) -> dict[str, Any]:
    """A `functionResponse` part: the result under `output`, or under `error` for a failed
    call ("if the function call failed to execute, the response can have an "error" key",
    https://ai.google.dev/api/caching#FunctionResponse), its id echoed, and on Gemini 3 the
    images as inline data parts."""
    key = "output" if message.success else "error"
    response: dict[str, Any] = {"name": message.tool_name, "response": {key: message.content}}
    if message.tool_call_id:
        response["id"] = message.tool_call_id
    images = images_of(message, FUNCTION_RESPONSE_IMAGES) if with_images else []
    if images:
        response["parts"] = [
            {"inlineData": {"mimeType": image.mime_type, "data": image.data}} for image in images
        ]
    return {"functionResponse": response}


def gemini_contents(messages: list[Message], model_id: str = "") -> list[dict[str, Any]]:
    """Neutral messages as `contents`: roles user/model, tool results as user
    `functionResponse` parts, consecutive turns of one role merged. Placeholder signatures
    and images in results depend on the model's generation (3 and later; an unknown alias
    gets the placeholder, which older models do not check)."""
    version = gemini_generation(model_id)
    placeholder = version is None or version >= 3
    with_images = version is not None and version >= 3
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
            parts += [
                _call_part(call, index == 0, placeholder)
                for index, call in enumerate(message.tool_calls)
            ]
            turns.append(("model", parts))
        elif isinstance(message, ToolResultMessage):
            turns.append(("user", [_response_part(message, with_images)]))
        else:
            turns.append(("user", [{"text": message.content}]))
    return merge_turns(turns, key="parts")


class GeminiModel(HttpModel[GeminiConfig]):
    """One POST models/{model}:generateContent per request."""

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        body: dict[str, Any] = {"contents": gemini_contents(request.messages, config.model_id)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            declarations = [
                {
                    "name": t.name,
                    "description": t.description,
                    "parametersJsonSchema": gemini_parameters(t.input_schema),
                }
                for t in request.tools
            ]
            body["tools"] = [{"functionDeclarations": declarations}]
            if not request.allow_tools:
                body["toolConfig"] = {"functionCallingConfig": {"mode": "NONE"}}
        generation: dict[str, Any] = {}
        if config.temperature is not None:
            generation["temperature"] = config.temperature
        if config.max_tokens is not None:
            generation["maxOutputTokens"] = config.max_tokens
        if generation:
            body["generationConfig"] = generation
        return body

    async def request(self, request: ModelRequest) -> ModelResponse:
        key = self._api_key() or ""
        base = str(self._config.base_url or DEFAULT_BASE_URL).rstrip("/")
        model = self._config.model_id.removeprefix("models/")
        where: dict[str, Any] = {
            "headers": {"x-goog-api-key": key},
            "body": self._body(request),
            "timeout": self._config.timeout,
            "secret": key,
        }
        if request.on_text is None or not self._config.stream:
            url = f"{base}/v1beta/models/{model}:generateContent"
            return self._parse(await post_json(self._client, "gemini", url, **where))
        url = f"{base}/v1beta/models/{model}:streamGenerateContent?alt=sse"
        return await self._read_stream(
            post_stream(self._client, "gemini", url, **where), request.on_text
        )

    async def _read_stream(
        self, events: AsyncIterator[SseEvent | dict[str, Any]], sink: TextSink
    ) -> ModelResponse:
        """`streamGenerateContent?alt=sse`: each event is a GenerateContentResponse holding
        the next parts (text pieces; a function call whole, with its signature), the last one
        the finish reason and the usage. The parts, in order, are the one-shot answer's."""
        parts: list[dict[str, Any]] = []
        last: dict[str, Any] = {}
        candidate: dict[str, Any] = {}
        async for item in events:
            if isinstance(item, dict):  # the server did not stream
                return unstreamed(self._parse(item), sink)
            chunk = event_json(item, "gemini")
            if isinstance(chunk.get("error"), dict):
                error = chunk["error"]
                status = int(error.get("code") or 500)
                message = f"{error.get('status', '')}: {error.get('message', '')}"
                raise classify_http("gemini", status, message, {}, chunk)
            last = chunk
            for found in chunk.get("candidates") or []:
                if found.get("index", 0) != 0:
                    continue
                candidate = {**candidate, **{k: v for k, v in found.items() if k != "content"}}
                for part in (found.get("content") or {}).get("parts") or []:
                    parts.append(part)
                    if part.get("text") and not part.get("thought"):
                        sink(part["text"])
        merged = {
            **last,
            "candidates": [{**candidate, "content": {"role": "model", "parts": parts}}],
        }
        if not parts and not candidate:
            merged["candidates"] = []
        return self._parse(merged)

    def _parse(self, answer: dict[str, Any]) -> ModelResponse:
        candidates = answer.get("candidates") or []
        if not candidates:
            reason = (answer.get("promptFeedback") or {}).get("blockReason", "no candidates")
            raise ModelError(f"gemini returned no answer: {reason}", provider="gemini")
        candidate = candidates[0]
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in (candidate.get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"]
                call_id = call.get("id") or part.get("id") or ""  # "": the engine assigns one
                parsed = ToolCall.from_json(call_id, call.get("name", ""), call.get("args"))
                if part.get("thoughtSignature"):  # Gemini 3 wants it back on the next turn
                    data = {"thoughtSignature": part["thoughtSignature"]}
                    parsed = replace(parsed, provider_data=data)
                calls.append(parsed)
            elif "text" in part and not part.get("thought"):  # thought summaries are not answers
                texts.append(part["text"])
        finish = candidate.get("finishReason")
        stop: StopReason = (
            "max_tokens" if finish == "MAX_TOKENS" else "tool_use" if calls else "end_turn"
        )
        usage = answer.get("usageMetadata") or {}
        counted = wire_usage(
            self.model_id,
            usage.get("promptTokenCount") or 0,
            usage.get("candidatesTokenCount") or 0,
        )
        thoughts = wire_usage(self.model_id, 0, usage.get("thoughtsTokenCount") or 0)
        return ModelResponse(
            text="".join(texts) or None,
            tool_calls=calls,
            usage=counted + thoughts,  # thinking tokens are billed as output too
            stop_reason=stop,
            model_id=self.model_id,
        )
