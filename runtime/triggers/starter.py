"""Events into runs: the one place a trigger starts anything, through the same
`RunService.start` (and `WorkflowService.start`) the API uses.

Used by the deployed trigger function (handlers/trigger.py), `agentfn dev` (its webhook
routes and its scheduler) and `agentfn trigger`. Each entry takes an event in its
service's own format:

- `webhook`: the route's raw body and headers; the signature is checked first (401 and
  nothing starts without a valid one), then the delivery id names the run (a redelivery
  answers the first run);
- `sqs`: an SQS batch; the answer lists the messages whose run could not start
  (`batchItemFailures`), which SQS delivers again and, after `max_receives`, parks in
  the dead-letter queue;
- `target`: what Scheduler and EventBridge rules send (`{"agentfn_trigger": …, …}`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.errors import InvalidRequest
from runtime.naming import agent_tag
from runtime.triggers import events as ev
from runtime.triggers.signatures import (
    MAX_WEBHOOK_BYTES,
    BadSignature,
    delivery_id,
    verify,
)

if TYPE_CHECKING:
    from runtime.service import RunService
    from runtime.spec.plain import TriggerConfig

log = logging.getLogger("agentfn.triggers")

Answer = tuple[int, dict[str, Any]]


def owner_of(spec: Any, name: str) -> str:
    """`agent` or `workflow`: which of the spec's sections `name` is (agents first)."""
    if name in spec.agents:
        return "agent"
    if name in spec.workflows:
        return "workflow"
    raise InvalidRequest(f"no agent or workflow named {name!r}", field="agent", not_found=True)


def find_trigger(spec: Any, name: str, trigger: str) -> tuple[str, TriggerConfig]:
    kind = owner_of(spec, name)
    config = spec.agents[name] if kind == "agent" else spec.workflows[name]
    for candidate in config.triggers:
        if candidate.name == trigger:
            return kind, candidate
    known = ", ".join(t.name for t in config.triggers) or "none"
    message = f"{kind} {name!r} has no trigger {trigger!r} (its triggers: {known})"
    raise InvalidRequest(message, field="trigger", not_found=True)


def queue_name(owner: str, trigger: str) -> str:
    """The part after the stack prefix of a queue the stack creates for a trigger (SQS
    names stop at 80 characters: a digest, not the names)."""
    return "trg-" + ev.digest("queue", owner, trigger)[:20]


def run_id_for(owner_kind: str, owner: str, trigger: str, event_id: str) -> str:
    """The run's id, from its event: the idempotency key of a triggered start. It starts
    with the agent's (or workflow's) tag, as every run id does, so IAM scopes it."""
    if owner_kind == "workflow":
        from runtime.workflows.records import workflow_tag

        tag = workflow_tag(owner)
    else:
        tag = agent_tag(owner)
    return tag + ev.digest("run", owner_kind, owner, trigger, event_id)[:24]


class TriggerStarter:
    def __init__(
        self,
        runs: RunService,
        secret: Callable[[str], str] | None = None,
        workflows: Any = None,
    ):
        self.runs = runs
        self.spec = runs.engine.spec
        self._secret = secret
        self._workflows = workflows

    # ---- one event ---------------------------------------------------------------------

    def start(self, owner: str, trigger: str, event: ev.TriggerEvent) -> Answer:
        """Start (or find, for a redelivery) the run of `owner`'s `trigger` for `event`."""
        owner_kind, config = find_trigger(self.spec, owner, trigger)
        if config.kind != event.kind:
            raise InvalidRequest(
                f"trigger {trigger!r} is a {config.kind} trigger, not {event.kind}",
                field="trigger",
            )
        scope = {**event.scope, "trigger": trigger}
        given = ev.rendered_input(config.input, scope)
        record = event.record(trigger)
        run_id = run_id_for(owner_kind, owner, trigger, event.event_id)
        if owner_kind == "workflow":
            workflows = self._workflow_service()
            view = workflows.start(owner, given, workflow_run_id=run_id, trigger=record)
            return 202, view
        session = ev.session_for(config.session, scope, owner, trigger, event.event_id)
        return self.runs.start(owner, str(given), session, 0, run_id=run_id, trigger=record)

    def _workflow_service(self) -> Any:
        if self._workflows is None:
            from runtime.workflows.service import WorkflowService

            self._workflows = WorkflowService(self.runs)
        return self._workflows

    # ---- the three shapes events arrive in -------------------------------------------

    def webhook(
        self, owner: str, trigger: str, body: bytes, headers: dict[str, str], request_id: str
    ) -> Answer:
        """POST /hooks/{owner}/{trigger}: 202 with the run, 401 for a bad signature, 404
        for no such webhook trigger, 413 for a body over MAX_WEBHOOK_BYTES."""
        if len(body) > MAX_WEBHOOK_BYTES:
            message = f"body over {MAX_WEBHOOK_BYTES} bytes"
            return 413, {"error_code": "TOO_LARGE", "error_message": message}
        try:
            _, config = find_trigger(self.spec, owner, trigger)
        except InvalidRequest as exc:
            return 404, {"error_code": "NOT_FOUND", "error_message": str(exc)}
        hook = config.webhook
        if hook is None:
            message = f"trigger {trigger!r} is not a webhook"
            return 404, {"error_code": "NOT_FOUND", "error_message": message}
        secret = self._secret_value(hook.secret)
        try:
            verify(
                hook.signature,
                secret,
                body,
                headers,
                header=hook.header,
                tolerance=hook.tolerance,
            )
        except BadSignature as exc:
            log.warning("webhook %s/%s refused: %s", owner, trigger, exc)
            return 401, {"error_code": "BAD_SIGNATURE", "error_message": "invalid signature"}
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return 400, {"error_code": "INVALID_REQUEST", "error_message": "body: not UTF-8"}
        delivery = delivery_id(hook.signature, body, headers, hook.id_header) or request_id
        status, answer = self.start(owner, trigger, ev.from_webhook(text, headers, delivery))
        return (202 if status == 200 else status), answer

    def _secret_value(self, reference: str) -> str:
        from runtime.spec.shared import secret_names

        if self._secret is None:
            raise RuntimeError("no secret resolver: webhooks cannot be verified")
        return self._secret(secret_names(reference)[0])

    def sqs(self, batch: dict[str, Any], queues: dict[str, tuple[str, str]]) -> dict[str, Any]:
        """An SQS batch; `queues`: queue ARN (or name) → (owner, trigger). A message whose
        run could not start is reported failed, so SQS retries it (and, in the end, parks it
        in the dead-letter queue): nothing is lost and nothing is swallowed."""
        failures = []
        for record in batch.get("Records") or []:
            arn = str(record.get("eventSourceARN") or "")
            target = queues.get(arn) or queues.get(arn.rpartition(":")[2])
            try:
                if target is None:
                    raise LookupError(f"no trigger reads queue {arn}")
                self.start(target[0], target[1], ev.from_sqs(record))
            except Exception:
                log.exception("message %s: its run did not start", record.get("messageId"))
                failures.append({"itemIdentifier": record.get("messageId")})
        return {"batchItemFailures": failures}

    def target(self, payload: dict[str, Any]) -> Answer:
        """What a schedule or an EventBridge rule sends: `{"agentfn_trigger": "OWNER/NAME",
        "time": …}` (Scheduler) or `{…, "event": <the EventBridge event>}` (rules)."""
        owner, _, trigger = str(payload.get(ev.TARGET_KEY) or "").partition("/")
        _, config = find_trigger(self.spec, owner, trigger)
        if config.kind == "schedule":
            return self.start(owner, trigger, ev.from_schedule(payload))
        if config.kind in ("s3", "event"):
            return self.start(owner, trigger, ev.from_eventbridge(config.kind, payload["event"]))
        raise InvalidRequest(f"trigger {trigger!r} is a {config.kind} trigger", field="trigger")


def queue_targets(spec: Any, prefix: str) -> dict[str, tuple[str, str]]:
    """Queue ARN or name → (owner, trigger) for every queue trigger of the spec: an existing
    queue by its ARN, a created one by its name (`prefix` + queue_name)."""
    found: dict[str, tuple[str, str]] = {}
    for section in (spec.agents, spec.workflows):
        for owner, config in section.items():
            for trigger in config.triggers:
                if trigger.queue is None:
                    continue
                key = trigger.queue.arn or prefix + queue_name(owner, trigger.name)
                found[key] = (owner, trigger.name)
    return found
