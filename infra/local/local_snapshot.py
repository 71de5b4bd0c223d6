"""Compacting the local state's request log (infra.local.local_state) into a snapshot.

The log grows with every write and is replayed by every process that opens it, so a long
history would slow each `agentfn run` down. Past `COMPACT_AFTER` bytes, the process that
opens the state (holding the lock, caught up) rewrites the log as the fewest requests that
rebuild what moto holds now: each table created as it is described (indexes and TTL
included), its items in BatchWriteItem requests of 25, each bucket and its objects. The
requests are made by botocore itself (serialized by a client that sends nothing), so they
are replayed exactly like the ones logged live. The new log replaces the old one with an
atomic rename; a process that had the old one open sees the file change under it (another
inode), empties its moto tables and buckets and replays the new one from the start.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Rewrite the log at start once it is this large (a few dozen team runs).
COMPACT_AFTER = 4 * 1024 * 1024
ACCOUNT = "123456789012"
REGION = "us-east-1"
BATCH = 25


def body_field(body: bytes) -> dict[str, str]:
    """A request's body as text where it is text (DynamoDB's JSON: the log stays readable),
    else as base64."""
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode()}


class _Captured(Exception):
    def __init__(self, request: Any):
        self.request = request


def _capturing(service: str) -> Any:
    """A client whose requests are captured, not sent (the first before-send handler)."""
    import boto3

    client = boto3.client(
        service,
        region_name=REGION,
        endpoint_url="http://127.0.0.1:1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        aws_session_token=None,
    )

    def capture(request: Any, **_: Any) -> None:
        raise _Captured(request)

    client.meta.events.register_first("before-send", capture)
    return client


def _record(call: Any, **kwargs: Any) -> dict[str, Any]:
    from urllib.parse import urlsplit

    try:
        call(**kwargs)
    except _Captured as captured:
        request = captured.request
        url = urlsplit(request.url)
        body = request.body or b""
        if hasattr(body, "read"):
            body = body.read()
        if isinstance(body, str):
            body = body.encode()
        headers = {
            "HTTP_" + k.upper().replace("-", "_"): (v.decode() if isinstance(v, bytes) else v)
            for k, v in request.headers.items()
        }
        headers.pop("HTTP_CONTENT_LENGTH", None)
        headers.setdefault("HTTP_HOST", url.netloc)  # urllib3 would add it when sending
        if "HTTP_CONTENT_TYPE" in headers:
            headers["CONTENT_TYPE"] = headers.pop("HTTP_CONTENT_TYPE")
        return {
            "method": request.method,
            "path": url.path or "/",
            "query": url.query,
            "headers": headers,
            **body_field(bytes(body)),
        }
    raise RuntimeError("the request was sent instead of captured")


def snapshot_records() -> Iterator[dict[str, Any]]:
    """The requests that rebuild the DynamoDB tables and S3 buckets moto holds now."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends

    dynamodb = _capturing("dynamodb")
    backend = dynamodb_backends[ACCOUNT][REGION]
    for name, table in list(backend.tables.items()):
        described = table.describe(base_key="Table")["Table"]
        create: dict[str, Any] = {
            "TableName": name,
            "AttributeDefinitions": described["AttributeDefinitions"],
            "KeySchema": described["KeySchema"],
            "BillingMode": described.get("BillingModeSummary", {}).get(
                "BillingMode", "PAY_PER_REQUEST"
            ),
        }
        indexes = [
            {k: i[k] for k in ("IndexName", "KeySchema", "Projection")}
            for i in described.get("GlobalSecondaryIndexes", [])
        ]
        if indexes:
            create["GlobalSecondaryIndexes"] = indexes
        yield _record(dynamodb.create_table, **create)
        ttl = backend.describe_time_to_live(name)
        if ttl.get("TimeToLiveStatus") == "ENABLED" and ttl.get("AttributeName"):
            spec = {"Enabled": True, "AttributeName": ttl["AttributeName"]}
            update = dynamodb.update_time_to_live
            yield _record(update, TableName=name, TimeToLiveSpecification=spec)
        items = [item.to_json()["Attributes"] for item in table.all_items()]
        for start in range(0, len(items), BATCH):
            puts = [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH]]
            yield _record(dynamodb.batch_write_item, RequestItems={name: puts})
    s3 = _capturing("s3")
    for name, bucket in list(s3_backends[ACCOUNT]["global"].buckets.items()):
        yield _record(s3.create_bucket, Bucket=name)
        for key_name, key in list(bucket.keys.items()):
            stored = dict(key.metadata)  # moto keeps the object's headers here
            extra: dict[str, Any] = {}
            if stored.get("content-type"):
                extra["ContentType"] = stored["content-type"]
            meta = {k[11:]: v for k, v in stored.items() if k.startswith("x-amz-meta-")}
            if meta:
                extra["Metadata"] = meta
            yield _record(s3.put_object, Bucket=name, Key=key_name, Body=key.value, **extra)


def write_snapshot(path: Path) -> int:
    """Replace the log at `path` with the snapshot (fsync'd, then renamed into place)."""
    temporary = path.with_name(path.name + ".compacting")
    with open(temporary, "wb") as out:
        for record in snapshot_records():
            out.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return os.stat(path).st_size


def empty_backends() -> None:
    """Forget moto's DynamoDB and S3 state in this process (before replaying a new log)."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.s3.models import s3_backends

    dynamodb_backends[ACCOUNT][REGION].reset()
    s3_backends[ACCOUNT]["global"].reset()
