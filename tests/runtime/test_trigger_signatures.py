"""Webhook signatures (runtime.triggers.signatures): GitHub, Stripe (with its timestamp
tolerance) and HMAC-SHA256 in a named header; a forged, tampered, stale or missing signature
is refused; every comparison goes through hmac.compare_digest."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import pytest

from runtime.triggers import signatures
from runtime.triggers.signatures import BadSignature, delivery_id, verify

SECRET = "whsec-test-value"
BODY = json.dumps({"id": "evt_1", "issue": {"title": "Broken build"}}).encode()


def _hex(secret: str, data: bytes) -> str:
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def test_github_signature_over_the_raw_body() -> None:
    good = {"X-Hub-Signature-256": "sha256=" + _hex(SECRET, BODY)}
    verify("github", SECRET, BODY, good)
    verify("github", SECRET, BODY, {k.lower(): v for k, v in good.items()})  # any case
    with pytest.raises(BadSignature):
        verify("github", SECRET, BODY + b" ", good)  # tampered body
    with pytest.raises(BadSignature):
        verify("github", "another-secret", BODY, good)
    with pytest.raises(BadSignature):
        verify("github", SECRET, BODY, {"X-Hub-Signature-256": _hex(SECRET, BODY)})  # no sha256=
    with pytest.raises(BadSignature):
        verify("github", SECRET, BODY, {})


def test_stripe_signature_with_its_timestamp_tolerance() -> None:
    now = time.time()
    stamp = int(now)
    header = {"Stripe-Signature": f"t={stamp},v1={_hex(SECRET, f'{stamp}.'.encode() + BODY)}"}
    verify("stripe", SECRET, BODY, header, now=now)
    # A secret being rolled: Stripe sends one v1 per secret; any one may match.
    rolled = {"Stripe-Signature": f"t={stamp},v1={'0' * 64},v1={header['Stripe-Signature'][-64:]}"}
    verify("stripe", SECRET, BODY, rolled, now=now)
    with pytest.raises(BadSignature, match="outside the tolerance"):
        verify("stripe", SECRET, BODY, header, now=now + 301, tolerance=300)
    verify("stripe", SECRET, BODY, header, now=now + 299, tolerance=300)
    with pytest.raises(BadSignature):  # the timestamp is signed: it cannot be moved
        moved = header["Stripe-Signature"].replace(f"t={stamp}", f"t={stamp + 1000}")
        verify("stripe", SECRET, BODY, {"Stripe-Signature": moved}, now=now + 1000)
    with pytest.raises(BadSignature):
        verify("stripe", SECRET, BODY, {"Stripe-Signature": "v1=abc"}, now=now)


def test_hmac_sha256_in_the_named_header() -> None:
    mac = _hex(SECRET, BODY)
    verify("hmac-sha256", SECRET, BODY, {"X-Shop-Signature": mac}, header="X-Shop-Signature")
    verify(
        "hmac-sha256",
        SECRET,
        BODY,
        {"x-shop-signature": "sha256=" + mac},
        header="X-Shop-Signature",
    )
    with pytest.raises(BadSignature):  # right value, another header
        verify("hmac-sha256", SECRET, BODY, {"X-Other": mac}, header="X-Shop-Signature")


def test_an_empty_secret_verifies_nothing() -> None:
    with pytest.raises(BadSignature):
        verify("github", "", BODY, {"X-Hub-Signature-256": "sha256=" + _hex("", BODY)})


def test_every_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def recording(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(signatures.hmac, "compare_digest", recording)
    for kind, headers, extra in [
        ("github", {"X-Hub-Signature-256": "sha256=" + "0" * 64}, {}),
        ("hmac-sha256", {"H": "0" * 64}, {"header": "H"}),
        ("stripe", {"Stripe-Signature": f"t={int(time.time())},v1={'0' * 64}"}, {}),
    ]:
        before = len(calls)
        with pytest.raises(BadSignature):
            verify(kind, SECRET, BODY, headers, **extra)
        assert len(calls) == before + 1, kind


def test_delivery_ids_come_from_the_sender() -> None:
    assert delivery_id("github", BODY, {"X-GitHub-Delivery": "d-1"}, None) == "d-1"
    assert delivery_id("stripe", BODY, {}, None) == "evt_1"
    assert delivery_id("hmac-sha256", BODY, {"X-Id": "42"}, "X-Id") == "42"
    assert delivery_id("hmac-sha256", BODY, {}, None) == ""
