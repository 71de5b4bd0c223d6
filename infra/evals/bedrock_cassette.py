"""Bedrock's side of the cassettes: a `before-send` hook on the model's own boto3 client,
so botocore signs, serializes and parses exactly as in a live run. Recording sends the
signed request itself and keeps the exchange; replaying answers from the cassette."""

from __future__ import annotations

from typing import Any

from infra.evals.cassettes import Cassette, Replayer, _body, body_bytes, keep, request_record


class _Raw:
    def __init__(self, payload: bytes):
        self.payload = payload

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        yield self.payload


def bedrock_client(cassette: Cassette, model: str, repetition: int, config: Any) -> Any:
    """A bedrock-runtime client configured as the adapter configures its own, with the
    cassette answering (or recording) every request before it would be sent."""
    import boto3
    from botocore.awsrequest import AWSResponse
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        region_name=config.region,
        config=Config(read_timeout=config.timeout, retries={"total_max_attempts": 1}),
    )
    if cassette.recording:
        with cassette._lock:
            while len(cassette.repetitions) <= repetition:
                cassette.repetitions.append([])
        into = cassette.repetitions[repetition]
    else:
        recorded = (
            cassette.repetitions[repetition % len(cassette.repetitions)] if cassette.exists else []
        )
        replayer = Replayer(cassette, model, recorded, repetition)

    def answer(request: Any, **_: Any) -> Any:
        body = request.body or b""
        content = body if isinstance(body, bytes) else str(body).encode("utf-8")
        now = request_record(model, request.method, request.url, request.headers, content)
        if not cassette.recording:
            got = replayer.match(now)
            return AWSResponse(
                request.url, got["status"], got["headers"], _Raw(body_bytes(got["body"]))
            )
        from botocore.httpsession import URLLib3Session

        sent = URLLib3Session().send(request)
        payload = sent.content
        headers = {k: v for k, v in sent.headers.items() if k.lower() != "content-length"}
        response = {
            "status": sent.status_code,
            "headers": headers,
            "body": _body(payload, str(sent.headers.get("content-type", ""))),
        }
        secrets = [str(v) for k, v in request.headers.items() if k.lower() == "authorization"]
        keep(cassette, into, now, response, secrets)
        return AWSResponse(request.url, sent.status_code, headers, _Raw(payload))

    client.meta.events.register_first("before-send.bedrock-runtime", answer)
    _without_moto(client)
    return client


def _without_moto(client: Any) -> None:
    """botocore asks every `before-send` handler, not only until one answers; offline,
    moto's (on every client made while it runs) would refuse Converse after the cassette
    answered. The cassette alone answers this client."""
    try:
        from moto.core.models import botocore_stubber
    except ImportError:  # moto is not installed: nothing else answers
        return
    client.meta.events.unregister("before-send", botocore_stubber)
