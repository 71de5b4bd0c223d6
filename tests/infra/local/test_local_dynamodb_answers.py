"""moto's DynamoDB answers, written directly for AttributeValue (infra.local.local_dynamodb_answers),
are byte for byte what moto's generic serializer writes; botocore's direct reading gives what
its generic walk gives; and every kind of attribute reads back through both."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infra.local import local_dynamodb_answers
from infra.local.aws import embedded_aws

_text = st.text(max_size=8)
_name = st.text(min_size=1, max_size=8)
_number = st.integers(-(10**6), 10**6).map(str)
_binary = st.binary(max_size=8)


def _values(children: Any) -> Any:
    return st.one_of(
        # Map keys not empty: moto writes a value under "" into the map itself (both ways alike).
        st.builds(lambda v: {"M": v}, st.dictionaries(_name, children, max_size=4)),
        st.builds(lambda v: {"L": v}, st.lists(children, max_size=4)),
    )


#: AttributeValues as moto hands them to the serializer (binary as bytes: dynamo_to_dict).
attribute_values = st.recursive(
    st.one_of(
        st.builds(lambda v: {"S": v}, _text),
        st.builds(lambda v: {"N": v}, _number),
        st.builds(lambda v: {"B": v}, _binary),
        st.builds(lambda v: {"SS": v}, st.lists(_text, min_size=1, max_size=3, unique=True)),
        st.builds(lambda v: {"NS": v}, st.lists(_number, min_size=1, max_size=3, unique=True)),
        st.builds(lambda v: {"BS": v}, st.lists(_binary, min_size=1, max_size=3, unique=True)),
        st.builds(lambda v: {"BOOL": v}, st.booleans()),
        st.just({"NULL": True}),
    ),
    _values,
    max_leaves=12,
)
items = st.dictionaries(st.text(min_size=1, max_size=8), attribute_values, max_size=6)


def _serialize(operation: str, result: dict[str, Any], generic: bool) -> str:
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker
    from moto.dynamodb.responses import DynamoHandler

    local_dynamodb_answers.install()
    from moto.core.responses import get_service_model

    model = get_service_model("dynamodb").operation_model(operation)
    cls = JSONSerializer
    if generic:  # moto's own walk, as before install()
        cls = type(
            "Generic", (JSONSerializer,), {"_serialize": local_dynamodb_answers.generic_serialize}
        )
    picker = XFormedAttributePicker(
        response_transformers=getattr(DynamoHandler, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
    )
    serializer = cls(operation_model=model, pretty_print=False, value_picker=picker)
    answer = serializer.serialize(result)
    assert answer["status_code"] == 200
    return str(answer["body"])


def _parse(operation: str, body: str, generic: bool) -> dict[str, Any]:
    """botocore's reading of a DynamoDB answer: direct, or its own walk."""
    import botocore.session
    from botocore.parsers import JSONParser

    cls = JSONParser
    if generic:
        cls = type(
            "Generic", (JSONParser,), {"_handle_structure": local_dynamodb_answers.generic_parse}
        )
    model = botocore.session.get_session().get_service_model("dynamodb")
    shape = model.operation_model(operation).output_shape
    answer = {"body": body.encode(), "headers": {}, "status_code": 200}
    parsed: dict[str, Any] = cls().parse(answer, shape)
    parsed.pop("ResponseMetadata", None)
    return parsed


@settings(max_examples=60, deadline=None)
@given(items, st.lists(items, max_size=3))
def test_direct_answers_equal_moto_generic_ones(item: dict[str, Any], found: list[Any]) -> None:
    for operation, result in (
        ("GetItem", {"Item": item}),
        ("Query", {"Items": found, "Count": len(found), "ScannedCount": len(found)}),
        ("UpdateItem", {"Attributes": item}),
    ):
        direct = _serialize(operation, result, generic=False)
        assert direct == _serialize(operation, result, generic=True)
        assert _parse(operation, direct, generic=False) == _parse(operation, direct, generic=True)


def test_every_kind_of_attribute_reads_back_through_botocore() -> None:
    item = {
        "pk": {"S": "run#1"},
        "sk": {"S": "head"},
        "count": {"N": "7"},
        "blob": {"B": b"\x00\xffdata"},
        "tags": {"SS": ["a", "b"]},
        "sizes": {"NS": ["1", "2.5"]},
        "blobs": {"BS": [b"x", b"y"]},
        "flag": {"BOOL": False},
        "none": {"NULL": True},
        "nested": {"M": {"list": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"b": {"B": b"z"}}}]}}},
        "empty": {"S": ""},
    }
    with embedded_aws() as clients:
        clients.dynamodb.put_item(TableName=clients.table, Item=item)
        got = clients.dynamodb.get_item(
            TableName=clients.table, Key={"pk": item["pk"], "sk": item["sk"]}
        )
        found = clients.dynamodb.query(
            TableName=clients.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": item["pk"]},
        )
    assert got["Item"] == item
    assert found["Items"] == [item]


@settings(max_examples=300, deadline=None)
@given(items)
def test_item_sizes_are_counted_as_moto_counts_them(item: dict[str, Any]) -> None:
    """infra.local.local_dynamodb.value_size gives moto's DynamoType.size, which the 400 KB
    item limit and the 1 MB query page rest on (binary as moto holds it: bytes, or the
    base64 text a request carried)."""
    from moto.dynamodb.models.dynamo_type import DynamoType, Item

    from infra.local import local_dynamodb

    local_dynamodb.install()
    for as_text in (False, True):
        attrs = {k: DynamoType(_binary_as_text(v) if as_text else v) for k, v in item.items()}
        for value in attrs.values():
            assert value.size() == local_dynamodb.moto_size(value)
        whole = Item(DynamoType({"S": "pk"}), DynamoType({"S": "sk"}), attrs)
        assert whole.size() == sum(
            len(k.encode()) + local_dynamodb.moto_size(v) for k, v in attrs.items()
        )


def _binary_as_text(value: dict[str, Any]) -> dict[str, Any]:
    import base64

    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64encode(inner).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(each).decode() for each in inner]}
    if kind == "M":
        return {"M": {k: _binary_as_text(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_binary_as_text(v) for v in inner]}
    return value
