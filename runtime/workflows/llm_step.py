"""A workflow's `llm` step: one model call, no agent loop.

The step's prompt is rendered from the workflow's scope like an agent step's input, sent to
its model once (the model's own `retry` and `fallbacks` apply, as in an agent run), and the
answer — text, or the JSON value an `output_schema` asks for, checked against it — is the
step's result, seen by later steps as `{step id}` exactly like an agent step's run result.

The result is kept as an object of its own (`results/{workflow_run_id}/{step}/…`), never in
the workflow's item (which stays small), and the item records its key: the task is
idempotent, so a Step Functions retry of a task that already answered reads the answer
instead of asking the model a second time.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from runtime.errors import ModelError
from runtime.messages import UserMessage
from runtime.models.base import ModelRequest
from runtime.models.retry import request_with_fallbacks
from runtime.safety.schema_check import SchemaViolation, check
from runtime.spec.plain import LlmStep

if TYPE_CHECKING:
    from runtime.engine.loop import Engine

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class LlmStepFailed(Exception):
    """The call failed (every model of the chain) or its answer is not what was asked."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def result_key(workflow_run_id: str, step_id: str, iteration: int, attempt: int) -> str:
    """Under `results/{workflow tag}…`, the prefix the workflow's function may write."""
    return f"results/{workflow_run_id}/{step_id}/{iteration}-{attempt}.json"


def system_prompt(step: LlmStep) -> str:
    if step.output_schema is None:
        return step.system
    rule = (
        "Answer with one JSON value and nothing else (no prose, no code fence), matching "
        f"this JSON Schema: {json.dumps(step.output_schema, sort_keys=True)}"
    )
    return f"{step.system}\n\n{rule}" if step.system else rule


def _value(step: LlmStep, text: str) -> Any:
    if step.output_schema is None:
        return text
    body = text.strip()
    fenced = _FENCE.match(body)
    try:
        value = json.loads(fenced.group(1) if fenced else body)
    except ValueError:
        raise LlmStepFailed(
            "OUTPUT_INVALID", f"the model's answer is not JSON: {body[:200]!r}"
        ) from None
    try:
        check(step.output_schema, value)
    except SchemaViolation as exc:
        raise LlmStepFailed(
            "OUTPUT_INVALID", f"the model's answer does not match output_schema: {exc}"
        ) from None
    return value


def call(engine: Engine, step: LlmStep, prompt: str) -> Any:
    """One request (with the model's retries and fallbacks); the step's result."""
    names = [step.model]
    names += [n for n in engine.spec.models[step.model].fallbacks if n not in names]
    # the engine's models, cached as an agent run's are (and injectable the same way in tests)
    for name in names:
        if name not in engine._model_cache:
            engine._model_cache[name] = engine._build_model(name)
    chain = [(engine._model_cache[name], engine.spec.models[name].retry) for name in names]
    request = ModelRequest(system=system_prompt(step), messages=[UserMessage(content=prompt)])
    try:
        _, answer = asyncio.run(request_with_fallbacks(chain, request, engine.clock))
    except ModelError as exc:  # MODEL_ERROR, or the code every model failed with
        raise LlmStepFailed(exc.error_code, str(exc)) from None
    return _value(step, answer.text or "")
