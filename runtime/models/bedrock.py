"""Amazon Bedrock through the Converse API: one request shape for every Bedrock model.

boto3 is imported only when a client has to be built, and botocore's own retries are off:
retries and backoff belong to `runtime.models.retry`, which would otherwise multiply them.
"""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any

from runtime.errors import ModelError, TransientModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.base import (
    ModelRequest,
    ModelResponse,
    StopReason,
    assemble_response,
    images_of,
    result_text,
)
from runtime.models.failures import (
    context_error,
    exhausted_quota,
    quota_error,
    says_busy,
    says_context_overflow,
    says_tools_unsupported,
    tools_error,
)
from runtime.models.streaming import TextSink
from runtime.spec.plain import BedrockModel

#: Codes a busy-sounding message never turns into a retry (the caller must act).
_NEVER_BUSY_CODES = frozenset(
    {"AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException"}
)
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
#: Models that take `toolResult.status` and image blocks in tool results: "This field is
#: only supported by Amazon Nova and Anthropic Claude 3 and 4 models" (the Converse API's
#: ToolResultBlock.status and ToolResultContentBlock.image). Others reject the field, so
#: an unknown id (an inference profile ARN) is sent neither and reads errors in the text.
_RICH_TOOL_RESULTS = re.compile(r"anthropic\.|claude|amazon\.nova|\bnova-", re.IGNORECASE)
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def rich_tool_results(model_id: str) -> bool:
    return bool(_RICH_TOOL_RESULTS.search(model_id))


def tool_result(message: ToolResultMessage, rich: bool) -> dict[str, Any]:
    """A `toolResult` block. Converse rejects blank text (and an error result without
    content), so an empty result says so; `rich` models get `status` and the images."""
    if not rich:
        return {
            "toolUseId": message.tool_call_id,
            "content": [{"text": result_text(message) or "(no output)"}],
        }
    content: list[dict[str, Any]] = [{"text": message.content or "(no output)"}]
    for image in images_of(message, frozenset(IMAGE_FORMATS)):
        try:
            data = base64.b64decode(image.data, validate=True)
        except ValueError:  # not base64: the text still describes it
            continue
        content.append(
            {"image": {"format": IMAGE_FORMATS[image.mime_type.lower()], "source": {"bytes": data}}}
        )
    return {
        "toolUseId": message.tool_call_id,
        "content": content,
        "status": "success" if message.success else "error",
    }


def converse_messages(
    messages: list[Message], tools_as_text: bool = False, model_id: str = ""
) -> list[dict[str, Any]]:
    """Neutral messages as Converse messages. Consecutive messages of one role are merged
    (Converse requires alternation); this mirrors `anthropic.merge_turns` but is kept here
    so the Bedrock path never imports httpx.

    Converse has no "no tools" choice and rejects tool blocks without a toolConfig, so on a
    final turn (`tools_as_text`) earlier tool calls and results are given as plain text."""
    rich = rich_tool_results(model_id)
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
            blocks = [{"toolResult": tool_result(message, rich)}]
        else:
            role, blocks = "user", [{"text": message.content}]
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    return merged


class ModelNotConfigured(ModelError):
    """The model cannot be called from here as configured (no credentials, no region): no
    retry or fallback attempt can help until the user provides them."""

    error_code = "MODEL_NOT_CONFIGURED"


def _credential_errors() -> tuple[type[Exception], ...]:
    from botocore import exceptions as e

    return (
        e.NoCredentialsError,
        e.PartialCredentialsError,
        e.CredentialRetrievalError,
        e.TokenRetrievalError,
        e.SSOError,
        e.UnauthorizedSSOTokenError,
        e.NoAuthTokenError,
    )


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
            "messages": converse_messages(
                request.messages, tools_as_text=not request.allow_tools, model_id=config.model_id
            ),
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
        from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
        from botocore.exceptions import ConnectionError as BotoConnectionError

        try:
            client = self._bedrock()
        except BotoCoreError as exc:  # no region, an unknown profile
            raise self._unconfigured(exc) from None
        sink = request.on_text if self._config.stream else None
        try:
            if sink is None:
                answer = await asyncio.to_thread(client.converse, **self._params(request))
            else:  # the stream is read where it blocks: in the worker thread
                answer = await asyncio.to_thread(self._converse_stream, request, sink)
        except ClientError as exc:  # an EventStreamError (an error midway) is one too
            raise _mapped(exc) from exc
        except (BotoConnectionError, HTTPClientError) as exc:  # endpoint unreachable, read timeout
            raise TransientModelError(f"bedrock request failed: {exc}", provider="bedrock") from exc
        except _credential_errors() as exc:  # found no credentials, or could not refresh them
            raise self._unconfigured(exc) from None
        return self._parse(answer)

    def _unconfigured(self, exc: Exception) -> ModelError:
        """What is missing to call Bedrock, and how to provide it (not a fault of agentfn)."""
        from botocore.exceptions import NoRegionError, ProfileNotFound

        where = f"model {self.name!r} (Bedrock {self.model_id})"
        if isinstance(exc, NoRegionError):
            how = (
                "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or `region:` on the "
                "model in agents.yaml"
            )
        elif isinstance(exc, ProfileNotFound):
            how = f"{exc}: set AWS_PROFILE to a profile in ~/.aws/config (`aws configure`)"
        else:
            how = (
                f"no usable AWS credentials ({type(exc).__name__}): set AWS_PROFILE to a "
                "configured profile (`aws configure`, or `aws sso login --profile NAME`), or "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        return ModelNotConfigured(f"{where} cannot be called: {how}", provider="bedrock")

    def _converse_stream(self, request: ModelRequest, sink: TextSink) -> dict[str, Any]:
        """ConverseStream's events gathered into the answer `converse` gives: per content
        block a start (a toolUse names its id and tool), deltas (text, or the input's JSON in
        pieces) and a stop; `messageStop` (stop reason); `metadata` (usage)."""
        answer = self._bedrock().converse_stream(**self._params(request))
        blocks: dict[int, dict[str, Any]] = {}
        inputs: dict[int, str] = {}
        result: dict[str, Any] = {}
        for event in answer["stream"]:
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                use = (start.get("start") or {}).get("toolUse")
                if use:
                    index = start.get("contentBlockIndex", 0)
                    named = {"toolUseId": use.get("toolUseId", ""), "name": use.get("name", "")}
                    blocks[index] = {"toolUse": named}
            elif "contentBlockDelta" in event:
                piece = event["contentBlockDelta"]
                index, delta = piece.get("contentBlockIndex", 0), piece.get("delta") or {}
                if "text" in delta:
                    block = blocks.setdefault(index, {"text": ""})
                    block["text"] = block.get("text", "") + delta["text"]
                    if delta["text"]:
                        sink(delta["text"])
                elif "toolUse" in delta:
                    inputs[index] = inputs.get(index, "") + (delta["toolUse"].get("input") or "")
            elif "messageStop" in event:
                result["stopReason"] = event["messageStop"].get("stopReason")
            elif "metadata" in event:
                result["usage"] = event["metadata"].get("usage") or {}
        for index, text in inputs.items():  # parsed as the one-shot input is (_parse)
            blocks.setdefault(index, {"toolUse": {}})["toolUse"]["input"] = text
        content = [blocks[i] for i in sorted(blocks)]
        return {**result, "output": {"message": {"role": "assistant", "content": content}}}

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


def _mapped(exc: Any) -> ModelError:
    """A botocore ClientError as agentfn's error: quota, context, tools, transient or not.
    Stream errors name their code in camel case (`throttlingException`)."""
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    code = code[:1].upper() + code[1:]
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    message = str(error.get("Message", ""))
    text = f"bedrock {code}: {message}"
    reason = exhausted_quota(status, None, message)
    if code == "ThrottlingException" and "per day" in message.lower():
        # "Too many tokens per day, please wait before trying again." (a new account's
        # daily quota; e.g. minorun365/agent-book#29): hours, not seconds
        reason = "daily quota"
    if reason:
        return quota_error("bedrock", status, reason, text)
    if code == "ValidationException" and says_context_overflow(status, message):
        return context_error("bedrock", status, text)
    if code == "ValidationException" and says_tools_unsupported(message):
        return tools_error("bedrock", status, text)
    if code in TRANSIENT_CODES or code == "ModelStreamErrorException":
        return TransientModelError(text, status=status, provider="bedrock")
    if code not in _NEVER_BUSY_CODES and says_busy(status, message):
        return TransientModelError(text, status=status, provider="bedrock")
    return ModelError(text, status=status, provider="bedrock")
