"""Triggers on the embedded stack: what `agentfn dev` and `agentfn trigger` run locally.

The same code as deployed, fed the way AWS feeds it:
- `connect` points the real trigger handler (handlers/trigger.py) at the embedded stack's
  RunService and creates the stack's queues (and dead-letter queues, with the template's
  own redrive policy: infra.sam.triggers) on the embedded AWS;
- infra.local.dev_server's `HookBridge` serves `POST /hooks/{agent}/{trigger}` as API
  Gateway would (a proxy event to the trigger handler: the same check, the same answers);
- `Scheduler` fires each schedule when its expression is due, with the input Scheduler
  sends (`--no-schedules` leaves it off), by the wall clock, or by a clock that starts at
  the instant AGENTFN_DEV_SCHEDULE_CLOCK names and runs at the wall clock's pace
  (`schedule_clock`: a test sets it just before a due time instead of waiting for one);
- `QueuePoller` reads the queues as Lambda's event source mapping does: a batch to the
  handler, the messages it reports failed left for SQS to deliver again (and, past their
  receive count, to move to the dead-letter queue), the others deleted.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from infra.sam import triggers as sam_triggers
from runtime.triggers.events import TARGET_KEY
from runtime.triggers.starter import TriggerStarter, queue_name, queue_targets

log = logging.getLogger("agentfn.dev")
LOCAL_QUEUE_PREFIX = "agentfn-local-"
POLL_SECONDS = 0.5
#: An ISO-8601 instant with its offset (`2030-01-01T08:59:58Z`): the dev scheduler's clock
#: starts there, then runs at the wall clock's pace (schedule_clock). Only the scheduler
#: reads it: runs, events and their times keep the wall clock.
CLOCK_ENV = "AGENTFN_DEV_SCHEDULE_CLOCK"


def connect(stack: Any, secret: Any = None) -> dict[str, tuple[str, str]]:
    """Route handlers.trigger to `stack`; create its queues; answer queue URL → target."""
    import handlers.trigger
    from runtime.secrets import SecretResolver

    spec = stack.spec
    starter = TriggerStarter(stack.service, secret or SecretResolver(spec.to_runtime()).value)
    queues = queue_targets(spec, LOCAL_QUEUE_PREFIX)
    handlers.trigger.configure(starter, queues)
    return _create_queues(stack)


def _create_queues(stack: Any) -> dict[str, tuple[str, str]]:
    """The stack's own queues on the embedded AWS, with the template's properties."""
    sqs = stack.clients.make("sqs")
    urls: dict[str, tuple[str, str]] = {}
    for _, owner, triggers in sam_triggers.owners(stack.spec):
        for trigger in triggers:
            if trigger.queue is None or trigger.queue.arn is not None:
                continue  # an existing queue is the user's, in their account
            name = LOCAL_QUEUE_PREFIX + queue_name(owner, trigger.name)
            dlq = sqs.create_queue(QueueName=name + "-dlq")["QueueUrl"]
            dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
            redrive = {
                "deadLetterTargetArn": dlq_arn["Attributes"]["QueueArn"],
                "maxReceiveCount": trigger.queue.max_receives,
            }
            url = sqs.create_queue(
                QueueName=name,
                Attributes={
                    "RedrivePolicy": json.dumps(redrive),
                    "VisibilityTimeout": str(int(trigger.queue.visibility_timeout)),
                },
            )["QueueUrl"]
            urls[url] = (owner, trigger.name)
    return urls


def schedule_payload(owner: str, trigger: str, when: float) -> dict[str, Any]:
    """What Scheduler sends the trigger function (infra.sam.triggers: the schedule's Input)."""
    stamp = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {TARGET_KEY: f"{owner}/{trigger}", "time": stamp}


def schedule_clock(environ: dict[str, str] | None = None) -> Callable[[], float]:
    """The clock the dev scheduler reads: the wall clock, or, when CLOCK_ENV names an
    instant, one that reads that instant now and advances as the wall clock does."""
    value = (os.environ if environ is None else environ).get(CLOCK_ENV, "").strip()
    if not value:
        return time.time
    try:
        start = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        start = None
    if start is None or start.tzinfo is None:
        raise SystemExit(
            f"{CLOCK_ENV}={value!r}: not an ISO-8601 instant with its offset "
            "(for example 2030-01-01T08:59:58Z)"
        )
    origin, began = start.timestamp(), time.monotonic()
    return lambda: origin + (time.monotonic() - began)


class Scheduler:
    """Fires every schedule trigger when due, once per due time."""

    def __init__(self, spec: Any, clock: Any = time.time):
        from runtime.triggers.schedule import next_fire

        self._next_fire = next_fire
        self.clock = clock
        self.due: dict[tuple[str, str], float | None] = {}
        now = clock()
        for _, owner, triggers in sam_triggers.owners(spec):
            for t in triggers:
                if t.schedule is not None:
                    self.due[(owner, t.name)] = next_fire(t.schedule, t.timezone, now)
        self.schedules = {
            (owner, t.name): t
            for _, owner, triggers in sam_triggers.owners(spec)
            for t in triggers
            if t.schedule is not None
        }

    def tick(self) -> list[str]:
        """Fire what is due now; the ids of the runs started."""
        import handlers.trigger

        started = []
        now = self.clock()
        for key, when in list(self.due.items()):
            if when is None or when > now:
                continue
            config = self.schedules[key]
            self.due[key] = self._next_fire(str(config.schedule), config.timezone, when)
            try:
                answer = handlers.trigger.handle(schedule_payload(key[0], key[1], when))
                started.append(str(answer.get("run_id") or answer.get("workflow_run_id")))
                print(f"schedule {key[0]}/{key[1]} fired: run {started[-1]}", file=sys.stderr)
            except Exception:
                log.exception("schedule %s/%s: the run did not start", *key)
        return started


class QueuePoller:
    """Reads the stack's queues as an event source mapping with ReportBatchItemFailures."""

    def __init__(self, sqs: Any, queues: dict[str, tuple[str, str]], batch: dict[str, int]):
        self.sqs, self.queues, self.batch = sqs, queues, batch

    def poll(self) -> int:
        """One receive per queue; the number of messages handed to the function."""
        import handlers.trigger

        handed = 0
        for url in self.queues:
            got = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=self.batch.get(url, 1),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not got:
                continue
            handed += len(got)
            arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
            event = {"Records": [sqs_record(m, arn["Attributes"]["QueueArn"]) for m in got]}
            try:
                failed = {
                    f["itemIdentifier"] for f in handlers.trigger.handle(event)["batchItemFailures"]
                }
            except Exception:  # the whole batch failed: every message comes back
                log.exception("queue %s: the batch failed", url)
                failed = {m["MessageId"] for m in got}
            for message in got:
                if message["MessageId"] in failed:  # visible again now (locally: no wait)
                    self.sqs.change_message_visibility(
                        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
                else:
                    self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return handed


def sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A received message as Lambda's SQS event gives it."""
    attributes = {
        name: {
            "stringValue": value.get("StringValue"),
            "dataType": value.get("DataType", "String"),
        }
        for name, value in (message.get("MessageAttributes") or {}).items()
    }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": message.get("Attributes") or {},
        "messageAttributes": attributes,
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def start(stack: Any, stop: threading.Event, *, schedules: bool = True) -> None:
    """`agentfn dev`: connect the triggers, then fire schedules and poll queues until `stop`."""
    if not sam_triggers.owners(stack.spec):
        return
    queues = connect(stack)
    for url, (owner, name) in queues.items():
        print(f"trigger {owner}/{name} reads {url}", file=sys.stderr, flush=True)
    batch = {url: _batch_size(stack.spec, *target) for url, target in queues.items()}
    poller = QueuePoller(stack.clients.make("sqs"), queues, batch)
    scheduler = Scheduler(stack.spec, schedule_clock()) if schedules else None

    def loop() -> None:
        while not stop.wait(POLL_SECONDS):
            if scheduler is not None:
                scheduler.tick()
            try:
                poller.poll()
            except Exception:
                log.exception("polling the trigger queues failed")

    threading.Thread(target=loop, name="agentfn-triggers", daemon=True).start()


def _batch_size(spec: Any, owner: str, trigger: str) -> int:
    from runtime.triggers.starter import find_trigger

    queue = find_trigger(spec, owner, trigger)[1].queue
    return queue.batch_size if queue is not None else 1
