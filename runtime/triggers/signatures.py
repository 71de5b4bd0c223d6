"""Webhook signatures: the route has no IAM auth, so a request is believed only when it is
signed with the trigger's secret. Every comparison is constant-time (hmac.compare_digest).

- github: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`; delivery id in
  `X-GitHub-Delivery`.
- stripe: `Stripe-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "t.body">[,v1=…]`; the
  timestamp must be within the tolerance (a captured request cannot be replayed later);
  the delivery id is the event's `id` in the body.
- hmac-sha256: the hex HMAC-SHA256 of the raw body (optionally `sha256=`-prefixed) in the
  configured header; the delivery id in `id_header` when set.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

#: Bodies larger than this are refused before any work (413): GitHub's own cap is 25 MB, but
#: what a trigger renders into a run's input is bounded like the API's (1 MB).
MAX_WEBHOOK_BYTES = 1024 * 1024


class BadSignature(Exception):
    """The request is not signed with the trigger's secret (answered 401, nothing starts).
    The message says what was wrong without echoing anything secret."""


def _mac(secret: str, data: bytes) -> str:
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def _header(headers: dict[str, str], name: str) -> str:
    wanted = name.lower()
    return next((v for k, v in headers.items() if k.lower() == wanted), "")


def verify(
    kind: str,
    secret: str,
    body: bytes,
    headers: dict[str, str],
    *,
    header: str | None = None,
    tolerance: float = 300.0,
    now: float | None = None,
) -> None:
    """Raise BadSignature unless `body` is signed with `secret` the way `kind` signs."""
    if not secret:
        raise BadSignature("the trigger's secret is empty")
    if kind == "github":
        given = _header(headers, "X-Hub-Signature-256")
        if not given.startswith("sha256="):
            raise BadSignature("X-Hub-Signature-256 is missing or not sha256=…")
        if not hmac.compare_digest(given[7:].encode(), _mac(secret, body).encode()):
            raise BadSignature("X-Hub-Signature-256 does not match")
        return
    if kind == "stripe":
        _verify_stripe(secret, body, _header(headers, "Stripe-Signature"), tolerance, now)
        return
    if kind == "hmac-sha256":
        given = _header(headers, header or "")
        given = given[7:] if given.startswith("sha256=") else given
        if not given or not hmac.compare_digest(given.encode(), _mac(secret, body).encode()):
            raise BadSignature(f"{header} is missing or does not match")
        return
    raise BadSignature(f"unknown signature kind {kind!r}")


def _verify_stripe(
    secret: str, body: bytes, value: str, tolerance: float, now: float | None
) -> None:
    parts = [p.split("=", 1) for p in value.split(",") if "=" in p]
    stamps = [v for k, v in parts if k.strip() == "t"]
    signatures = [v.strip() for k, v in parts if k.strip() == "v1"]
    if not stamps or not signatures or not stamps[0].strip().isdigit():
        raise BadSignature("Stripe-Signature is missing or malformed")
    stamp = int(stamps[0].strip())
    expected = _mac(secret, f"{stamp}.".encode() + body).encode()
    if not any(hmac.compare_digest(s.encode(), expected) for s in signatures):
        raise BadSignature("Stripe-Signature does not match")
    if abs((time.time() if now is None else now) - stamp) > tolerance:
        raise BadSignature("Stripe-Signature's timestamp is outside the tolerance")


def delivery_id(kind: str, body: bytes, headers: dict[str, str], id_header: str | None) -> str:
    """The sender's id of this delivery ("" when it has none): a redelivery carries the
    same one, so it starts no second run."""
    if id_header:
        return _header(headers, id_header)[:200]
    if kind == "github":
        return _header(headers, "X-GitHub-Delivery")[:200]
    if kind == "stripe":
        try:
            event: Any = json.loads(body)
        except ValueError:
            return ""
        return str(event.get("id") or "")[:200] if isinstance(event, dict) else ""
    return ""


def sign(
    kind: str, secret: str, body: bytes, now: float | None = None, header: str | None = None
) -> dict[str, str]:
    """The headers a sender of `kind` would add (for `agentfn trigger` and the tests)."""
    if kind == "github":
        return {"X-Hub-Signature-256": "sha256=" + _mac(secret, body)}
    if kind == "stripe":
        stamp = int(time.time() if now is None else now)
        mac = _mac(secret, f"{stamp}.".encode() + body)
        return {"Stripe-Signature": f"t={stamp},v1={mac}"}
    return {header or "X-Signature": _mac(secret, body)}
