"""runtime.jsontext writes the very text json.dumps writes with the same options (the tool
results and call arguments it encodes are stored, and sent to providers)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from runtime.engine.toolrun import render_output
from runtime.jsontext import writer
from runtime.messages import ToolCall

OPTIONS: list[dict[str, Any]] = [
    {"sort_keys": True, "separators": (",", ":")},  # a call's arguments
    {"ensure_ascii": False, "default": str},  # a tool's output
    {},
]

FIXED: list[Any] = [
    {"i": 5},
    'text with "quotes", \\ and é\u2028\U0001f600',
    3,
    -1.5,
    1e16,
    1e-7,
    float("nan"),
    float("inf"),
    True,
    None,
    [],
    {},
    {"b": [1, 2.5, None, True, "é"], "a": {"z": [], "y": {}}},
    {"when": object()},  # not JSON: `default`, else TypeError
    {1: "int key", 2.5: "float key", None: "null key", False: "bool key"},
]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["int", "float", "str", "bool", "none"] + (["list", "dict"] * (depth < 4))
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-(10**20), 10**20)
    if kind == "float":
        return rng.uniform(-1e6, 1e6) * rng.choice([1, 1e-12, 1e20])
    if kind == "str":
        return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x10FFFF)]))
                       for _ in range(rng.randint(0, 12))).replace("\ud800", "")  # fmt: skip
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        str(_random_value(rng, 3)): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))
    }


def _outcome(write: Any, value: Any) -> str:
    try:
        return str(write(value))
    except Exception as exc:  # the same kind of failure counts as the same outcome
        return f"raised {type(exc).__name__}"


@pytest.mark.parametrize("options", OPTIONS)
def test_the_writer_writes_what_json_dumps_writes(options: dict[str, Any]) -> None:
    rng = random.Random(26)
    values = FIXED + [_random_value(rng) for _ in range(2000)]
    write, reference = writer(json.JSONEncoder(**options)), json.JSONEncoder(**options).encode
    for value in values:
        try:
            expected = _outcome(reference, value)
        except UnicodeEncodeError:  # a lone surrogate the reference cannot write either
            continue
        assert _outcome(write, value) == expected, value
    # The writer is made once and used again: a failure leaves nothing behind.
    assert write({"i": 5}) == reference({"i": 5})


def test_a_value_that_refers_to_itself_is_rendered_as_text() -> None:
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    assert render_output(looped) == str(looped)
    call = ToolCall(id="c", name="n", arguments={"b": 2, "a": [1, "é"]})
    assert call.arguments_json() == '{"a":[1,"\\u00e9"],"b":2}'
