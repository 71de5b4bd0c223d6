"""Watch tokens: the right to watch one run live, issued by the REST API, checked by the
WebSocket API's function.

Connecting to the WebSocket API proves only that a caller may connect. The right to watch a
given run comes from the REST API, where IAM already grants rights per agent
(`GET /agents/{agent}/runs/{run_id}/watch-token`, covered by a grant on `GET
…/agents/billing/runs/*`): it answers a token bound to the run and an expiry, an HMAC-SHA256
under a key only the stack's functions can read (a Secrets Manager secret the stack
generates; its value is never in the template). `subscribe` carries it; a token for another
run, expired, or signed with another key is refused. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
from collections.abc import Callable
from typing import Any

KEY_SECRET_ENV = "AGENTFN_WATCH_KEY_SECRET"  # the secret's ARN (or name, locally)
TOKEN_SECONDS = 300  # time to subscribe with it; the watch then lasts as the connection does
VERSION = "v1"
_MIN_KEY_BYTES = 32


class TokenRefused(ValueError):
    """A token that grants nothing (the message says why, without echoing the token)."""


class NoWatchKey(RuntimeError):
    """The stack's watch key cannot be had: a deployment problem, not the caller's."""


def _mac(key: bytes, run_id: str, expires: int) -> str:
    signed = f"{VERSION}\n{run_id}\n{expires}".encode()
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def issue(key: bytes, run_id: str, now: float | None = None) -> tuple[str, int]:
    """(token, expiry as epoch seconds) for watching `run_id`."""
    expires = int(now if now is not None else time.time()) + TOKEN_SECONDS
    return f"{VERSION}.{expires}.{_mac(key, run_id, expires)}", expires


def verify(key: bytes, token: Any, run_id: str, now: float | None = None) -> None:
    """Raise TokenRefused unless `token` was issued under `key` for `run_id` and is current."""
    if not isinstance(token, str) or not token:
        raise TokenRefused(
            "token: required; get one from GET /runs/{run_id}/watch-token "
            "(or /agents/{agent}/runs/{run_id}/watch-token)"
        )
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != VERSION or not parts[1].isdigit() or len(parts[1]) > 12:
        raise TokenRefused("token: not a watch token")
    expires = int(parts[1])
    if not hmac.compare_digest(parts[2], _mac(key, run_id, expires)):
        raise TokenRefused("token: not valid for this run")
    if expires < (now if now is not None else time.time()):
        raise TokenRefused("token: expired; get a new one")


_cached: dict[str, bytes] = {}


def stack_key(secrets_client: Callable[[], Any]) -> bytes:
    """The stack's watch key, read once per container from the secret KEY_SECRET_ENV names.
    Raise NoWatchKey when this function has none (a template from before watch tokens)."""
    secret = os.environ.get(KEY_SECRET_ENV, "")
    if not secret:
        raise NoWatchKey(f"this stack has no watch key ({KEY_SECRET_ENV} is not set)")
    if secret not in _cached:
        value = secrets_client().get_secret_value(SecretId=secret)["SecretString"]
        key = str(value).encode()
        if len(key) < _MIN_KEY_BYTES:
            raise NoWatchKey("the stack's watch key is too short to sign with")
        _cached[secret] = key
    return _cached[secret]
