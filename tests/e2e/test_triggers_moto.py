"""Triggers on the embedded stack (moto): the real trigger handler, the real state machines.

A queue message whose run cannot start is retried by SQS and parked in the dead-letter queue
(the queue made with the template's redrive policy, read as an event source mapping reads
it); a duplicate delivery starts one run; a triggered run records `trigger: {name, kind,
event_id}` in its result, its events and its notifications; one that needs a person says so
on EventBridge and waits for the reply (seed 000's pattern)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import handlers.trigger
from infra.checks.validate import validate_file
from infra.local import dev_triggers
from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.errors import RunNotFound
from runtime.spec import AgentfnSpec
from runtime.triggers.starter import run_id_for
from tests.helpers import wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "triggers" / "agents.yaml"
SPEC: AgentfnSpec = validate_file(FIXTURE).spec  # type: ignore[assignment]
SECRETS = {"gh-hook": "gh-test-secret", "stripe-hook": "stripe-test-secret"}


class RecordingEvents:
    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.extend(Entries)
        return {"FailedEntryCount": 0}


@pytest.fixture
def stack() -> Iterator[tuple[EmbeddedStack, dict[str, tuple[str, str]]]]:
    with embedded_aws() as clients:
        built = EmbeddedStack(SPEC, clients)
        built.set_events(RecordingEvents())
        queues = dev_triggers.connect(built, SECRETS.__getitem__)
        try:
            yield built, queues
        finally:
            handlers.trigger.configure(None)


def _finished(stack: EmbeddedStack, run_id: str, status: str = "succeeded") -> dict[str, Any]:
    store = stack.service.engine.store
    wait_for(lambda: store.load_head(run_id).status == status, what=status)
    return stack.service.get(run_id)


def test_a_message_whose_run_cannot_start_is_retried_then_parked_in_the_dlq(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, queues = stack
    sqs = built.clients.make("sqs")
    (url,) = queues
    poller = dev_triggers.QueuePoller(sqs, queues, {url: 1})
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"text": "restock aisle 4"}))
    # The runs' table is gone: no run can be recorded, so none can start.
    built.clients.dynamodb.delete_table(TableName=built.clients.table)
    handed = [poller.poll() for _ in range(6)]
    assert handed[:3] == [1, 1, 1]  # max_receives: 3 deliveries, each reported failed
    assert sum(handed) == 3  # then SQS moved it to the DLQ: nothing more to deliver
    dlq_url = sqs.get_queue_url(QueueName=url.rsplit("/", 1)[1] + "-dlq")["QueueUrl"]
    parked = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10).get("Messages", [])
    assert [json.loads(m["Body"]) for m in parked] == [{"text": "restock aisle 4"}]
    assert not sqs.receive_message(QueueUrl=url).get("Messages")


def test_a_queue_message_starts_a_run_and_a_duplicate_delivery_starts_none(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, queues = stack
    sqs = built.clients.make("sqs")
    (url,) = queues
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"text": "hello"}))
    got = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    event = {"Records": [dev_triggers.sqs_record(got[0], arn["Attributes"]["QueueArn"])]}
    assert handlers.trigger.handle(event) == {"batchItemFailures": []}
    run_id = run_id_for("agent", "support", "inbox", got[0]["MessageId"])
    first = _finished(built, run_id)
    assert first["trigger"] == {"name": "inbox", "kind": "queue", "event_id": got[0]["MessageId"]}
    # SQS delivers at least once: the same message again is the same run, not a second.
    store = built.service.engine.store
    version = store.load_head(run_id).version
    assert handlers.trigger.handle(event) == {"batchItemFailures": []}
    assert store.session_runs("support", first["session_id"]) == [run_id]
    assert store.load_head(run_id).version == version  # the finished run is untouched
    events = store.list_events(run_id)
    started = [e for e in events if e.type == "run_started"]
    assert len(started) == 1 and started[0].data["trigger"]["kind"] == "queue"
    assert started[0].data["input"] == '{"text":"hello"}'


def _signed(body: bytes, delivery: str, secret: str = SECRETS["gh-hook"]) -> dict[str, Any]:
    mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "httpMethod": "POST",
        "path": "/hooks/support/github",
        "pathParameters": {"agent": "support", "trigger": "github"},
        "headers": {"X-Hub-Signature-256": f"sha256={mac}", "X-GitHub-Delivery": delivery},
        "body": body.decode(),
        "isBase64Encoded": False,
        "requestContext": {"requestId": str(uuid.uuid4())},
    }


def test_a_webhook_is_verified_and_deduplicated_by_its_delivery_id(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, _ = stack
    body = json.dumps({"action": "opened", "issue": {"title": "Login is broken"}}).encode()
    forged = _signed(body, "d-1", secret="not-the-secret")
    answer = handlers.trigger.handle(forged)
    assert answer["statusCode"] == 401
    assert "gh-test-secret" not in answer["body"]
    with pytest.raises(RunNotFound):  # nothing started
        built.service.engine.store.load_head(run_id_for("agent", "support", "github", "d-1"))
    first = handlers.trigger.handle(_signed(body, "d-1"))
    assert first["statusCode"] == 202, first
    run_id = json.loads(first["body"])["run_id"]
    assert run_id == run_id_for("agent", "support", "github", "d-1")
    again = handlers.trigger.handle(_signed(body, "d-1"))  # GitHub's "redeliver"
    assert again["statusCode"] == 202 and json.loads(again["body"])["run_id"] == run_id
    other = handlers.trigger.handle(_signed(body, "d-2"))
    assert json.loads(other["body"])["run_id"] != run_id
    result = _finished(built, run_id)
    events = built.service.engine.store.list_events(run_id)
    assert events[0].data["input"] == "New issue: Login is broken"
    assert result["trigger"] == {"name": "github", "kind": "webhook", "event_id": "d-1"}


def test_a_triggered_run_that_needs_a_person_says_so_and_waits_for_the_reply(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, _ = stack
    event = {
        "id": str(uuid.uuid4()),
        "source": "shop.inventory",
        "detail-type": "StockLow",
        "detail": {"sku": "GRINDER-1"},
    }
    answer = handlers.trigger.handle({"agentfn_trigger": "restock/low-stock", "event": event})
    run_id = run_id_for("agent", "restock", "low-stock", event["id"])
    assert answer["run_id"] == run_id
    paused = _finished(built, run_id, "awaiting_input")
    assert paused["clarification"]["question"] == "Which warehouse?"
    assert paused["trigger"]["kind"] == "event"
    sent = built.service.events.entries  # type: ignore[attr-defined]
    asked = wait_for(  # put right after the pause is committed
        lambda: [json.loads(e["Detail"]) for e in sent if e["DetailType"] == "Input Requested"],
        what="the Input Requested event",
    )
    assert asked[0]["run_id"] == run_id
    assert asked[0]["trigger"] == {"name": "low-stock", "kind": "event", "event_id": event["id"]}
    assert asked[0]["clarification"]["question"] == "Which warehouse?"
    built.service.reply(run_id, "Lyon")  # what the person (or a caller for them) answers
    done = _finished(built, run_id)
    assert done["result"] == "Restocked"


def test_a_scheduled_workflow_run_records_its_trigger_and_starts_once(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, _ = stack
    payload = {"agentfn_trigger": "digest/hourly", "time": "2026-11-26T10:00:00Z"}
    first = handlers.trigger.handle(payload)
    again = handlers.trigger.handle(payload)  # Scheduler retried the same firing
    assert first["workflow_run_id"] == again["workflow_run_id"]
    from runtime.workflows.service import WorkflowService

    workflows = WorkflowService(built.service)
    view = wait_for(
        lambda: (v := workflows.view(first["workflow_run_id"]))["status"] != "running" and v,
        what="the workflow to end",
    )
    assert view["status"] == "succeeded"
    assert view["input"] == {"topic": "the hour before 2026-11-26T10:00:00Z"}
    assert view["trigger"] == {"name": "hourly", "kind": "schedule", "event_id": payload["time"]}


def test_editing_a_trigger_does_not_fail_the_runs_in_flight() -> None:
    from runtime.engine.compat import agent_hash

    support = SPEC.agents["support"]
    edited = SPEC.model_copy(
        update={"agents": {**SPEC.agents, "support": support.model_copy(update={"triggers": []})}}
    )
    before = agent_hash(SPEC.to_runtime(), "support")  # the engine hashes the run-time form
    assert agent_hash(edited.to_runtime(), "support") == before
    other = support.model_copy(update={"description": "changed"})
    changed = SPEC.model_copy(update={"agents": {**SPEC.agents, "support": other}})
    assert agent_hash(changed.to_runtime(), "support") != before  # the check is real


def test_the_dev_scheduler_fires_each_due_time_once(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    built, _ = stack
    now = [1_800_000_000.0]  # 2027-01-15T08:00:00Z, a Friday
    scheduler = dev_triggers.Scheduler(built.spec, clock=lambda: now[0])
    # nightly: 07:00 Paris = 06:00 UTC tomorrow; hourly (a rate): an hour from now
    assert scheduler.due[("support", "nightly")] == 1_800_000_000.0 + 22 * 3600
    assert scheduler.due[("digest", "hourly")] == 1_800_000_000.0 + 3600
    assert scheduler.tick() == []  # nothing is due yet
    now[0] += 3600
    first = scheduler.tick()
    assert len(first) == 1  # the hourly workflow run
    now[0] += 1
    assert scheduler.tick() == []  # the same due time never fires twice
    assert scheduler.due[("digest", "hourly")] == 1_800_000_000.0 + 7200


def test_the_dev_scheduler_clock_starts_where_told_and_keeps_the_wall_clocks_pace() -> None:
    assert dev_triggers.schedule_clock({}) is time.time  # unset: the wall clock
    clock = dev_triggers.schedule_clock({dev_triggers.CLOCK_ENV: "2030-01-01T08:59:58Z"})
    first = clock()
    assert 1_893_488_398.0 <= first < 1_893_488_398.0 + 5  # 2030-01-01T08:59:58Z, as told
    time.sleep(0.2)
    assert 0.15 < clock() - first < 5  # it runs
    for bad in ("tomorrow", "2030-01-01T08:59:58"):  # not an instant; no offset: whose time?
        with pytest.raises(SystemExit, match=f"{dev_triggers.CLOCK_ENV}='{bad}'"):
            dev_triggers.schedule_clock({dev_triggers.CLOCK_ENV: bad})


def test_no_schedules_leaves_the_scheduler_off_and_the_queues_on(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    built, _ = stack
    made: list[Any] = []
    real = dev_triggers.Scheduler

    def recording(spec: Any, clock: Any) -> Any:
        made.append(spec)
        return real(spec, clock)

    monkeypatch.setattr(dev_triggers, "Scheduler", recording)
    stop = threading.Event()
    try:
        dev_triggers.start(built, stop, schedules=False)  # agentfn dev --no-schedules
        assert made == []
        dev_triggers.start(built, stop, schedules=True)
        assert made == [built.spec]
    finally:
        stop.set()


def test_a_webhook_whose_secret_cannot_be_read_is_a_500_that_says_nothing_more(
    stack: tuple[EmbeddedStack, dict[str, tuple[str, str]]],
) -> None:
    from runtime.secrets import SecretUnavailable
    from runtime.triggers.starter import TriggerStarter

    built, _ = stack

    def unreadable(name: str) -> str:
        raise SecretUnavailable(f"secret {name!r} could not be read")

    handlers.trigger.configure(TriggerStarter(built.service, unreadable), {})
    answer = handlers.trigger.handle(_signed(b'{"issue": {"title": "x"}}', "d-9"))
    assert answer["statusCode"] == 500
    assert json.loads(answer["body"]) == {
        "error_code": "INTERNAL",
        "error_message": "internal error",
    }
    with pytest.raises(RunNotFound):
        built.service.engine.store.load_head(run_id_for("agent", "support", "github", "d-9"))
