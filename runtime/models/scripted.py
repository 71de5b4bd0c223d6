"""The `scripted` provider: deterministic answers from the spec, for tests and offline demos.

Indexing (a contract): answer *c* of a run (c = the run's persisted model answers so far)
is the c-th entry of the script that is not an `error`. The `error` entries just before it
are returned, in order, to attempts 0, 1, … of that call, so a scripted 429 exercises the
retry path and the retry gets the next entry. Because the index comes from the persisted
history, a run that pauses, resumes or crashes sees exactly the same answers.

A compaction's summary request (`purpose="summary"`) takes nothing from the script: the
answer is the first line of each entry of the transcript it was given, cut to fit, so
scripts stay what the agent says and summaries are deterministic too.

Like a real model, it refuses a prompt longer than its `context_window` (counted the way
the engine estimates, runtime.models.tokens) with a 400 "prompt is too long", which the
adapters' shared classifier turns into `ContextOverflow`: a test whose run would overflow
a real model fails here too.
"""

from __future__ import annotations

import re

from runtime.errors import ModelError, TransientModelError
from runtime.messages import ToolCall, Usage
from runtime.models.base import ModelRequest, ModelResponse
from runtime.models.failures import classify_http
from runtime.models.tokens import prompt_tokens
from runtime.models.windows import context_window
from runtime.spec.models import ScriptedModel, ScriptEntry
from runtime.structs import encode


class ScriptedModelClient:
    def __init__(self, name: str, config: ScriptedModel):
        self.name = name
        self.model_id = config.model_id
        self._script = config.script
        self._stream = config.stream
        self.window = context_window(config)
        self.requests: list[ModelRequest] = []  # what the loop asked, for tests and benchmarks
        # Precomputed once: answer c is _answers[c], preceded by the errors in _errors[c].
        self._answers: list[ScriptEntry] = []
        self._errors: list[list[ScriptEntry]] = [[]]
        for entry in config.script:
            if entry.error is not None:
                self._errors[-1].append(entry)
            else:
                self._answers.append(entry)
                self._errors.append([])

    def _entry_for(self, call_number: int, attempt: int) -> ScriptEntry | None:
        if call_number >= len(self._errors):
            return None
        errors = self._errors[call_number]
        if attempt < len(errors):
            return errors[attempt]
        return self._answers[call_number] if call_number < len(self._answers) else None

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        counted = prompt_tokens(request.system, request.tools, request.messages)
        if counted > self.window:  # what every real provider answers to such a prompt
            raise classify_http(
                "scripted",
                400,
                f"prompt is too long: {counted} tokens > {self.window} maximum",
                {},
                None,
            )
        if request.purpose == "summary":
            return _summary(request, self.model_id)
        entry = self._entry_for(request.call_number, request.attempt)
        if entry is None:
            answers = sum(1 for e in self._script if e.error is None)
            raise ModelError(
                f"scripted model {self.name!r} has no answer for call {request.call_number + 1} "
                f"(its script has {answers} answers)",
                provider="scripted",
            )
        if entry.error is not None:
            error = entry.error
            message = f"{error.code}: {error.message}"
            if error.status is not None:  # read like a real provider's error answer
                raise classify_http("scripted", error.status, message, {}, None)
            raise (
                TransientModelError(message, provider="scripted")
                if "throttl" in error.code.lower()
                else ModelError(message, provider="scripted")
            )
        text = entry.text
        if text is not None and not isinstance(text, str):
            import json

            text = json.dumps(text)
        # A script without ids gets the engine's unique ones, like a provider that sends none.
        calls = [
            ToolCall.from_json(call.id or "", call.name, call.arguments)
            for call in entry.tool_calls
        ]
        if text and request.on_text is not None and self._stream:  # word by word, like a model
            for piece in re.findall(r"\s*\S+|\s+$", text):
                request.on_text(piece)
        usage = entry.usage or _estimate_usage(request, text)
        stop = entry.stop_reason or ("tool_use" if calls else "end_turn")
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens),
            stop_reason=stop,
            model_id=self.model_id,
        )


def _estimate_usage(request: ModelRequest, text: str | None) -> Usage:
    """Token counts when the script gives none: the engine's estimate of the prompt (what a
    real provider would count), else a rough one; 4 characters a token for the answer."""
    inputs = request.estimated_tokens
    if not inputs:
        size = len(request.system) + sum(len(encode(m)) for m in request.messages[-4:])
        inputs = size // 4
    return Usage(input_tokens=max(1, inputs), output_tokens=max(1, len(text or "") // 4))


SUMMARY_LINE_CHARS = 120


def _summary(request: ModelRequest, model_id: str) -> ModelResponse:
    """An extractive summary: the first line of every transcript entry, cut short."""
    transcript = request.messages[-1].content if request.messages else ""  # type: ignore[union-attr]
    lines = [line[:SUMMARY_LINE_CHARS] for line in str(transcript).splitlines() if line.strip()]
    text = "Summary of the earlier conversation:\n" + "\n".join(
        line for line in lines if not line.startswith(" ")
    )
    return ModelResponse(
        text=text,
        usage=Usage(input_tokens=max(1, request.estimated_tokens), output_tokens=len(text) // 4),
        model_id=model_id,
    )
