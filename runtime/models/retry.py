"""Model calls with retries (transient errors, honoring Retry-After) and fallbacks.

Transient errors are retried on the same model with exponential backoff; a Retry-After
longer than the backoff wins. When a model's attempts are spent, or it fails with a
non-transient error, the next model of `fallbacks` is tried. The answer says which model
answered, so the result can report `model_used`. A model that cannot call tools answers as
plain chat when the agent can do without tools (`runtime.models.tool_support`); an
exhausted quota (`QuotaExhausted`) is not transient, so it is never retried. A prompt too
long for the model (`ContextOverflow`) goes straight back to the engine, which compacts the
context and asks again: the same prompt would not fit a retry either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from runtime.clock import Clock
from runtime.errors import ModelError, TransientModelError
from runtime.models.base import Model, ModelRequest, ModelResponse
from runtime.models.failures import ContextOverflow
from runtime.models.tool_support import request_with_tool_support
from runtime.spec.plain import RetrySettings

MAX_RETRY_AFTER = 60.0

#: Called before each retry sleep: (model name, attempt, error, delay seconds); and with
#: delay None when a model is given up (the next of the chain, if any, is tried next).
RetryListener = Callable[[str, int, ModelError, float | None], None]


def backoff(settings: RetrySettings, attempt: int, retry_after: float | None) -> float:
    delay = min(settings.max_delay, settings.base_delay * (2**attempt))
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
    return delay


async def request_with_fallbacks(
    chain: Sequence[tuple[Model, RetrySettings]],
    request: ModelRequest,
    clock: Clock,
    on_retry: RetryListener | None = None,
) -> tuple[Model, ModelResponse]:
    last: ModelError | None = None
    for model, settings in chain:
        for attempt in range(settings.max_attempts):
            try:
                attempt_request = request if attempt == 0 else replace(request, attempt=attempt)
                tag = getattr(request.on_text, "for_attempt", None)  # runtime.live.live.ChunkSink
                if tag is not None:  # watchers learn which model and attempt is writing
                    attempt_request = replace(attempt_request, on_text=tag(model.name, attempt))
                return model, await request_with_tool_support(model, attempt_request)
            except TransientModelError as exc:
                last = exc
                if attempt + 1 >= settings.max_attempts:
                    break
                delay = backoff(settings, attempt, exc.retry_after)
                if on_retry:
                    on_retry(model.name, attempt, exc, delay)
                await clock.sleep(delay)
            except ContextOverflow:
                raise
            except ModelError as exc:
                last = exc
                break
        if on_retry and last is not None:
            on_retry(model.name, attempt, last, None)
    assert last is not None
    names = ", ".join(m.name for m, _ in chain)
    raise ModelError(f"every model failed ({names}); last error: {last}") from last
