"""Turn a final answer into the run's `result`: text, or parsed JSON (fences tolerated)."""

from __future__ import annotations

import json
import re
from typing import Any

from runtime.safety.schema_check import SchemaViolation, check

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.S)

#: The warning of a run whose final answer was still cut off after every continuation.
TRUNCATED = (
    "the answer was still cut off at the model's max_tokens after {n} continuations: "
    "the result is what the model wrote (truncated: true)"
)


def strip_fences(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def parse_json_answer(text: str) -> tuple[bool, Any]:
    """(True, value) when the answer is a JSON object or array (in fences or not)."""
    candidate = strip_fences(text)
    if not candidate or candidate[0] not in "[{":
        return False, None
    try:
        return True, json.loads(candidate)
    except json.JSONDecodeError:
        return False, None


def result_from_answer(text: str, schema: dict[str, Any] | None) -> tuple[Any, str | None]:
    """(result, problem). With a schema the answer must be JSON satisfying it; the problem
    says what is wrong in words the model can act on. Without one, JSON is parsed when the
    whole answer is JSON, else the text is the result."""
    is_json, value = parse_json_answer(text)
    if schema is None:
        return (value if is_json else text), None
    if not is_json:
        return text, "the answer is not a JSON object; reply with only the JSON, no prose"
    try:
        check(schema, value)
    except SchemaViolation as exc:
        return value, f"the JSON does not match the required schema: {exc}"
    return value, None


def correction_prompt(problem: str, schema: dict[str, Any]) -> str:
    return (
        f"Your final answer was not accepted: {problem}. Answer again with only a JSON value "
        f"that satisfies this JSON Schema:\n{json.dumps(schema, indent=1)}"
    )


CONTINUE_PROMPT = (
    "Your answer was cut off by the output token limit. Continue exactly where you left off."
)
