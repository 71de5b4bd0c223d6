"""Replaying recorded real provider traffic through the provider adapters.

Each recording (tests/fixtures/provider_recordings/*.json, provenance in its README) holds
one real response (status, headers, body), often the request the real API took in the
same exchange (`recorded_request`), and what the response means (`expect`).

`Replay` wires an adapter to answer from a recording: HTTP providers through an
httpx.MockTransport, Bedrock through a `before-send` hook on the model's own boto3 client
(so botocore parses the raw answer and its error headers itself, with the retry settings
agentfn gives it). Everything an adapter sends is kept in `sent`.

`neutral_request` turns a recorded wire request back into agentfn's provider-neutral
`ModelRequest`; `shape` projects a wire request onto what both sides must agree on
(roles and order, blocks, ids, signatures, tool result shape, tool schemas, limits) and
leaves out what agentfn does not express (streaming flags, `n`, tool_choice, effort…).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import Model, ModelRequest, ModelResponse, ToolSpec
from runtime.spec import models as spec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "provider_recordings"
#: The recordings do not name the Bedrock model; the tool-choice cassettes they come from
#: used Claude Sonnet 4.5 (a model that takes `toolResult.status`).
BEDROCK_MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
_BASE_URLS = {
    "openai_compatible": "https://api.example-compatible.test/v1",
    "ollama": "http://localhost:11434/v1",
}
#: Hop-by-hop and length headers describe the original transfer, not the body replayed.
_TRANSFER_HEADERS = {"content-length", "transfer-encoding", "content-encoding", "connection"}


@dataclass
class Recording:
    name: str
    data: dict[str, Any]

    @property
    def provider(self) -> str:
        return str(self.data["provider"])

    @property
    def status(self) -> int:
        return int(self.data["response"]["status"])

    @property
    def body(self) -> Any:
        return self.data["response"]["body"]

    @property
    def headers(self) -> dict[str, str]:
        headers = self.data["response"].get("headers") or {}
        return {k: v for k, v in headers.items() if k.lower() not in _TRANSFER_HEADERS}

    @property
    def recorded_request(self) -> dict[str, Any] | None:
        return self.data.get("recorded_request")

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.data["expect"])

    def model_id(self) -> str:
        if self.provider == "bedrock":
            return BEDROCK_MODEL_ID
        request, body = self.recorded_request or {}, self.body if self.status == 200 else {}
        return str(
            request.get("model")
            or body.get("model")
            or body.get("modelVersion")
            or {"gemini": "gemini-2.5-flash", "anthropic": "claude-sonnet-4-5"}.get(
                self.provider, "gpt-4o"
            )
        )


def all_recordings() -> list[Recording]:
    return [
        Recording(path.stem, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(FIXTURES.glob("*.json"))
    ]


def next_interaction(recording: Recording, recordings: list[Recording]) -> Recording | None:
    """The recording of the same exchange's next call (its request carries this one's
    answer and the tool results), when there is one."""
    source = recording.data.get("source") or {}
    if "interaction" not in source:
        return None
    for other in recordings:
        theirs = other.data.get("source") or {}
        if (
            (theirs.get("repo"), theirs.get("path")) == (source.get("repo"), source.get("path"))
            and theirs.get("interaction") == source["interaction"] + 1
            and other.recorded_request
        ):
            return other
    return None


@dataclass
class Replay:
    """An adapter answering every request with `recording`'s response."""

    recording: Recording
    config: dict[str, Any] = field(default_factory=dict)
    sent: list[dict[str, Any]] = field(default_factory=list)

    def model(self) -> Model:
        provider = self.recording.provider
        options: dict[str, Any] = {"model_id": self.recording.model_id(), **self.config}
        if provider == "bedrock":
            from runtime.models.bedrock import BedrockConverseModel

            model = BedrockConverseModel(
                "replayed",
                spec.BedrockModel(provider="bedrock", region="us-east-1", **options).to_runtime(),
            )
            model._bedrock().meta.events.register(
                "before-send.bedrock-runtime.Converse", self._boto_answer
            )
            return model
        from runtime.models.factory import build_model

        if provider in _BASE_URLS:
            options.setdefault("base_url", _BASE_URLS[provider])
        if provider != "ollama":
            options.setdefault("api_key", "${secret:key}")
        config = _CONFIGS[provider](provider=provider, **options).to_runtime()
        client = httpx.AsyncClient(transport=httpx.MockTransport(self._http_answer))
        return build_model("replayed", config, lambda _ref: "sk-test", http_client=client)

    def ask(self, model: Model, request: ModelRequest) -> ModelResponse:
        return asyncio.run(model.request(request))

    def _http_answer(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(json.loads(request.content))
        return httpx.Response(
            self.recording.status,
            headers=self.recording.headers,
            content=json.dumps(self.recording.body).encode(),
        )

    def _boto_answer(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        self.sent.append(json.loads(request.body))
        payload = json.dumps(self.recording.body).encode()

        class Raw:
            def stream(self, *args: Any, **kwargs: Any) -> Any:
                yield payload

        return AWSResponse(request.url, self.recording.status, self.recording.headers, Raw())


_CONFIGS: dict[str, Any] = {
    "openai": spec.OpenAIModel,
    "azure_openai": spec.AzureOpenAIModel,
    "openai_compatible": spec.OpenAICompatibleModel,
    "ollama": spec.OllamaModel,
    "anthropic": spec.AnthropicModel,
    "gemini": spec.GeminiModel,
}


# ---- recorded wire request → neutral request ------------------------------------------


@dataclass
class Neutral:
    request: ModelRequest
    config: dict[str, Any]  # spec options the recorded request implies (limits, temperature)


def neutral_request(provider: str, wire: dict[str, Any]) -> Neutral:
    convert = {
        "anthropic": _from_anthropic,
        "openai": _from_openai,
        "openai_compatible": _from_openai,
        "ollama": _from_openai,
        "gemini": _from_gemini,
        "bedrock": _from_bedrock,
    }[provider]
    return convert(wire)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "".join(block.get("text", "") for block in value or [])


def _from_anthropic(wire: dict[str, Any]) -> Neutral:
    names: dict[str, str] = {}
    messages: list[Message] = []
    for item in wire["messages"]:
        blocks = item["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if item["role"] == "assistant":
            calls = [
                ToolCall(id=b["id"], name=b["name"], arguments=b["input"])
                for b in blocks
                if b["type"] == "tool_use"
            ]
            names.update({c.id: c.name for c in calls})
            text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
            messages.append(AssistantMessage(text=text, tool_calls=calls))
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                messages.append(
                    ToolResultMessage(
                        tool_call_id=block["tool_use_id"],
                        tool_name=names.get(block["tool_use_id"], ""),
                        content=_text(block["content"]),
                        success=not block.get("is_error", False),
                    )
                )
            else:
                messages.append(UserMessage(content=block["text"]))
    tools = [
        ToolSpec(t["name"], t.get("description", ""), t["input_schema"])
        for t in wire.get("tools", [])
    ]
    config = {"max_tokens": wire.get("max_tokens"), "temperature": wire.get("temperature")}
    return Neutral(
        ModelRequest(system=_text(wire.get("system") or ""), messages=messages, tools=tools),
        {k: v for k, v in config.items() if v is not None},
    )


def _from_openai(wire: dict[str, Any]) -> Neutral:
    names: dict[str, str] = {}
    system, messages = "", []
    for item in wire["messages"]:
        role = item["role"]
        if role in ("system", "developer"):
            system = _text(item["content"])
        elif role == "user":
            messages.append(UserMessage(content=_text(item["content"])))
        elif role == "assistant":
            calls = [
                ToolCall.from_json(c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in item.get("tool_calls") or []
            ]
            names.update({c.id: c.name for c in calls})
            messages.append(AssistantMessage(text=item.get("content") or None, tool_calls=calls))
        elif role == "tool":
            messages.append(
                ToolResultMessage(
                    tool_call_id=item["tool_call_id"],
                    tool_name=names.get(item["tool_call_id"], ""),
                    content=_text(item["content"]),
                )
            )
    tools = [
        ToolSpec(
            t["function"]["name"], t["function"].get("description", ""), t["function"]["parameters"]
        )
        for t in wire.get("tools", [])
    ]
    limit = wire.get("max_completion_tokens") or wire.get("max_tokens")
    config = {"max_tokens": limit, "temperature": wire.get("temperature")}
    return Neutral(
        ModelRequest(system=system, messages=messages, tools=tools),
        {k: v for k, v in config.items() if v is not None},
    )


def _from_gemini(wire: dict[str, Any]) -> Neutral:
    messages: list[Message] = []
    for content in wire["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            calls = []
            for part in parts:
                if "functionCall" in part:
                    call = part["functionCall"]
                    data = (
                        {"thoughtSignature": part["thoughtSignature"]}
                        if "thoughtSignature" in part
                        else None
                    )
                    calls.append(
                        ToolCall(
                            id=call.get("id", ""),
                            name=call["name"],
                            arguments=call.get("args") or {},
                            provider_data=data,
                        )
                    )
            text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) or None
            messages.append(AssistantMessage(text=text, tool_calls=calls))
            continue
        for part in parts:
            if "functionResponse" in part:
                response = part["functionResponse"]
                values = list((response.get("response") or {}).values())
                content_text = (
                    values[0]
                    if len(values) == 1 and isinstance(values[0], str)
                    else json.dumps(response.get("response"))
                )
                messages.append(
                    ToolResultMessage(
                        tool_call_id=response.get("id", ""),
                        tool_name=response["name"],
                        content=content_text,
                        success="error" not in (response.get("response") or {}),
                    )
                )
            else:
                messages.append(UserMessage(content=part.get("text", "")))
    tools = [
        ToolSpec(d["name"], d.get("description", ""), _gemini_schema(d))
        for group in wire.get("tools", [])
        for d in group.get("functionDeclarations", [])
    ]
    generation = wire.get("generationConfig") or {}
    config = {
        "max_tokens": generation.get("maxOutputTokens"),
        "temperature": generation.get("temperature"),
    }
    system = _text((wire.get("systemInstruction") or {}).get("parts"))
    return Neutral(
        ModelRequest(system=system, messages=messages, tools=tools),
        {k: v for k, v in config.items() if v is not None},
    )


def _gemini_schema(declaration: dict[str, Any]) -> dict[str, Any]:
    for key in ("parametersJsonSchema", "parameters_json_schema", "parameters"):
        if key in declaration:
            return dict(declaration[key])
    return {"type": "object"}


def _from_bedrock(wire: dict[str, Any]) -> Neutral:
    names: dict[str, str] = {}
    messages: list[Message] = []
    for item in wire["messages"]:
        if item["role"] == "assistant":
            calls = [
                ToolCall(
                    id=b["toolUse"]["toolUseId"],
                    name=b["toolUse"]["name"],
                    arguments=b["toolUse"]["input"],
                )
                for b in item["content"]
                if "toolUse" in b
            ]
            names.update({c.id: c.name for c in calls})
            text = "".join(b["text"] for b in item["content"] if "text" in b) or None
            messages.append(AssistantMessage(text=text, tool_calls=calls))
            continue
        for block in item["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                messages.append(
                    ToolResultMessage(
                        tool_call_id=result["toolUseId"],
                        tool_name=names.get(result["toolUseId"], ""),
                        content=_text(result["content"]),
                        success=result.get("status") != "error",
                    )
                )
            else:
                messages.append(UserMessage(content=block["text"]))
    tools = [
        ToolSpec(
            t["toolSpec"]["name"],
            t["toolSpec"].get("description", ""),
            t["toolSpec"]["inputSchema"]["json"],
        )
        for t in (wire.get("toolConfig") or {}).get("tools", [])
    ]
    inference = wire.get("inferenceConfig") or {}
    config = {"max_tokens": inference.get("maxTokens"), "temperature": inference.get("temperature")}
    return Neutral(
        ModelRequest(system=_text(wire.get("system") or []), messages=messages, tools=tools),
        {k: v for k, v in config.items() if v is not None},
    )


# ---- what a request must agree on ------------------------------------------------------


def shape(provider: str, wire: dict[str, Any]) -> dict[str, Any]:
    project = {
        "anthropic": _anthropic_shape,
        "openai": _openai_shape,
        "openai_compatible": _openai_shape,
        "ollama": _openai_shape,
        "gemini": _gemini_shape,
        "bedrock": _bedrock_shape,
    }[provider]
    return project(wire)


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    if block["type"] == "tool_result":
        content = block["content"]
        if isinstance(content, list) and all(b.get("type") == "text" for b in content):
            content = _text(content)
        return {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": content,
            "is_error": bool(block.get("is_error", False)),
        }
    if block["type"] == "tool_use":
        return {k: block[k] for k in ("type", "id", "name", "input")}
    return {"type": "text", "text": block["text"]}


def _anthropic_shape(wire: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for item in wire["messages"]:
        blocks = item["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        messages.append({"role": item["role"], "content": [_anthropic_block(b) for b in blocks]})
    return {
        "system": _text(wire.get("system") or "") or None,
        "messages": messages,
        "tools": [
            {
                "name": t["name"],
                "description": t.get("description", ""),
                "input_schema": t["input_schema"],
            }
            for t in wire.get("tools", [])
        ],
        "max_tokens": wire.get("max_tokens"),
        "temperature": wire.get("temperature"),
    }


def _openai_shape(wire: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for item in wire["messages"]:
        entry: dict[str, Any] = {"role": item["role"]}
        if item.get("content") not in (None, ""):
            entry["content"] = _text(item["content"])
        if item.get("tool_calls"):
            entry["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": c["type"],
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                }
                for c in item["tool_calls"]
            ]
        if "tool_call_id" in item:
            entry["tool_call_id"] = item["tool_call_id"]
        messages.append(entry)
    return {
        "messages": messages,
        "tools": [
            {
                "type": t["type"],
                **{k: t["function"].get(k, "") for k in ("name", "description", "parameters")},
            }
            for t in wire.get("tools", [])
        ],
        "limit": {k: wire[k] for k in ("max_tokens", "max_completion_tokens") if k in wire},
        "temperature": wire.get("temperature"),
    }


def _gemini_part(part: dict[str, Any]) -> dict[str, Any]:
    if "functionCall" in part:
        projected = {"functionCall": dict(part["functionCall"])}
        if "thoughtSignature" in part:
            projected["thoughtSignature"] = part["thoughtSignature"]
        return projected
    if "functionResponse" in part:
        response = part["functionResponse"]
        payload = response.get("response") or {}
        return {
            "functionResponse": {
                "id": response.get("id"),
                "name": response["name"],
                "failed": "error" in payload,
                "values": sorted(map(str, payload.values())),
            }
        }
    return {"text": part.get("text")}


def _gemini_shape(wire: dict[str, Any]) -> dict[str, Any]:
    generation = wire.get("generationConfig") or {}
    declarations = []
    for group in wire.get("tools", []):
        for d in group.get("functionDeclarations", []):
            # both spellings are the JSON Schema field; `parameters` is the OpenAPI subset
            field = (
                "parametersJsonSchema"
                if any(k in d for k in ("parametersJsonSchema", "parameters_json_schema"))
                else "parameters"
            )
            declarations.append(
                {
                    "name": d["name"],
                    "description": d.get("description", ""),
                    field: _gemini_schema(d),
                }
            )
    return {
        "system": _text((wire.get("systemInstruction") or {}).get("parts")) or None,
        "contents": [
            {"role": c["role"], "parts": [_gemini_part(p) for p in c["parts"]]}
            for c in wire["contents"]
        ],
        "tools": declarations,
        "maxOutputTokens": generation.get("maxOutputTokens"),
        "temperature": generation.get("temperature"),
    }


def _bedrock_shape(wire: dict[str, Any]) -> dict[str, Any]:
    inference = wire.get("inferenceConfig") or {}
    return {
        "system": _text(wire.get("system") or []) or None,
        "messages": wire["messages"],
        "tools": [
            {k: t["toolSpec"].get(k) for k in ("name", "description", "inputSchema")}
            for t in (wire.get("toolConfig") or {}).get("tools", [])
        ],
        "maxTokens": inference.get("maxTokens"),
        "temperature": inference.get("temperature"),
    }
