"""Model calls with retries (transient errors, honoring Retry-After) and fallbacks.

Transient errors are retried on the same model with exponential backoff; a Retry-After
longer than the backoff wins. When a model's attempts are spent, or it fails with a
non-transient error, the next model of `fallbacks` is tried. The answer says which model
answered, so the result can report `model_used`. A model that cannot call tools answers as
plain chat when the agent can do without tools (`runtime.models.tool_support`); an
exhausted quota (`QuotaExhausted`) is not transient, so it is never retried. A prompt too
long for the model (`ContextOverflow`) goes straight back to the engine, which compacts the
context and asks again: the same prompt would not fit a retry either. A model whose API key
cannot be read (`SecretUnavailable`, resolved at its first call) has failed like any other:
the next model is tried, so a fallback's missing key never stops a primary that answers.

When every model has failed, the error names each model's last error (a user debugging a
chain needs the primary's as much as the last one's), with the code they all failed with
(`SECRET_UNAVAILABLE` for a lone model without its key, as the README says), else
`MODEL_ERROR`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from runtime.clock import Clock
from runtime.errors import ModelError, RunError, SecretUnavailable, TransientModelError
from runtime.models.base import Model, ModelRequest, ModelResponse
from runtime.models.failures import ContextOverflow
from runtime.models.tool_support import request_with_tool_support
from runtime.spec.plain import RetrySettings

MAX_RETRY_AFTER = 60.0

#: Called before each retry sleep: (model name, attempt, error, delay seconds); and with
#: delay None when a model is given up (the next of the chain, if any, is tried next).
RetryListener = Callable[[str, int, RunError, float | None], None]


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
    failures: list[tuple[str, RunError]] = []
    for model, settings in chain:
        last: RunError | None = None
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
            except (ModelError, SecretUnavailable) as exc:
                last = exc
                break
        assert last is not None
        failures.append((model.name, last))
        if on_retry:
            on_retry(model.name, attempt, last, None)
    raise exhausted(failures)


def exhausted(failures: list[tuple[str, RunError]]) -> ModelError:
    """The error of a chain whose every model failed: each one's error, and the code they
    share (else MODEL_ERROR)."""
    if len(failures) == 1:
        error = ModelError(f"{failures[0][0]} failed: {failures[0][1]}")
    else:
        each = "; ".join(f"{name}: {error}" for name, error in failures)
        error = ModelError(f"every model failed: {each}")
    codes = {e.error_code for _, e in failures}
    if len(codes) == 1:
        error.error_code = codes.pop()
    error.__cause__ = failures[-1][1]
    return error
