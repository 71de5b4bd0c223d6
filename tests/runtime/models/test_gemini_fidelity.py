"""Gemini as the real API behaves: tool schemas it accepts, the wait it asks for in the
body, quotas that do not clear, thought signatures for history it did not write, and
function responses with their ids, errors and images."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import pytest

from runtime.clock import FakeClock
from runtime.errors import TransientModelError
from runtime.messages import AssistantMessage, ImagePart, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ToolSpec
from runtime.models.failures import QuotaExhausted
from runtime.models.gemini import PLACEHOLDER_SIGNATURE
from runtime.models.gemini_schema import gemini_parameters
from runtime.models.retry import request_with_fallbacks
from runtime.spec.models import RetrySettings
from runtime.structs import replace
from tests.runtime.models.mock_wire import MockWire, text_answer

ANSWER = text_answer("gemini")


def builtin_tools() -> list[Any]:
    from runtime.tools.builtins import clarify_tool, list_tools_tool, time_date_tool
    from runtime.tools.cache_tools import session_cache_tools
    from runtime.tools.http_tool import http_request_tool
    from runtime.tools.storage_tools import storage_tools

    return [
        clarify_tool(),
        time_date_tool(),
        list_tools_tool(dict),
        http_request_tool(),
        *storage_tools("storage/a/"),
        *session_cache_tools(),
    ]


def sent_declarations(tools: list[ToolSpec], model_id: str = "gemini-2.5-flash") -> list[dict]:
    wire = MockWire((200, ANSWER))
    model = wire.model(provider="gemini", model_id=model_id)
    request = ModelRequest(system="s", messages=[UserMessage(content="hi")], tools=tools)
    asyncio.run(model.request(request))
    return wire.sent[0]["tools"][0]["functionDeclarations"]


#: Keywords Gemini refuses even in its JSON Schema field (pydantic-ai's Google profile
#: removes them for the same reason) — none may be left at a schema position.
REFUSED = {
    "$schema",
    "const",
    "title",
    "examples",
    "discriminator",
    "exclusiveMinimum",
    "exclusiveMaximum",
}


def keywords(schema: Any) -> set[str]:
    """Every keyword used at a schema position (not property names)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        for sub in (schema.get(key) or {}).values():
            found |= keywords(sub)
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains"):
        value = schema.get(key)
        for sub in value if isinstance(value, list) else [value]:
            found |= keywords(sub)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key) or []:
            found |= keywords(sub)
    return found


def test_every_builtin_schema_goes_out_unchanged_in_the_json_schema_field() -> None:
    """`http_request` has `additionalProperties` and an untyped `body`: the OpenAPI-subset
    `parameters` field answered 400 INVALID_ARGUMENT to both."""
    tools = builtin_tools()
    declarations = sent_declarations(
        [ToolSpec(t.name, t.description, t.input_schema) for t in tools]
    )
    for tool, declaration in zip(tools, declarations, strict=True):
        assert "parameters" not in declaration
        assert declaration["parametersJsonSchema"] == tool.input_schema, tool.name
    http = next(d for d in declarations if d["name"] == "http_request")["parametersJsonSchema"]
    assert http["additionalProperties"] is False and "type" not in http["properties"]["body"]


def test_the_python_tool_default_schema_goes_out_as_json_schema() -> None:
    from runtime.tools.python_tool import schema_from_signature

    def lookup(order_id: str, note, limit: int = 10, tags: list | None = None) -> None:  # type: ignore[no-untyped-def]
        pass

    schema = schema_from_signature(lookup)
    assert schema["additionalProperties"] is False and schema["properties"]["note"] == {}
    [declaration] = sent_declarations([ToolSpec("lookup", "Look up.", schema)])
    assert declaration["parametersJsonSchema"] == schema


NASTY_MCP_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "create_itemArguments",
    "properties": {
        "title": {"title": "Title", "type": "string", "examples": ["Milk"]},
        "kind": {"const": "grocery"},
        "priority": {
            "anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}],
            "default": None,
        },
        "due": {"type": "string", "format": "date-time", "description": "When."},
        "tags": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Tag"}},
        "meta": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
        "shape": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"t": {"const": "circle"}, "r": {"type": "number"}},
                    "required": ["t"],
                },
                {
                    "type": "object",
                    "properties": {"t": {"const": "square"}, "side": {"type": "number"}},
                    "required": ["t"],
                },
            ],
            "discriminator": {"propertyName": "t"},
        },
    },
    "required": ["title", "kind"],
    "additionalProperties": False,
    "$defs": {
        "Tag": {
            "title": "Tag",
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
    },
}

INSTANCES: list[Any] = [
    {"title": "Milk", "kind": "grocery"},
    {"title": "Milk", "kind": "hardware"},
    {"kind": "grocery"},
    {"title": "Milk", "kind": "grocery", "surprise": 1},
    {"title": "Milk", "kind": "grocery", "priority": None, "tags": [{"name": "x"}]},
    {"title": "Milk", "kind": "grocery", "tags": [{"label": "x"}]},
    {"title": "Milk", "kind": "grocery", "meta": {"a": "b"}, "extra": [1, {"x": None}]},
    {"title": "Milk", "kind": "grocery", "meta": {"a": 1}},
    {"title": "Milk", "kind": "grocery", "pair": ["a", 1]},
    {"title": "Milk", "kind": "grocery", "pair": [1, "a"]},
    {"title": "Milk", "kind": "grocery", "shape": {"t": "circle", "r": 2}},
    {"title": "Milk", "kind": "grocery", "shape": {"t": "triangle"}},
    {"title": 3, "kind": "grocery"},
]


def test_a_nasty_mcp_schema_is_converted_faithfully() -> None:
    [declaration] = sent_declarations(
        [ToolSpec("orders__create_item", "Create.", NASTY_MCP_SCHEMA)]
    )
    sent = declaration["parametersJsonSchema"]
    assert keywords(sent) & REFUSED == set()
    assert sent["type"] == "object" and "title" in sent["properties"]  # a property, kept
    assert sent["properties"]["kind"] == {"enum": ["grocery"], "type": "string"}
    assert sent["properties"]["due"]["description"] == "When. (format: date-time)"
    assert sent["properties"]["priority"]["anyOf"][0]["description"] == "Exclusive minimum: 0"
    jsonschema.Draft202012Validator.check_schema(sent)
    original = jsonschema.Draft202012Validator(NASTY_MCP_SCHEMA)
    converted = jsonschema.Draft202012Validator(sent)
    assert [converted.is_valid(i) for i in INSTANCES] == [original.is_valid(i) for i in INSTANCES]


def test_a_schema_without_a_root_type_is_declared_as_an_object() -> None:
    assert gemini_parameters({"properties": {"q": {"type": "string"}}}) == {
        "properties": {"q": {"type": "string"}},
        "type": "object",
    }
    assert gemini_parameters({}) == {"type": "object"}


# ---- quotas and waits ------------------------------------------------------------------

HELP = {
    "@type": "type.googleapis.com/google.rpc.Help",
    "links": [
        {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
        }
    ],
}


def resource_exhausted(quota_id: str, delay: str = "17s") -> dict[str, Any]:
    """A 429 body as Gemini sends it (shape of the bodies quoted in
    google-gemini/gemini-cli#8437 and langgenius/dify#19838)."""
    return {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details. "
            "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": quota_id,
                            "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                            "quotaValue": "10",
                        }
                    ],
                },
                HELP,
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
            ],
        }
    }


def test_the_wait_gemini_puts_in_the_body_is_honoured_like_retry_after() -> None:
    per_minute = resource_exhausted("GenerateRequestsPerMinutePerProjectPerModel-FreeTier")
    wire = MockWire((429, per_minute), (429, per_minute), (200, ANSWER))
    model = wire.model(provider="gemini", model_id="gemini-2.5-flash")
    request = ModelRequest(system="", messages=[UserMessage(content="hi")])
    with pytest.raises(TransientModelError) as raised:
        asyncio.run(model.request(request))
    assert raised.value.retry_after == 17.0
    clock = FakeClock()
    asyncio.run(request_with_fallbacks([(model, RetrySettings())], request, clock))
    assert clock.slept == [17.0]  # not the 1 s backoff


def test_an_exhausted_daily_quota_fails_at_once_with_a_clear_message() -> None:
    wire = MockWire(
        (429, resource_exhausted("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "35s"))
    )
    model = wire.model(provider="gemini", model_id="gemini-2.5-flash")
    clock = FakeClock()
    request = ModelRequest(system="", messages=[UserMessage(content="hi")])
    with pytest.raises(Exception) as raised:
        asyncio.run(request_with_fallbacks([(model, RetrySettings())], request, clock))
    assert isinstance(raised.value.__cause__, QuotaExhausted)
    assert "gemini" in str(raised.value) and "quota or billing is exhausted" in str(raised.value)
    assert len(wire.sent) == 1 and clock.slept == []


# ---- history: signatures, ids, results ---------------------------------------------------


def follow_up_contents(model_id: str, history: list) -> list[dict]:
    wire = MockWire((200, ANSWER))
    tools = [
        ToolSpec("get_weather", "", {"type": "object"}),
        ToolSpec("get_time", "", {"type": "object"}),
    ]
    asyncio.run(
        wire.model(provider="gemini", model_id=model_id).request(ModelRequest("", history, tools))
    )
    return wire.sent[0]["contents"]


FOREIGN_TURN = AssistantMessage(  # written by a fallback model of another provider: no signature
    text="Checking.",
    tool_calls=[
        ToolCall(id="toolu_01", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_02", name="get_time", arguments={}),
    ],
)


def test_gemini_3_gets_the_documented_placeholder_on_calls_another_model_made() -> None:
    results = [
        ToolResultMessage(tool_call_id="toolu_01", tool_name="get_weather", content="18C"),
        ToolResultMessage(tool_call_id="toolu_02", tool_name="get_time", content="12:00"),
    ]
    contents = follow_up_contents(
        "gemini-3-pro-preview", [UserMessage(content="?"), FOREIGN_TURN, *results]
    )
    parts = contents[1]["parts"]
    assert (
        parts[1]["thoughtSignature"] == PLACEHOLDER_SIGNATURE == "skip_thought_signature_validator"
    )
    assert "thoughtSignature" not in parts[2]  # Gemini signs only the first call of a step
    assert [p["functionCall"]["id"] for p in parts[1:]] == ["toolu_01", "toolu_02"]
    assert [p["functionResponse"]["id"] for p in contents[2]["parts"]] == ["toolu_01", "toolu_02"]


def test_a_signature_gemini_gave_is_never_replaced_and_older_models_get_no_placeholder() -> None:
    own = replace(
        FOREIGN_TURN,
        tool_calls=[
            replace(FOREIGN_TURN.tool_calls[0], provider_data={"thoughtSignature": "real"})
        ],
    )
    result = ToolResultMessage(tool_call_id="toolu_01", tool_name="get_weather", content="18C")
    assert (
        follow_up_contents("gemini-3-flash-preview", [own, result])[0]["parts"][1][
            "thoughtSignature"
        ]
        == "real"
    )
    parts = follow_up_contents("gemini-2.5-flash", [FOREIGN_TURN, result])[0]["parts"]
    assert all("thoughtSignature" not in p for p in parts)


PNG = ImagePart(mime_type="image/png", data="iVBORw0KGgo=")
SVG = ImagePart(mime_type="image/svg+xml", data="PHN2Zz4=")


def test_function_responses_carry_errors_and_on_gemini_3_the_images() -> None:
    shot = ToolResultMessage(
        tool_call_id="toolu_01",
        tool_name="get_weather",
        content="[image: image/png, 8 bytes]",
        images=[PNG, SVG],
    )
    failed = ToolResultMessage(
        tool_call_id="toolu_02", tool_name="get_time", content="server said no", success=False
    )
    history = [UserMessage(content="?"), FOREIGN_TURN, shot, failed]
    three = follow_up_contents("gemini-3-pro-preview", history)[2]["parts"]
    assert three[0]["functionResponse"] == {
        "name": "get_weather",
        "id": "toolu_01",
        "response": {"output": "[image: image/png, 8 bytes]"},
        "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}],
    }
    assert three[1]["functionResponse"]["response"] == {"error": "server said no"}
    older = follow_up_contents("gemini-2.5-pro", history)[2]["parts"]
    assert "parts" not in older[0]["functionResponse"]  # text only: it describes the image
