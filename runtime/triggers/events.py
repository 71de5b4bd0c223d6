"""An event, in its service's own format, turned into what a triggered run starts from.

Every kind gives the same three things: the event's id (the sender's: a queue message id,
an EventBridge event id, a webhook's delivery id, a schedule's firing time), the scope the
trigger's `input` and `session` templates are rendered with (PROVIDES says which names
each kind has; validation checks the templates against it), and the `trigger` record the
run keeps: `{name, kind, event_id}`.

The run's id derives from (owner, trigger, event id): a redelivered event — SQS is at
least once, webhook senders retry, Scheduler retries a target — finds the run the first
delivery started instead of starting a second one. That derived id is the event's
idempotency key, kept where the run is (no separate record to expire or lose).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from runtime.workflows.template import REF_RE, lookup, render

#: Names each kind provides to templates: "leaf" (a value) or "open" (an object of any shape,
#: so `{body.issue.title}` is allowed below it).
PROVIDES: dict[str, dict[str, str]] = {
    "schedule": {"time": "leaf", "trigger": "leaf"},
    "webhook": {"body": "open", "headers": "open", "delivery_id": "leaf", "trigger": "leaf"},
    "queue": {"body": "open", "message_id": "leaf", "attributes": "open", "trigger": "leaf"},
    "s3": {
        "bucket": "leaf",
        "key": "leaf",
        "size": "leaf",
        "etag": "leaf",
        "time": "leaf",
        "detail": "open",
        "trigger": "leaf",
    },
    "event": {
        "detail": "open",
        "source": "leaf",
        "detail_type": "leaf",
        "id": "leaf",
        "time": "leaf",
        "account": "leaf",
        "region": "leaf",
        "resources": "open",
        "trigger": "leaf",
    },
}
PER_EVENT = "per_event"
#: The key of the payload Scheduler and EventBridge rules send (infra/sam/triggers.py):
#: "agent:NAME/TRIGGER" or "workflow:NAME/TRIGGER".
TARGET_KEY = "agentfn_trigger"


@dataclass
class TriggerEvent:
    kind: str
    event_id: str
    scope: dict[str, Any] = field(default_factory=dict)

    def record(self, name: str) -> dict[str, str]:
        """What the run keeps and shows: `trigger: {name, kind, event_id}`."""
        return {"name": name, "kind": self.kind, "event_id": self.event_id}


def parsed_body(text: str) -> Any:
    """A JSON body as its value (so `{body.issue.title}` reaches inside), else the text."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def from_schedule(payload: dict[str, Any]) -> TriggerEvent:
    """Scheduler's target input (`time`: <aws.scheduler.scheduled-time>): one event per
    firing, whatever the attempt."""
    when = str(payload.get("time") or "")
    if not when:
        raise ValueError("a schedule's event carries its scheduled `time`")
    return TriggerEvent("schedule", when, {"time": when})


def from_webhook(body: str, headers: dict[str, str], delivery_id: str) -> TriggerEvent:
    lowered = {k.lower(): v for k, v in headers.items()}
    scope = {"body": parsed_body(body), "headers": lowered, "delivery_id": delivery_id}
    return TriggerEvent("webhook", delivery_id, scope)


def from_sqs(record: dict[str, Any]) -> TriggerEvent:
    attributes = {
        name: value.get("stringValue")
        for name, value in (record.get("messageAttributes") or {}).items()
        if isinstance(value, dict)
    }
    message_id = str(record["messageId"])
    scope = {
        "body": parsed_body(str(record.get("body") or "")),
        "message_id": message_id,
        "attributes": attributes,
    }
    return TriggerEvent("queue", message_id, scope)


def from_eventbridge(kind: str, event: dict[str, Any]) -> TriggerEvent:
    """An EventBridge event: an S3 `Object Created` one (kind "s3") or any other ("event")."""
    raw = event.get("detail")
    detail: dict[str, Any] = raw if isinstance(raw, dict) else {}
    scope: dict[str, Any] = {
        "detail": detail,
        "time": event.get("time"),
        "source": event.get("source"),
        "detail_type": event.get("detail-type"),
        "id": event.get("id"),
        "account": event.get("account"),
        "region": event.get("region"),
        "resources": event.get("resources") or [],
    }
    if kind == "s3":
        obj = detail.get("object") or {}
        scope.update(
            bucket=(detail.get("bucket") or {}).get("name"),
            key=obj.get("key"),
            size=obj.get("size"),
            etag=obj.get("etag"),
        )
    event_id = str(event.get("id") or "")
    if not event_id:
        raise ValueError("an EventBridge event carries an `id`")
    return TriggerEvent(kind, event_id, scope)


def rendered_input(template: str | dict[str, str], scope: dict[str, Any]) -> Any:
    """The run's input: text, or (a workflow's object input) each value rendered, a lone
    `{ref}` keeping its JSON value."""
    if isinstance(template, str):
        return render(template, scope)
    out: dict[str, Any] = {}
    for key, value in template.items():
        lone = REF_RE.fullmatch(value)
        out[key] = lookup(lone.group(1), scope) if lone else render(value, scope)
    return out


def digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def session_for(session: str, scope: dict[str, Any], owner: str, name: str, event_id: str) -> str:
    """`per_event`: a session of its own, derived from the event (a redelivery joins it);
    a template: rendered (empty: per event); anything else: that fixed id."""
    if session != PER_EVENT and "{" in session:
        rendered = render(session, scope).strip()[:200]
        if rendered:
            return rendered
    elif session != PER_EVENT:
        return session
    return "trg-" + digest("session", owner, name, event_id)[:28]
