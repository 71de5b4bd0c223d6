"""moto's DynamoDB, kept as fast with a full table as with an empty one (local only).

Two of moto's operations cost time in proportion to everything the table holds, which made
the embedded AWS slow down run after run (a 200-turn run spent most of its time here):

- `TransactWriteItems` deep-copies every table it touches before it starts, so that it can
  put the copy back if the transaction is cancelled. Here it keeps, instead, the prior state
  of only the items the transaction writes (a transaction writes at most 100), and puts
  those back on cancellation. What the store relies on is unchanged: every condition is
  checked (including `ConditionCheck` items), a cancelled transaction leaves nothing behind,
  and the error names each item's reason (`TransactionCanceledException`).
- a table `Query` lists every item of the table to keep those of one partition. Here it
  starts from that partition's items (moto keeps them together by partition key); the
  rest of moto's query (ranges, filters, paging, projections) runs as before. Index queries
  are left as they are.

And one copy per query that nothing needs: moto deep-copies the items a table query found
before it filters and projects them, though neither changes an item (a projection builds
a new one) and the answer is built from fresh dicts (`dynamo_to_dict`); with team runs
polled on `agentfn dev`, that copy was a tenth of each query. During a table query here,
moto's table module sees a `copy` whose deepcopy of the results is a shallow list.

And sizes counted without rebuilding the value: moto's `DynamoType.size` (an item's size,
for the 400 KB limit on every write — once per attribute set, over all the attributes
before it — and for the 1 MB page of every query, twice per item found) wraps each value
of a map in a new DynamoType, which copies that value's whole subtree, at every level.
`value_size` counts the same bytes by the same rules from the values as they are: a
quarter of the CPU of a query returning 30 run records, before.

moto's backends are not thread-safe: callers serialise requests (infra.local.aws.Serialized in
process, infra.local.dev_concurrency for `agentfn dev`'s moto server), and these functions rely on
that too. `install()` is idempotent and lasts for the process.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

_installed = False
_install_lock = threading.Lock()
_partition = threading.local()  # (table, its partition's items) while one query runs
#: moto's own DynamoType.size, once install() has replaced it (for comparisons).
moto_size: Any = None


class _QueryCopy:
    """The `copy` module as moto's table module sees it: during a table query started here
    (the only deepcopy in Table.query is of its results), a shallow list; else `copy`'s."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        if getattr(_partition, "items", None) is not None and type(value) is list:
            return list(value)
        return copy.deepcopy(value, memo)


def install() -> None:
    """Replace moto's two table-wide operations (once per process)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        from moto.dynamodb.models import DynamoDBBackend, table
        from moto.dynamodb.models.dynamo_type import DynamoType
        from moto.dynamodb.models.table import Table

        from infra.local import local_dynamodb_answers

        original_query = Table.query
        original_all_items = Table.all_items

        def all_items(self: Any) -> list[Any]:
            only = getattr(_partition, "items", None)
            if only is not None and only[0] is self:
                return list(only[1])
            result: list[Any] = original_all_items(self)
            return result

        def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
            index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
            if index_name is not None or hash_key is None:
                return original_query(self, hash_key, *args, **kwargs)
            _partition.items = (self, partition_items(self, hash_key))
            try:
                return original_query(self, hash_key, *args, **kwargs)
            finally:
                _partition.items = None

        table.copy = _QueryCopy  # type: ignore[assignment]
        global moto_size
        moto_size = DynamoType.size
        DynamoType.size = lambda self: value_size(self.type, self.value)  # type: ignore[method-assign]
        Table.all_items = all_items  # type: ignore[method-assign]
        Table.query = query  # type: ignore[method-assign]
        DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
        local_dynamodb_answers.install()  # and its answers without a model walk per attribute
        _installed = True


def value_size(kind: str, value: Any) -> int:
    """moto's DynamoType({kind: value}).size() (moto 5.x), its rules in its order: a number
    counts its digits, a set or list its elements, a map its keys' UTF-8 bytes and values,
    a boolean (BOOL, NULL) one byte, anything else its UTF-8 (or raw) bytes."""
    if kind == "N":
        return len(str(value))
    if kind in ("SS", "NS", "BS"):
        element = kind[0]
        return sum(value_size(element, each) for each in value)
    if kind == "L":
        return sum(_size_of(each) for each in value)
    if kind == "M":
        return sum(len(key.encode("utf-8")) + _size_of(each) for key, each in value.items())
    if isinstance(value, bool):
        return 1
    return len(value if isinstance(value, bytes) else value.encode("utf-8"))


def _size_of(typed: Any) -> int:
    """value_size of a DynamoType, or of a `{kind: value}` dict (moto accepts either)."""
    if isinstance(typed, dict):
        ((kind, value),) = typed.items()
        return value_size(kind, value)
    return value_size(typed.type, typed.value)


def partition_items(table: Any, hash_key: Any) -> list[Any]:
    """The items of one partition, without listing the table (nor adding an empty
    partition, as moto's defaultdict would on a lookup)."""
    held = table.items.get(hash_key)
    if held is None:
        return []
    return list(held.values()) if table.range_key_attr else [held]


def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto's TransactWriteItems (5.x), with an undo log of the items it writes in place of
    a deep copy of each table it touches."""
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    undo: list[tuple[Any, Any, Any, Any]] = []  # (table, hash key, range key, prior item)
    targets: set[tuple[str, str]] = set()
    errors: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
    for item in transact_items:
        original_item: dict[str, Any] | None = None
        if len(item) > 1:
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            condition = op.get("ConditionExpression")
            names = op.get("ExpressionAttributeNames")
            values = op.get("ExpressionAttributeValues")
            if op_type == "Put":
                table = self.get_table(table_name)
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            target = (str(table_name), str(dict(sorted(key.items()))))
            if target in targets:
                raise MultipleTransactionsException()
            targets.add(target)

            current = self.get_item(table_name, key)
            if condition is not None:
                check = get_filter_expression(condition, names, values)
                if not check.expr(current):
                    wanted = op.get("ReturnValuesOnConditionCheckFailure")
                    if wanted == "ALL_OLD" and current:
                        original_item = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original_item)
            if op_type != "ConditionCheck":
                table = self.get_table(table_name)
                hash_key, range_key = self.get_keys_value(table, key)
                # Put replaces the item and Delete removes it; Update changes it in place.
                prior = copy.deepcopy(current) if op_type == "Update" else current
                undo.append((table, hash_key, range_key, prior))
            if op_type == "Put":
                self.put_item(
                    table_name,
                    op["Item"],
                    condition_expression=condition,
                    expression_attribute_names=names,
                    expression_attribute_values=values,
                )
            elif op_type == "Delete":
                self.delete_item(
                    table_name,
                    key,
                    condition_expression=condition,
                    expression_attribute_names=names,
                    expression_attribute_values=values,
                )
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    condition_expression=condition,
                    expression_attribute_names=names,
                    expression_attribute_values=values,
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            _roll_back(undo)
            raise
        except ConditionalCheckFailed as exc:
            errors.append(("ConditionalCheckFailed", str(exc.message), original_item))
        except Exception as exc:  # as moto: the item's reason, then the whole is cancelled
            errors.append((type(exc).__name__, str(exc), original_item))
    if any(code is not None for code, _, _ in errors):
        _roll_back(undo)
        raise TransactionCanceledException(errors)


def _roll_back(undo: list[tuple[Any, Any, Any, Any]]) -> None:
    """Put every written item back as it was before the transaction, last write first."""
    for table, hash_key, range_key, prior in reversed(undo):
        if range_key is not None:
            partition = table.items.get(hash_key)
            if prior is not None:
                table.items[hash_key][range_key] = prior
            elif partition is not None:
                partition.pop(range_key, None)
        elif prior is not None:
            table.items[hash_key] = prior
        else:
            table.items.pop(hash_key, None)
