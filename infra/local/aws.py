"""The embedded AWS: the stack's own resources on moto, shaped exactly like the template.

Two forms, one layout (the table is created from the same properties `agentfn build` puts in
template.yaml, so local and deployed state agree):

- `local_aws(directory)`, what `agentfn run` uses: moto's server on loopback, kept on disk
  (infra.local.local_state). Only the stack's own clients (the runs table, the idempotency table,
  the bucket, the state machines, EventBridge, the stack's own functions) are pointed at
  it, each with its own endpoint and dummy credentials; the process's environment is left
  alone, so everything else (Bedrock, Lambda tools by ARN, knowledge bases, secrets, the
  RDS Data API) goes to real AWS with the user's own credentials, profile and region.
- `embedded_aws()`, `--offline` and the tests: moto in process for every AWS call, with
  dummy credentials that can never reach a real account, gone with the process.

`--aws` swaps in real clients for a deployed stack with the same code path.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.sam.data import idempotency_table_resource, table_resource
from runtime.store.dynamo import DynamoStore, S3Blobs

LOCAL_TABLE = "agentfn-local"
LOCAL_IDEMPOTENCY_TABLE = "agentfn-local-idempotency"
LOCAL_BUCKET = "agentfn-local-data"
LOCAL_REGION = "us-east-1"


_MOTO_LOCK = threading.RLock()


class Serialized:
    """A boto3 client whose calls take one process-wide lock.

    moto's backends are not thread-safe (a transaction's undo log, infra.local.local_dynamodb,
    assumes no other write in between), and the embedded stack runs state machine
    executions in threads. Real AWS needs no such lock; only the embedded one uses this
    (`agentfn dev`'s moto server has its own: infra.local.dev_concurrency).
    """

    def __init__(self, client: Any):
        self._client = client
        self.exceptions = client.exceptions
        self.meta = client.meta

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            with _MOTO_LOCK:
                return attribute(*args, **kwargs)

        return call


class EmbeddedAwsStopped(RuntimeError):
    """A request made after its embedded AWS stopped (a state machine execution that
    outlived its `embedded_aws()`): refused here, so it never goes out to the network."""


@dataclass
class AwsClients:
    dynamodb: Any
    s3: Any
    table: str
    bucket: str
    lambda_: Any = None
    stopped: threading.Event | None = None  # set when the embedded AWS behind these stops
    endpoint: str | None = None  # the local moto server's URL (None: moto in process)

    def make(self, service: str) -> Any:
        """A client of the embedded AWS for one of the stack's own services."""
        return self.guard(stack_client(service, self.endpoint))

    def store(self) -> DynamoStore:
        return DynamoStore(self.dynamodb, self.table, S3Blobs(self.s3, self.bucket))

    def guard(self, client: Any) -> Any:
        """Make `client` refuse every request once the embedded AWS has stopped. moto answers
        first while it runs; afterwards botocore would send the request to the real
        endpoint (a DNS lookup at least) with the dummy credentials."""
        stopped = self.stopped
        if stopped is None:
            return client

        def refuse(request: Any, **_: Any) -> None:
            if stopped.is_set():
                raise EmbeddedAwsStopped(f"the embedded AWS has stopped: {request.method} refused")

        client.meta.events.register("before-send", refuse)
        return client


def stack_client(service: str, endpoint: str | None) -> Any:
    """A boto3 client for the embedded stack: with `endpoint`, that server's, with its own
    dummy credentials and region (whatever the environment says: AWS_PROFILE,
    AWS_ENDPOINT_URL_* and the user's keys are for real AWS); else moto in process."""
    import boto3

    if endpoint is None:
        return boto3.client(service, region_name=LOCAL_REGION)
    from botocore.config import Config

    return boto3.client(
        service,
        region_name=LOCAL_REGION,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        aws_session_token=None,
        config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard"}),
    )


def create_resources(clients: AwsClients) -> None:
    """Create the tables and the bucket as the template declares them (idempotent, also
    against another process creating them at the same moment): the runs' table with its
    `sweep` index, and the API's idempotency table."""
    existing = clients.dynamodb.list_tables()["TableNames"]
    for name, resource in (
        (clients.table, table_resource()),
        (LOCAL_IDEMPOTENCY_TABLE, idempotency_table_resource()),
    ):
        props = resource["Properties"]
        if name in existing:
            _add_missing_indexes(clients.dynamodb, name, props)
            continue
        kwargs: dict[str, Any] = {}
        if props.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        try:
            clients.dynamodb.create_table(
                TableName=name,
                BillingMode=props["BillingMode"],
                AttributeDefinitions=props["AttributeDefinitions"],
                KeySchema=props["KeySchema"],
                SSESpecification={"Enabled": True},
                **kwargs,
            )
        except clients.dynamodb.exceptions.ResourceInUseException:
            continue  # another process made it just now
        clients.dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"]
        )
    buckets = [b["Name"] for b in clients.s3.list_buckets().get("Buckets", [])]
    if clients.bucket not in buckets:
        with suppress(clients.s3.exceptions.BucketAlreadyOwnedByYou):  # made by another process
            clients.s3.create_bucket(Bucket=clients.bucket)


def _add_missing_indexes(dynamodb: Any, table: str, props: dict[str, Any]) -> None:
    """A table made before an index was declared (a long-lived local endpoint) gets it."""
    described = dynamodb.describe_table(TableName=table)["Table"]
    present = {i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])}
    missing = [i for i in props.get("GlobalSecondaryIndexes", []) if i["IndexName"] not in present]
    if missing:
        dynamodb.update_table(
            TableName=table,
            AttributeDefinitions=props["AttributeDefinitions"],
            GlobalSecondaryIndexUpdates=[{"Create": index} for index in missing],
        )


@contextmanager
def embedded_aws() -> Iterator[AwsClients]:
    """moto in process, with dummy credentials that can never reach a real account."""
    import boto3
    from moto import mock_aws

    saved = {
        k: os.environ.get(k)
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    }
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    os.environ.pop("AWS_SESSION_TOKEN", None)
    from infra.local.local_dynamodb import install
    from infra.local.local_lambda import dispatching

    install()  # moto's DynamoDB without its table-wide copies (infra.local.local_dynamodb)
    config: Any = {
        "lambda": {"use_docker": False},
        "stepfunctions": {"execute_state_machine": True},
    }
    stopped = threading.Event()
    try:
        with mock_aws(config=config), dispatching():
            clients = AwsClients(
                Serialized(boto3.client("dynamodb", region_name=LOCAL_REGION)),
                Serialized(boto3.client("s3", region_name=LOCAL_REGION)),
                LOCAL_TABLE,
                LOCAL_BUCKET,
                boto3.client("lambda", region_name=LOCAL_REGION),
                stopped,
            )
            for client in (clients.dynamodb, clients.s3, clients.lambda_):
                clients.guard(client)
            create_resources(clients)
            yield clients
    finally:
        stopped.set()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def local_aws(directory: Path) -> Iterator[AwsClients]:
    """The stack's own resources on a moto server on loopback, kept in `directory`
    (infra.local.local_state); every other AWS call of the process goes where the user's
    environment sends it."""
    from infra.local.local_lambda import dispatching
    from infra.local.local_state import LocalAwsServer

    server = LocalAwsServer(directory)
    server.start()
    # moto's Step Functions interpreter calls the stack's functions on this server.
    saved = {k: os.environ.get(k) for k in ("MOTO_PORT", "NO_PROXY", "no_proxy")}
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1,localhost"]))
    os.environ.update({"MOTO_PORT": str(server.port), "NO_PROXY": no_proxy, "no_proxy": no_proxy})
    stopped = threading.Event()
    try:
        with dispatching():
            clients = AwsClients(
                stack_client("dynamodb", server.url),
                stack_client("s3", server.url),
                LOCAL_TABLE,
                LOCAL_BUCKET,
                stack_client("lambda", server.url),
                stopped,
                endpoint=server.url,
            )
            for client in (clients.dynamodb, clients.s3, clients.lambda_):
                clients.guard(client)
            create_resources(clients)
            yield clients
    finally:
        stopped.set()
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def real_aws() -> AwsClients:
    """Clients for a deployed stack: AGENTFN_TABLE and AGENTFN_BUCKET name its resources."""
    import boto3

    table = os.environ.get("AGENTFN_TABLE")
    bucket = os.environ.get("AGENTFN_BUCKET")
    if not table or not bucket:
        raise SystemExit(
            "--aws needs AGENTFN_TABLE and AGENTFN_BUCKET (the stack's StateTableName and "
            "DataBucketName outputs) in the environment"
        )
    return AwsClients(boto3.client("dynamodb"), boto3.client("s3"), table, bucket)
