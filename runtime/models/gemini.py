"""Google Gemini `generateContent` (Generative Language API) over plain HTTP."""

from __future__ import annotations

from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage
from runtime.models.anthropic import merge_turns
from runtime.models.base import ModelRequest, ModelResponse, StopReason
from runtime.models.http import HttpModel, post_json
from runtime.spec.models import GeminiModel as GeminiConfig

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


def _call_part(call: ToolCall) -> dict[str, Any]:
    """A function call part; its thought signature (if Gemini gave one) goes back with it."""
    part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments or {}}}
    signature = (call.provider_data or {}).get("thoughtSignature")
    if signature:
        part["thoughtSignature"] = signature
    return part


def gemini_contents(messages: list[Message]) -> list[dict[str, Any]]:
    """Neutral messages as `contents`: roles user/model, tool results as user
    `functionResponse` parts, consecutive turns of one role merged."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
            parts += [_call_part(call) for call in message.tool_calls]
            turns.append(("model", parts))
        elif isinstance(message, ToolResultMessage):
            response = {"content": message.content, "success": message.success}
            turns.append(
                ("user", [{"functionResponse": {"name": message.tool_name, "response": response}}])
            )
        else:
            turns.append(("user", [{"text": message.content}]))
    return merge_turns(turns, key="parts")


class GeminiModel(HttpModel[GeminiConfig]):
    """One POST models/{model}:generateContent per request."""

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        body: dict[str, Any] = {"contents": gemini_contents(request.messages)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            declarations = [
                {"name": t.name, "description": t.description, "parameters": t.input_schema}
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
        answer = await post_json(
            self._client,
            "gemini",
            f"{base}/v1beta/models/{model}:generateContent",
            headers={"x-goog-api-key": key},
            body=self._body(request),
            timeout=self._config.timeout,
            secret=key,
        )
        return self._parse(answer)

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
                    parsed = parsed.model_copy(update={"provider_data": data})
                calls.append(parsed)
            elif "text" in part and not part.get("thought"):  # thought summaries are not answers
                texts.append(part["text"])
        finish = candidate.get("finishReason")
        stop: StopReason = (
            "max_tokens" if finish == "MAX_TOKENS" else "tool_use" if calls else "end_turn"
        )
        usage = answer.get("usageMetadata") or {}
        return ModelResponse(
            text="".join(texts) or None,
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.get("promptTokenCount") or 0,
                # thinking tokens are billed as output too
                output_tokens=(usage.get("candidatesTokenCount") or 0)
                + (usage.get("thoughtsTokenCount") or 0),
            ),
            stop_reason=stop,
            model_id=self.model_id,
        )
