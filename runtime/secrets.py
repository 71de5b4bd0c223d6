"""Resolve `${secret:NAME}` references at run time; values are cached per warm container
and never logged.

Order: an environment override `AGENTFN_SECRET_<NAME>` (NAME upper-cased, non-alphanumerics
as `_`; for local runs and tests), then Secrets Manager or SSM Parameter Store as the spec
declares (boto3, imported and its client made only when a secret is first needed; each value
is read again after CACHE_SECONDS). Two boto3 calls do not need Powertools Parameters, whose
layer only the API function takes (infra.sam.layers): an agent that reads a secret ships
without it.

Every value resolved is remembered for the life of the process, whichever resolver read
it (the engine builds one per model and one for tools), so one Redactor covers every secret
the process could have sent anywhere: `redactor()` / `redact()` here or on any resolver.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from runtime.errors import SecretUnavailable as SecretUnavailable  # raised here; callers import it
from runtime.redaction import RedactingFilter, Redactor
from runtime.spec.plain import AgentfnSpec
from runtime.spec.shared import SECRET_REF_RE

CACHE_SECONDS = 300


def env_name(name: str) -> str:
    return "AGENTFN_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


_fetched: dict[tuple[str, str], tuple[float, str]] = {}  # (source, id) → (read again at, value)
_clients: dict[str, Any] = {}
_fetch_lock = threading.Lock()


def forget_fetched() -> None:
    """Read every secret again, with new clients: a copy restored from a snapshot (Lambda
    SnapStart) cannot trust a cache expiring on `time.monotonic()` taken before it."""
    with _fetch_lock:
        _fetched.clear()
        _clients.clear()


def _fetch_from_aws(source: str, target: str) -> str:
    """A secret's or a SecureString parameter's value, cached for CACHE_SECONDS."""
    now = time.monotonic()
    with _fetch_lock:
        cached = _fetched.get((source, target))
        if cached is not None and cached[0] > now:
            return cached[1]
        client = _clients.get(source)
        if client is None:
            import boto3

            service = "ssm" if source == "ssm" else "secretsmanager"
            client = _clients[source] = boto3.client(service)
    if source == "ssm":
        value = str(client.get_parameter(Name=target, WithDecryption=True)["Parameter"]["Value"])
    else:
        answer = client.get_secret_value(SecretId=target)
        binary = answer.get("SecretBinary")
        value = str(answer["SecretString"]) if binary is None else binary.decode("utf-8")
    with _fetch_lock:
        _fetched[(source, target)] = (now + CACHE_SECONDS, value)
    return value


_lock = threading.Lock()
_resolved: dict[str, None] = {}  # insertion-ordered set of every value resolved
_current = Redactor()


def remember(value: str) -> None:
    """Add a value to the process's redaction set; the Redactor is rebuilt only when the
    value is new, which happens once per secret (and per rotation) in a warm container."""
    global _current
    if not value or value in _resolved:
        return
    with _lock:
        if value not in _resolved:
            _resolved[value] = None
            _current = Redactor(_resolved)


def redactor() -> Redactor:
    """The Redactor over every secret value this process has resolved so far."""
    return _current


def redact(value: Any) -> Any:
    """`value` (text or a nested JSON-able value) with every resolved secret redacted."""
    return _current.redact(value)


def forget_all() -> None:
    """Drop every remembered value (tests that must not see each other's secrets)."""
    global _current
    with _lock:
        _resolved.clear()
        _current = Redactor()
    with _fetch_lock:
        _fetched.clear()
        _clients.clear()


class SecretResolver:
    def __init__(self, spec: AgentfnSpec, fetch: Callable[[str, str], str] = _fetch_from_aws):
        self._spec = spec
        self._fetch = fetch

    def value(self, name: str) -> str:
        value = self._read(name)
        remember(value)
        return value

    def _read(self, name: str) -> str:
        override = os.environ.get(env_name(name))
        if override is not None:
            return override
        config = self._spec.secrets.get(name)
        if config is None:
            raise SecretUnavailable(f"secret {name!r} is not declared")
        try:
            return self._fetch(config.source, config.name or name)
        except Exception as exc:  # never include the value; the name is fine
            raise SecretUnavailable(
                f"secret {name!r} could not be read from {config.source} "
                f"(set {env_name(name)} to provide it locally): {type(exc).__name__}"
            ) from None

    def __call__(self, text: str) -> str:
        return SECRET_REF_RE.sub(lambda m: self.value(m.group(1)), text)

    def redactor(self) -> Redactor:
        """Every secret resolved in this process so far (by any resolver), every spelling."""
        return redactor()

    def redact(self, value: Any) -> Any:
        """`value` (text, or dicts and lists of them) with every resolved secret redacted."""
        return redact(value)


def protect_logs(*loggers: logging.Logger) -> None:
    """Redact every resolved secret from what these loggers' handlers write (the root
    logger's, by default: Lambda's own handler, so every library's records are covered).
    Idempotent: a warm container calls it on every cold start path without stacking."""
    for logger in loggers or (logging.getLogger(),):
        for handler in logger.handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter(redactor))
