"""AWS event streams on the wire, for tests: frames encoded exactly as AWS sends them
(prelude, typed headers, payload, two CRC32s), answered through botocore's `before-send`
hook, so botocore's own parser decodes them — the client under test is a real one."""

from __future__ import annotations

import binascii
import io
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack("B", len(raw_name)) + raw_name + b"\x07"  # 7: a string value
        + struct.pack(">H", len(raw_value)) + raw_value
    )  # fmt: skip


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message) & 0xFFFFFFFF)


def event(kind: str, body: dict[str, Any]) -> bytes:
    headers = {":message-type": "event", ":event-type": kind, ":content-type": "application/json"}
    return frame(headers, json.dumps(body).encode())


def exception(kind: str, message: str) -> bytes:
    headers = {
        ":message-type": "exception",
        ":exception-type": kind,
        ":content-type": "application/json",
    }
    return frame(headers, json.dumps({"message": message}).encode())


class _Raw(io.BytesIO):
    def stream(self, **_: Any) -> Iterator[bytes]:
        while chunk := self.read(1024):
            yield chunk


def response(request: AWSPreparedRequest, body: bytes, stream: bool = False) -> AWSResponse:
    kind = "application/vnd.amazon.eventstream" if stream else "application/json"
    headers = {"Content-Type": kind, "x-amzn-RequestId": "test-request"}
    return AWSResponse(request.url, 200, headers, _Raw(body))


def answer_with(client: Any, handler: Callable[[AWSPreparedRequest], AWSResponse]) -> None:
    """Every request `client` sends is answered by `handler` instead of the network."""
    client.meta.events.register("before-send", lambda request, **_: handler(request))
