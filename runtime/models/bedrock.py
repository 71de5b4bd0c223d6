"""Amazon Bedrock through the Converse API: one request shape for every Bedrock model.

boto3 is imported only when a client has to be built, and botocore's own retries are off:
retries and backoff belong to `runtime.models.retry`, which would otherwise multiply them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.base import ModelRequest, ModelResponse, StopReason, assemble_response
from runtime.spec.models import BedrockModel

#: Error codes worth retrying; everything else (ValidationException, AccessDeniedException,
#: ResourceNotFoundException, ...) is the caller's problem and fails at once.
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)
_STOP: dict[str, StopReason] = {"tool_use": "tool_use", "max_tokens": "max_tokens"}


def converse_messages(messages: list[Message], tools_as_text: bool = False) -> list[dict[str, Any]]:
    """Neutral messages as Converse messages. Consecutive messages of one role are merged
    (Converse requires alternation); this mirrors `anthropic.merge_turns` but is kept here
    so the Bedrock path never imports httpx.

    Converse has no "no tools" choice and rejects tool blocks without a toolConfig, so on a
    final turn (`tools_as_text`) earlier tool calls and results are given as plain text."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            role = "assistant"
            blocks: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
            if tools_as_text:
                blocks += [
                    {"text": f"[called tool {c.name} with {c.arguments_json()}]"}
                    for c in message.tool_calls
                ]
            else:
                blocks += [
                    {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments or {}}}
                    for c in message.tool_calls
                ]
        elif isinstance(message, ToolResultMessage) and tools_as_text:
            role = "user"
            state = "" if message.success else " (failed)"
            blocks = [{"text": f"[result of tool {message.tool_name}{state}: {message.content}]"}]
        elif isinstance(message, ToolResultMessage):
            role = "user"
            result = {
                "toolUseId": message.tool_call_id,
                "content": [{"text": message.content}],
                "status": "success" if message.success else "error",
            }
            blocks = [{"toolResult": result}]
        else:
            role, blocks = "user", [{"text": message.content}]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    return merged


class BedrockConverseModel:
    """One `converse` call per request, run in a worker thread because boto3 blocks."""

    def __init__(self, name: str, config: BedrockModel, client: Any = None):
        self.name = name
        self.model_id = config.model_id
        self._config = config
        self._client = client

    def _bedrock(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "bedrock-runtime",
                region_name=self._config.region,
                config=Config(
                    read_timeout=self._config.timeout,
                    retries={"total_max_attempts": 1},
                ),
            )
        return self._client

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        params: dict[str, Any] = {
            "modelId": config.model_id,
            "messages": converse_messages(request.messages, tools_as_text=not request.allow_tools),
        }
        if request.system:
            params["system"] = [{"text": request.system}]
        inference: dict[str, Any] = {}
        if config.max_tokens is not None:
            inference["maxTokens"] = config.max_tokens
        if config.temperature is not None:
            inference["temperature"] = config.temperature
        if inference:
            params["inferenceConfig"] = inference
        if request.tools and request.allow_tools:
            specs = [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.input_schema},
                    }
                }
                for t in request.tools
            ]
            params["toolConfig"] = {"tools": specs}
        return params

    async def request(self, request: ModelRequest) -> ModelResponse:
        from botocore.exceptions import ClientError, HTTPClientError
        from botocore.exceptions import ConnectionError as BotoConnectionError

        client = self._bedrock()
        try:
            answer = await asyncio.to_thread(client.converse, **self._params(request))
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "Unknown")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            text = f"bedrock {code}: {error.get('Message', '')}"
            if code in TRANSIENT_CODES:
                raise TransientModelError(text, status=status, provider="bedrock") from exc
            raise ModelError(text, status=status, provider="bedrock") from exc
        except (BotoConnectionError, HTTPClientError) as exc:  # endpoint unreachable, read timeout
            raise TransientModelError(f"bedrock request failed: {exc}", provider="bedrock") from exc
        return self._parse(answer)

    def _parse(self, answer: dict[str, Any]) -> ModelResponse:
        content = ((answer.get("output") or {}).get("message") or {}).get("content") or []
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            if "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block:
                use = block["toolUse"]
                calls.append(
                    ToolCall.from_json(
                        use.get("toolUseId", ""), use.get("name", ""), use.get("input")
                    )
                )
        # end_turn, stop_sequence, guardrail_intervened, content_filtered: the model stopped
        stop = _STOP.get(answer.get("stopReason") or "", "end_turn")
        usage = answer.get("usage") or {}
        return assemble_response(
            texts,
            calls,
            stop,
            usage.get("inputTokens") or 0,
            usage.get("outputTokens") or 0,
            self.model_id,
        )
