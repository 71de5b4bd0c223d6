"""The embedded DynamoDB keeps DynamoDB's semantics without moto's table-wide copies.

infra.local.local_dynamodb replaces moto's TransactWriteItems rollback (a deep copy of the table)
with an undo log of the items written, and starts a table Query from its partition. What
the store relies on must hold exactly as before: a cancelled transaction leaves nothing
behind (new items absent, updated items as they were, deleted items back), the reasons
name the item at fault, and queries page and order as DynamoDB does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.local.aws import AwsClients, embedded_aws
from runtime.structs import replace

TABLE = "agentfn-local"


@pytest.fixture(scope="module")
def aws() -> Iterator[AwsClients]:
    with embedded_aws() as clients:
        yield clients


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _put(pk: str, sk: str, **attrs: str) -> dict[str, Any]:
    item = {**_key(pk, sk), **{k: {"S": v} for k, v in attrs.items()}}
    return {"Put": {"TableName": TABLE, "Item": item}}


def _everything(ddb: Any, pk: str) -> list[dict[str, Any]]:
    return ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
        ConsistentRead=True,
    )["Items"]


def _cancelled(ddb: Any, items: list[dict[str, Any]]) -> list[str]:
    with pytest.raises(ddb.exceptions.TransactionCanceledException) as caught:
        ddb.transact_write_items(TransactItems=items)
    return [r.get("Code") for r in caught.value.response["CancellationReasons"]]


def test_a_cancelled_transaction_leaves_nothing_behind(aws: AwsClients) -> None:
    ddb = aws.dynamodb
    ddb.transact_write_items(
        TransactItems=[_put("tx1", "updated", v="before"), _put("tx1", "deleted", v="kept")]
    )
    before = _everything(ddb, "tx1")
    reasons = _cancelled(
        ddb,
        [
            _put("tx1", "new", v="written first"),
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": _key("tx1", "updated"),
                    "UpdateExpression": "SET v = :v, extra = :v",
                    "ExpressionAttributeValues": {":v": {"S": "after"}},
                }
            },
            {"Delete": {"TableName": TABLE, "Key": _key("tx1", "deleted")}},
            {  # the last item fails: everything before it must be undone
                "Put": {
                    "TableName": TABLE,
                    "Item": {**_key("tx1", "guarded"), "v": {"S": "x"}},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
        ],
    )
    assert reasons == ["None", "None", "None", "ConditionalCheckFailed"]  # as DynamoDB says
    assert _everything(ddb, "tx1") == before


def test_a_failed_condition_check_cancels_the_writes(aws: AwsClients) -> None:
    ddb = aws.dynamodb
    ddb.transact_write_items(TransactItems=[_put("tx2", "head", version="1")])
    reasons = _cancelled(
        ddb,
        [
            _put("tx2", "message#1", body="hello"),
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": _key("tx2", "head"),
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": {":v": {"S": "2"}},
                }
            },
        ],
    )
    assert reasons == ["None", "ConditionalCheckFailed"]
    assert [i["sk"]["S"] for i in _everything(ddb, "tx2")] == ["head"]


def test_two_writes_to_one_item_are_refused_and_write_nothing(aws: AwsClients) -> None:
    ddb = aws.dynamodb
    with pytest.raises(ddb.exceptions.ClientError) as caught:
        ddb.transact_write_items(
            TransactItems=[_put("tx3", "a", v="1"), _put("tx3", "b", v="1"), _put("tx3", "a")]
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert _everything(ddb, "tx3") == []


def test_the_store_commit_that_loses_a_race_writes_none_of_its_items(aws: AwsClients) -> None:
    from runtime.clock import FakeClock
    from runtime.engine.loop import Engine
    from runtime.errors import StateConflict
    from runtime.messages import UserMessage
    from runtime.spec import AgentfnSpec
    from runtime.store.base import Commit

    spec = AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "done"}]}},
            "agents": {"a": {"description": "d", "model": "m"}},
        }
    )
    store = aws.store()
    head = Engine(spec, store, clock=FakeClock()).start("a", "hi")
    stored = store.load_head(head.run_id)
    # someone else commits the next version after it was read
    newer = replace(stored, version=stored.version + 1)
    store.commit(Commit(head=newer, expected_version=stored.version))
    stale = Commit(
        # Finishing: the commit also overwrites the run's marker and writes the session's.
        head=replace(
            stored, version=stored.version + 1, status="succeeded", msg_seq=stored.msg_seq + 1
        ),
        expected_version=stored.version,
        messages=[(stored.msg_seq, UserMessage(content="never written"))],
    )
    items_before = aws.dynamodb.scan(TableName=TABLE)["Items"]
    with pytest.raises(StateConflict):
        store.commit(stale)
    assert aws.dynamodb.scan(TableName=TABLE)["Items"] == items_before


def test_queries_page_and_order_as_before(aws: AwsClients) -> None:
    ddb = aws.dynamodb
    for partition in ("q1", "q2"):
        for n in range(25):
            ddb.put_item(TableName=TABLE, Item={**_key(partition, f"item#{n:03d}")})
    seen: list[str] = []
    kwargs: dict[str, Any] = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {
            ":pk": {"S": "q1"},
            ":lo": {"S": "item#005"},
            ":hi": {"S": "item#019"},
        },
        "ScanIndexForward": False,
        "Limit": 4,
    }
    while True:
        page = ddb.query(**kwargs)
        seen += [i["sk"]["S"] for i in page["Items"]]
        assert all(i["pk"]["S"] == "q1" for i in page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    assert seen == [f"item#{n:03d}" for n in range(19, 4, -1)]
    assert _everything(ddb, "nothing-here") == []


def test_a_query_leaves_the_items_it_found_as_they_were(aws: AwsClients) -> None:
    """moto's copy of a query's results is left out (infra.local.local_dynamodb): filtering,
    projecting and answering must not change the stored items, and a later write must not
    change an answer already given."""
    ddb = aws.dynamodb
    item = {
        **_key("kept", "a"),
        "doc": {"M": {"list": {"L": [{"S": "x"}, {"N": "1"}]}, "tags": {"SS": ["t1", "t2"]}}},
        "n": {"N": "5"},
    }
    ddb.put_item(TableName=TABLE, Item=item)
    found = ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        FilterExpression="n > :four",
        ProjectionExpression="pk, doc.tags, n",
        ExpressionAttributeValues={":pk": {"S": "kept"}, ":four": {"N": "4"}},
    )["Items"]
    assert len(found) == 1 and found[0]["pk"] == item["pk"] and found[0]["n"] == {"N": "5"}
    assert sorted(found[0]["doc"]["M"]["tags"]["SS"]) == ["t1", "t2"]  # a set: any order
    whole = _everything(ddb, "kept")
    assert whole == [item]
    ddb.update_item(
        TableName=TABLE,
        Key=_key("kept", "a"),
        UpdateExpression="SET doc.#l[0] = :y ADD n :one",
        ExpressionAttributeNames={"#l": "list"},
        ExpressionAttributeValues={":y": {"S": "y"}, ":one": {"N": "1"}},
    )
    assert whole == [item]  # the earlier answer is its own
    after = _everything(ddb, "kept")[0]
    assert after["doc"]["M"]["list"]["L"][0] == {"S": "y"} and after["n"] == {"N": "6"}
