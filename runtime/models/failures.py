"""What a provider's error answer means beyond its HTTP status.

A status alone misleads in three ways this module corrects:

- a 429 is not always "slow down": OpenAI's `insufficient_quota`, Gemini's exhausted
  *daily* quota and Bedrock's "Too many tokens per day" (runtime.models.bedrock) stay
  exhausted for hours, and
  credit/billing errors (402, Anthropic's "credit balance is too low") never clear on
  their own. Retrying them only burns the run's time: `QuotaExhausted` fails at once.
- Gemini puts its wait in the body (`google.rpc.RetryInfo`), not in a Retry-After header.
- "prompt is too long" (each provider says it its own way) is not this request's fault nor
  another model's job: `ContextOverflow` makes the engine compact the context and retry once.
- a busy provider does not always answer 429/503: some say "request rate exceeded" with a
  418 or "model is overloaded" with a 400. `says_busy` reads the provider's error type,
  code and message (rate, overloaded, capacity, throttl…), so these are retried too.
- "this model does not support tools" is a capability, not a failure of this request:
  `ToolsUnsupported` lets `runtime.models.tool_support` fall back to plain chat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from runtime.errors import ModelError, TransientModelError


class QuotaExhausted(ModelError):
    """The account's quota or credit is used up: no retry helps until it is topped up or
    the quota resets, so the run fails (or moves to a fallback model) at once."""


class ContextOverflow(ModelError):
    """The prompt is longer than the model reads. Retrying the same prompt or moving to a
    fallback cannot help: the engine compacts the context (runtime.engine.context) and
    retries once; a run that still does not fit fails with this code."""

    error_code = "CONTEXT_OVERFLOW"


class ToolsUnsupported(ModelError):
    """The provider says this model cannot take tool definitions at all."""


#: What providers and OpenAI-compatible servers answer to tool definitions a model cannot
#: take: Ollama "… does not support tools", Bedrock "This model doesn't support tool use.",
#: OpenRouter "No endpoints found that support tool use", vLLM without a tool parser
#: "\"auto\" tool choice requires --enable-auto-tool-choice …", others "tools is not
#: supported" / "tool use is not supported" / "does not support function calling".
_TOOLS_UNSUPPORTED = re.compile(
    r"(does not|doesn't|do not|don't|cannot|can't) support "
    r"(tools|tool use|tool calling|tool calls|function calling)\b(?! in streaming)"
    r"|\b(tools|tool use|tool calling|function calling) (is|are) not supported"
    r"|no endpoints found that support tool use"
    r"|tool choice requires --enable-auto-tool-choice",
    re.IGNORECASE,
)
#: How providers say a prompt is longer than the model reads: OpenAI, Azure, DeepSeek, vLLM
#: and Mistral "maximum context length is N tokens" / code `context_length_exceeded`;
#: Anthropic (and Claude on Bedrock) "prompt is too long: N tokens > M maximum", Bedrock "Input
#: is too long for requested model"; Gemini "The input token count (N) exceeds the maximum
#: number of tokens allowed (M)"; llama.cpp "the request exceeds the available context
#: size"; Groq "Please reduce the length of the messages or completion"; Nova "Input Tokens
#: Exceeded". Only 4xx answers other than 429 are read this way: a tokens-per-minute rate
#: limit ("Request too large … on tokens per min") is a 429 and stays a rate limit.
_CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context length (is )?exceeded"
    r"|prompt is too long|input is too long|input tokens? exceeded|too many input tokens"
    r"|input token count \(?\d*\)? ?exceeds|exceeds the (available )?context (size|window)"
    r"|reduce the length of the (messages|prompt|input)|exceeds? the model'?s? context",
    re.IGNORECASE,
)
#: Credit and spend-limit errors that come without a dedicated code (Anthropic answers a
#: 400 "Your credit balance is too low …" or "You have reached your specified API usage
#: limits …"; OpenRouter and DeepSeek say "Insufficient credits/Balance" with a 402).
_CREDIT_WORDS = re.compile(
    r"credit balance is too low|insufficient (credits|balance|funds)"
    r"|reached your specified api usage limits",
    re.IGNORECASE,
)
#: How providers say "too busy, try again" whatever status they chose: rate limits ("rate
#: limit", "request rate exceeded", "too many requests"), overload ("model is overloaded",
#: Anthropic's `overloaded_error`), capacity ("at capacity", "insufficient capacity") and
#: throttling (Bedrock's `ThrottlingException`). Quota and context errors are read first.
_BUSY_WORDS = re.compile(
    r"rate.?limit|rate (was |is )?exceeded|request rate|too many requests|overload"
    r"|throttl|(at|over|insufficient|no|out of|lack of|exceeded) capacity"
    r"|capacity (is )?(exceeded|constraint|limit|unavailable|reached)",
    re.IGNORECASE,
)
#: Statuses a busy message never turns into a retry: the key, the permission or the model
#: itself is wrong, and waiting cannot change that.
_NEVER_BUSY = frozenset({401, 403, 404})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"


def says_context_overflow(status: int | None, message: str, body: Any = None) -> bool:
    """Does a refused request say the prompt is longer than the model reads?"""
    if (status is not None and not (400 <= status < 500)) or status == 429:
        return False
    code = str(error_object(body).get("code") or "")
    return code == "context_length_exceeded" or bool(_CONTEXT_OVERFLOW.search(message or ""))


def says_busy(
    status: int | None, message: str, body: Any = None, headers: Mapping[str, str] | None = None
) -> bool:
    """Does a refused request say the provider is busy (retry), by its type, code or words?"""
    if status in _NEVER_BUSY:
        return False
    error = error_object(body)
    if str(error.get("code")) in ("429", "503", "529"):  # a gateway passing a busy status on
        return True
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None  # OpenRouter's upstream
    kinds = [error.get("type"), error.get("code"), error.get("status"), raw]
    if isinstance(body, dict):
        kinds += [body.get("type") if body.get("type") != "error" else None, body.get("code")]
    kinds.append((headers or {}).get("x-amzn-errortype"))
    said = " ".join(str(k) for k in kinds if k) + " " + (message or "")
    return bool(_BUSY_WORDS.search(said.replace("_", " ")))


def context_error(provider: str, status: int | None, message: str) -> ContextOverflow:
    return ContextOverflow(
        f"{provider}: the prompt is longer than the model's context window: {message}",
        status=status,
        provider=provider,
    )


def says_tools_unsupported(message: str) -> bool:
    return bool(_TOOLS_UNSUPPORTED.search(message or ""))


def error_object(body: Any) -> dict[str, Any]:
    """The `error` object of an error body in every provider's dialect (Gemini sometimes
    wraps the body in a list), or {}."""
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def google_retry_delay(body: Any) -> float | None:
    """Seconds from the `google.rpc.RetryInfo` detail of a Google error body ("17s",
    "0.5s"), the wait Gemini asks for on a 429 instead of a Retry-After header."""
    for detail in error_object(body).get("details") or []:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            match = _DURATION.match(str(detail.get("retryDelay") or ""))
            if match:
                return float(match.group(1))
    return None


def _daily_or_zero_quota(error: Mapping[str, Any]) -> str | None:
    """The violated Gemini quota that will not clear by waiting seconds: a per-day quota,
    or one whose limit is 0 (the model is not available on this tier at all)."""
    for detail in error.get("details") or []:
        if not isinstance(detail, dict) or detail.get("@type") != _QUOTA_FAILURE:
            continue
        for violation in detail.get("violations") or []:
            quota = str(violation.get("quotaId") or violation.get("quotaMetric") or "")
            if "perday" in quota.lower() or str(violation.get("quotaValue")) == "0":
                return quota
    if "limit: 0" in str(error.get("message") or ""):
        return "limit 0"
    return None


def exhausted_quota(status: int | None, body: Any, message: str) -> str | None:
    """Why the account's quota or credit is used up, or None when it is not (a plain rate
    limit clears within seconds and stays transient)."""
    error = error_object(body)
    codes = {str(error.get("code") or ""), str(error.get("type") or "")}
    if "insufficient_quota" in codes:
        return "insufficient_quota"
    if "billing_error" in codes or status == 402:
        return "billing"
    if str(error.get("status") or "") == "RESOURCE_EXHAUSTED":
        # Gemini says "You exceeded your current quota, please check your plan and
        # billing details" for per-minute limits too: only the violated quota tells.
        quota = _daily_or_zero_quota(error)
        return f"quota {quota}" if quota else None
    if _CREDIT_WORDS.search(message or ""):
        return "credit"
    return None


def quota_error(provider: str, status: int | None, reason: str, message: str) -> QuotaExhausted:
    return QuotaExhausted(
        f"{provider}: the account's quota or billing is exhausted ({reason}), so retrying "
        f"cannot help; top the account up, raise the quota or wait for it to reset. "
        f"The provider said: {message}",
        status=status,
        provider=provider,
    )


def tools_error(provider: str, status: int | None, message: str) -> ToolsUnsupported:
    return ToolsUnsupported(
        f"{provider} answered HTTP {status}: the model cannot call tools: {message}",
        status=status,
        provider=provider,
    )


def classify_http(
    provider: str,
    status: int,
    message: str,
    headers: Mapping[str, str],
    body: Any,
) -> ModelError:
    """The error for an HTTP error answer: quota exhausted, tools unsupported, transient
    (with the wait the body or the headers ask for) or plain."""
    from runtime.models.base import error_for_status, retry_after_seconds

    reason = exhausted_quota(status, body, message)
    if reason:
        return quota_error(provider, status, reason, message)
    if says_context_overflow(status, message, body):
        return context_error(provider, status, message)
    if 400 <= status < 500 and says_tools_unsupported(message):
        return tools_error(provider, status, message)
    error = error_for_status(provider, status, message, headers)
    if not isinstance(error, TransientModelError) and says_busy(status, message, body, headers):
        error = TransientModelError(
            f"{provider} answered HTTP {status} (busy: retried): {message}",
            status=status,
            provider=provider,
            retry_after=retry_after_seconds(headers),
        )
    if isinstance(error, TransientModelError) and error.retry_after is None:
        error.retry_after = google_retry_delay(body)
    return error
