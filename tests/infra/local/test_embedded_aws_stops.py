"""A request made after the embedded AWS stopped never leaves the process."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from infra.local.aws import EmbeddedAwsStopped, embedded_aws


def test_clients_refuse_requests_once_the_embedded_aws_has_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A state machine execution can outlive its test; its next DynamoDB call must fail
    here, not look up dynamodb.us-east-1.amazonaws.com and try to connect."""
    with embedded_aws() as clients:
        assert clients.dynamodb.list_tables()["TableNames"]  # moto answers while it runs
    looked_up: list[Any] = []

    def no_dns(*args: Any, **kwargs: Any) -> Any:
        looked_up.append(args[0])
        raise OSError("no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    for call in (
        lambda: clients.dynamodb.list_tables(),
        lambda: clients.s3.list_buckets(),
        lambda: clients.lambda_.list_functions(),
    ):
        with pytest.raises(EmbeddedAwsStopped):
            call()
    assert looked_up == []
