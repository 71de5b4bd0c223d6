"""Sample events in each service's own format (as `sam local generate-event` gives them),
for `agentfn trigger` without `--event`. Fixed, illustrative values; a delivery that must be
new each time (a fresh run) gets a fresh id from the caller (`fresh`)."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

SQS: dict[str, Any] = {
    "Records": [
        {
            "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
            "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
            "body": json.dumps({"text": "Hello from SQS", "thread_id": "t-1"}),
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": "1545082649183",
                "SenderId": "AIDAIENQZJOLO23YVJ4VO",
                "ApproximateFirstReceiveTimestamp": "1545082649185",
            },
            "messageAttributes": {},
            "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:my-queue",
            "awsRegion": "us-east-1",
        }
    ]
}

S3_OBJECT_CREATED: dict[str, Any] = {
    "version": "0",
    "id": "17793124-05d4-b198-2fde-7ededc63b103",
    "detail-type": "Object Created",
    "source": "aws.s3",
    "account": "123456789012",
    "time": "2021-11-12T00:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:s3:::example-bucket"],
    "detail": {
        "version": "0",
        "bucket": {"name": "example-bucket"},
        "object": {
            "key": "incoming/example-key.pdf",
            "size": 5,
            "etag": "b1946ac92492d2347c6235b4d2611184",
            "sequencer": "00617F08299329D189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "PutObject",
    },
}

EVENT: dict[str, Any] = {
    "version": "0",
    "id": "89d1a02d-5ec7-412e-82f5-13505f849b41",
    "detail-type": "OrderPlaced",
    "source": "shop.orders",
    "account": "123456789012",
    "time": "2021-11-12T00:00:00Z",
    "region": "us-east-1",
    "resources": [],
    "detail": {"order_id": "ORD-1001", "total": 189.0},
}

GITHUB_ISSUE: dict[str, Any] = {
    "action": "opened",
    "issue": {"number": 1, "title": "Spelling error in the README file", "body": "…"},
    "repository": {"full_name": "octo-org/octo-repo"},
    "sender": {"login": "octocat"},
}

STRIPE_EVENT: dict[str, Any] = {
    "id": "evt_1NG8Du2eZvKYlo2CUI79vXWy",
    "object": "event",
    "type": "payment_intent.succeeded",
    "data": {"object": {"id": "pi_3NG8Du2eZvKYlo2C0", "amount": 2000, "currency": "usd"}},
}


def sample(kind: str, signature: str | None = None) -> dict[str, Any]:
    """The built-in sample event of a trigger kind (a webhook's: its sender's body)."""
    if kind == "queue":
        return copy.deepcopy(SQS)
    if kind == "s3":
        return copy.deepcopy(S3_OBJECT_CREATED)
    if kind == "event":
        return copy.deepcopy(EVENT)
    if kind == "webhook":
        return copy.deepcopy(STRIPE_EVENT if signature == "stripe" else GITHUB_ISSUE)
    return {}


def fresh() -> str:
    return str(uuid.uuid4())
