"""`agentfn dev`'s own AWS requests are answered in process (infra.local.in_process), and
nothing else changes: they are persisted in the local state as over HTTP, another process
reading the server over HTTP sees them (and they see its writes), a restart replays them,
concurrent writers stay isolated, and a Lambda invoke still runs in a thread of its own,
bounded by the client's read timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError

from infra.local import in_process
from infra.local.aws import LOCAL_TABLE, stack_client
from infra.local.dev_aws import MotoServer
from infra.local.local_lambda import dispatching, register


def _table(db: Any) -> str:
    """A new table (moto's backends are the process's: each test makes its own)."""
    name = f"{LOCAL_TABLE}-{uuid.uuid4().hex[:8]}"
    db.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    return name


#: Another process, over HTTP: put its item, print the item the test process wrote.
OTHER_PROCESS = """
import json, sys, boto3
db = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=sys.argv[1],
                  aws_access_key_id="testing", aws_secret_access_key="testing")
db.put_item(TableName=sys.argv[2], Item={"pk": {"S": "theirs"}, "v": {"S": "over HTTP"}})
print(json.dumps(db.get_item(TableName=sys.argv[2], Key={"pk": {"S": "mine"}}).get("Item")))
"""


@pytest.fixture
def sent_over_http(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs this process sent over a socket (botocore's own send, not in process)."""
    from botocore.httpsession import URLLib3Session

    in_process.install()
    assert URLLib3Session.send is in_process._send
    sent: list[str] = []
    original = in_process._original_send

    def counting(session: Any, request: Any) -> Any:
        sent.append(request.url)
        assert original is not None
        return original(session, request)

    monkeypatch.setattr(in_process, "_original_send", counting)
    return sent


def _server(state: Path | None) -> Iterator[MotoServer]:
    server = MotoServer(0, state=state)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_own_requests_are_persisted_and_shared_with_http_clients(
    tmp_path: Path, sent_over_http: list[str]
) -> None:
    state = tmp_path / "state"
    server = _server(state)
    aws = next(server)
    db = stack_client("dynamodb", aws.url)
    table = _table(db)
    db.put_item(TableName=table, Item={"pk": {"S": "mine"}, "v": {"S": "in process"}})
    assert sent_over_http == []  # every request above was answered in process
    logged = [json.loads(line) for line in (state / "aws.log").read_text().splitlines()]
    assert [r["headers"]["HTTP_X_AMZ_TARGET"] for r in logged] == [
        "DynamoDB_20120810.CreateTable",
        "DynamoDB_20120810.PutItem",
    ]
    other = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, aws.url, table],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(other.stdout) == {"pk": {"S": "mine"}, "v": {"S": "in process"}}
    theirs = db.get_item(TableName=table, Key={"pk": {"S": "theirs"}})["Item"]
    assert theirs["v"] == {"S": "over HTTP"}
    next(server, None)  # stopped: this process's requests go over HTTP again, and fail
    with pytest.raises(Exception, match="Could not connect"):
        stack_client("dynamodb", aws.url).list_tables()
    assert sent_over_http and set(sent_over_http) == {f"{aws.url}/"}  # (with retries)

    again = _server(state)  # a restart replays both writers' requests from the log
    restarted = next(again)
    try:
        db = stack_client("dynamodb", restarted.url)
        found = db.scan(TableName=table)["Items"]
        assert sorted(i["pk"]["S"] for i in found) == ["mine", "theirs"]
    finally:
        next(again, None)


def test_concurrent_writers_stay_isolated(sent_over_http: list[str]) -> None:
    server = _server(None)
    aws = next(server)
    try:
        db = stack_client("dynamodb", aws.url)
        table = _table(db)
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                for i in range(20):
                    db.put_item(
                        TableName=table,
                        Item={"pk": {"S": f"w{n}"}, "i": {"N": str(i)}},
                        ConditionExpression="attribute_not_exists(pk) OR i = :before",
                        ExpressionAttributeValues={":before": {"N": str(i - 1)}},
                    )
                    db.update_item(
                        TableName=table,
                        Key={"pk": {"S": "total"}},
                        UpdateExpression="ADD n :one",
                        ExpressionAttributeValues={":one": {"N": "1"}},
                    )
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        total = db.get_item(TableName=table, Key={"pk": {"S": "total"}})["Item"]
        assert total["n"] == {"N": str(16 * 20)}
        for n in range(16):
            item = db.get_item(TableName=table, Key={"pk": {"S": f"w{n}"}})["Item"]
            assert item["i"] == {"N": "19"}
        assert sent_over_http == []
    finally:
        next(server, None)


def test_lambda_invokes_run_in_their_own_thread_bounded_by_the_read_timeout(
    sent_over_http: list[str],
) -> None:
    server = _server(None)
    aws = next(server)
    try:
        with dispatching():
            seen: list[int] = []

            def handler(event: dict[str, Any], context: Any) -> Any:
                seen.append(threading.get_ident())
                time.sleep(event.get("sleep", 0))
                return {"echo": event["say"]}

            register("echo", handler)
            functions = stack_client("lambda", aws.url)  # none created: dispatched
            answer = functions.invoke(FunctionName="echo", Payload=json.dumps({"say": "hi"}))
            assert json.loads(answer["Payload"].read()) == {"echo": "hi"}
            assert seen and seen[0] != threading.get_ident()

            impatient = boto3.client(
                "lambda",
                region_name="us-east-1",
                endpoint_url=aws.url,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
                config=Config(read_timeout=1, retries={"total_max_attempts": 1}),
            )
            started = time.monotonic()
            with pytest.raises(ReadTimeoutError):
                impatient.invoke(FunctionName="echo", Payload=json.dumps({"say": "x", "sleep": 3}))
            assert time.monotonic() - started < 2.5
        assert sent_over_http == []
    finally:
        next(server, None)


def test_s3_objects_go_in_process_and_come_back_whole(
    tmp_path: Path, sent_over_http: list[str]
) -> None:
    """S3 as the store uses it for large parts (bytes, a file body, metadata with an
    underscore, a streamed read, a HEAD), answered in process and kept in the log."""
    state = tmp_path / "state"
    server = _server(state)
    aws = next(server)
    try:
        s3 = stack_client("s3", aws.url)
        bucket = f"in-process-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket)
        payload = bytes(range(256)) * 300  # 76.8 KB, every byte value
        s3.put_object(Bucket=bucket, Key="a/b c.bin", Body=payload, Metadata={"run_id": "r1"})
        upload = tmp_path / "upload.txt"
        upload.write_text("from a file ✓", encoding="utf-8")
        with open(upload, "rb") as body:
            s3.put_object(Bucket=bucket, Key="file.txt", Body=body)
        got = s3.get_object(Bucket=bucket, Key="a/b c.bin")
        assert got["Body"].read() == payload
        assert got["Metadata"] == {"run_id": "r1"}
        head = s3.head_object(Bucket=bucket, Key="file.txt")
        assert head["ContentLength"] == len("from a file ✓".encode())
        text = s3.get_object(Bucket=bucket, Key="file.txt")["Body"].read().decode()
        assert text == "from a file ✓"
        assert sent_over_http == []
        logged = (state / "aws.log").read_text()
        assert f"/{bucket}/a/b%20c.bin" in logged or f"/{bucket}/a/b c.bin" in logged
    finally:
        next(server, None)
    again = _server(state)  # replayed from the log after a restart
    restarted = next(again)
    try:
        s3 = stack_client("s3", restarted.url)
        assert s3.get_object(Bucket=bucket, Key="a/b c.bin")["Body"].read() == payload
    finally:
        next(again, None)
