"""The embedded Step Functions parse a definition once and share it, with each execution's
state still its own (infra.local.local_sfn).

The real interpreter runs (moto's, executions enabled) against functions dispatched in
process (infra.local.local_lambda): executions of one state machine started together each retry
their own failed task the number of times the definition allows (a retry counter lives in
the execution's heap under the component's key: a shared component must give every
execution the same key, and executions must not share counters) and each ends with its own
output.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra.local import local_sfn
from infra.local.aws import AwsClients, embedded_aws
from infra.local.local_lambda import register

ROLE = "arn:aws:iam::123456789012:role/agentfn-test"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:flaky"


def _definition(max_attempts: int) -> str:
    retry = {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "BackoffRate": 1.0}
    return json.dumps(
        {
            "StartAt": "Call",
            "States": {
                "Call": {
                    "Type": "Task",
                    "Resource": FUNCTION,
                    "Retry": [{**retry, "MaxAttempts": max_attempts}],
                    "Next": "Done",
                },
                "Done": {"Type": "Pass", "End": True},
            },
        }
    )


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsClients]:
    with embedded_aws() as clients:
        yield clients


def _finish(sfn: Any, arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60  # retries wait 1 s each; a loaded machine is slower
    while time.monotonic() < deadline:
        described: dict[str, Any] = sfn.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError(f"{arn} did not end")


def test_executions_share_a_parse_and_keep_their_own_retries(
    aws: AwsClients, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def flaky(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        """Fails the first two calls of each execution, answers the third."""
        with lock:
            calls[event["n"]] += 1
            seen = calls[event["n"]]
        if seen < 3:
            raise RuntimeError(f"attempt {seen} of {event['n']} fails")
        return {"n": event["n"], "attempts": seen}

    register(FUNCTION, flaky)
    parses: list[str] = []
    original = local_sfn._parse_tree

    def counting(definition: str) -> Any:
        parses.append(definition)
        return original(definition)

    monkeypatch.setattr(local_sfn, "_parse_tree", counting)
    sfn = aws.make("stepfunctions")
    definition = _definition(max_attempts=2)
    machine = sfn.create_state_machine(name="flaky", definition=definition, roleArn=ROLE)
    arns = [
        sfn.start_execution(
            stateMachineArn=machine["stateMachineArn"],
            name=f"e{n}",
            input=json.dumps({"n": str(n)}),
        )["executionArn"]
        for n in range(6)
    ]
    ended = [_finish(sfn, arn) for arn in arns]
    assert [e["status"] for e in ended] == ["SUCCEEDED"] * 6
    outputs = sorted((json.loads(e["output"]) for e in ended), key=lambda o: o["n"])
    assert outputs == [{"n": str(n), "attempts": 3} for n in range(6)]
    assert calls == {str(n): 3 for n in range(6)}  # 1 + 2 retries each, no more, no less
    assert parses.count(definition) <= 1  # parsed at most once (creation may have parsed it)

    # One retry fewer than needed: each execution fails on its own third failure.
    calls.clear()
    stricter = sfn.create_state_machine(
        name="strict", definition=_definition(max_attempts=1), roleArn=ROLE
    )
    failed = [
        _finish(
            sfn,
            sfn.start_execution(
                stateMachineArn=stricter["stateMachineArn"],
                name=f"s{n}",
                input=json.dumps({"n": f"s{n}"}),
            )["executionArn"],
        )
        for n in range(2)
    ]
    assert [e["status"] for e in failed] == ["FAILED", "FAILED"]
    assert calls == {"s0": 2, "s1": 2}


def test_a_definition_that_does_not_parse_is_refused_every_time(aws: AwsClients) -> None:
    sfn = aws.make("stepfunctions")
    broken = json.dumps({"StartAt": "X", "States": {"X": {"Type": "Nope"}}})
    for _ in range(2):
        with pytest.raises(ClientError, match=r"ASLParserException.*Nope"):
            sfn.create_state_machine(name="broken", definition=broken, roleArn=ROLE)
    assert broken not in local_sfn._programs


def test_the_interpreter_shares_one_client_per_service_and_endpoint(aws: AwsClients) -> None:
    from moto.stepfunctions.parser.asl.utils import boto_client

    first = boto_client.boto_client_for("us-east-1", "lambda")
    assert boto_client.boto_client_for("us-east-1", "lambda") is first
    assert boto_client.boto_client_for("eu-west-1", "lambda") is not first
