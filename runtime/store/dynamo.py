"""The run store on DynamoDB (one table) and S3 (large bodies), with injected clients.

Each Commit is one PutItem of its record, conditional on `attribute_not_exists` (the key is
the version check: runtime.store.records); a run's start and end are one TransactWriteItems
with the session's items they change. A lost race surfaces as StateConflict; the caller
re-reads and backs off.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

from runtime.errors import RunNotFound, StateConflict
from runtime.events import Event
from runtime.messages import Message
from runtime.store import items as it
from runtime.store import records
from runtime.store.base import Commit, RunHead, SessionState


def _to_ddb(item: it.Item) -> dict[str, Any]:
    return {k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in item.items()}


def _from_ddb(item: dict[str, Any]) -> it.Item:
    return {k: int(v["N"]) if "N" in v else v["S"] for k, v in item.items()}


class S3Blobs:
    def __init__(self, client: Any, bucket: str):
        self._s3 = client
        self._bucket = bucket

    def put(self, key: str, body: bytes, content_type: str = "application/json") -> None:
        self._s3.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType=content_type)

    def get(self, key: str) -> bytes:
        try:
            body: bytes = self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            raise KeyError(f"no object {key!r}") from None
        return body

    def list(self, prefix: str, limit: int = 100) -> list[tuple[str, int]]:
        """Up to `limit` objects, over as many pages (1,000 keys each) as that takes."""
        found: list[tuple[str, int]] = []
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Prefix": prefix}
        while len(found) < limit:
            answer = self._s3.list_objects_v2(**kwargs, MaxKeys=min(1000, limit - len(found)))
            found += [(o["Key"], int(o["Size"])) for o in answer.get("Contents", [])]
            if not answer.get("IsTruncated"):
                break
            kwargs["ContinuationToken"] = answer["NextContinuationToken"]
        return found

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix` (1,000 per request); how many there were."""
        deleted = 0
        while True:
            keys = [key for key, _ in self.list(prefix, limit=1000)]
            if not keys:
                return deleted
            self._s3.delete_objects(
                Bucket=self._bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
            deleted += len(keys)

    def presign(self, key: str, seconds: int) -> str:
        self._s3.head_object(Bucket=self._bucket, Key=key)  # no URL for what is not there
        url: str = self._s3.generate_presigned_url(
            "get_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=seconds
        )
        return url


class DynamoStore:
    def __init__(self, client: Any, table: str, blobs: Any):
        self._ddb = client
        self._table = table
        self.blobs = blobs

    def commit(self, commit: Commit) -> None:
        items = it.commit_items(commit, self.blobs)
        record = {
            "TableName": self._table,
            "Item": _to_ddb(items.record),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if items.upserts:  # a start or an end: with the session's items, at once
            ops: list[dict[str, Any]] = [{"Put": record}]
            assert items.index is not None
            ops += [
                {"Put": {"TableName": self._table, "Item": _to_ddb(i)}}
                for i in (items.index, *items.upserts)
            ]
            try:
                self._ddb.transact_write_items(TransactItems=ops)
            except self._ddb.exceptions.TransactionCanceledException as exc:
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if "ConditionalCheckFailed" in reasons:
                    raise StateConflict(f"run {commit.head.run_id} changed under us") from exc
                raise
            return
        if items.index is not None and items.index_first:
            self._put_index(items.index)
        try:
            self._ddb.put_item(**record)
        except self._ddb.exceptions.ConditionalCheckFailedException as exc:
            raise StateConflict(f"run {commit.head.run_id} changed under us") from exc
        if items.index is not None and not items.index_first:
            self._put_index(items.index)

    def _put_index(self, item: it.Item) -> None:
        """The HEAD item, unless a newer commit's is there already."""
        with contextlib.suppress(self._ddb.exceptions.ConditionalCheckFailedException):
            self._ddb.put_item(
                TableName=self._table,
                Item=_to_ddb(item),
                ConditionExpression="attribute_not_exists(pk) OR hv <= :v",
                ExpressionAttributeValues={":v": {"N": str(item["hv"])}},
            )

    def load_head(self, run_id: str) -> RunHead:
        pk, _ = it.head_key(run_id)
        newest = self._query(
            pk, "begins_with(sk, :t)", {":t": records.PREFIX}, forward=False, page_size=1
        )
        item = next(newest, None)
        if item is None:
            raise RunNotFound(f"no run {run_id!r}")
        return records.decode_head(item)

    def _records(
        self, run_id: str, *, below: str = records.PREFIX + "~", page_size: int | None = None
    ) -> Iterator[it.Item]:
        """A run's records, newest first, from `below` (a key bound) down."""
        pk, _ = it.head_key(run_id)
        return self._query(
            pk,
            "sk BETWEEN :lo AND :hi",
            {":lo": records.PREFIX, ":hi": below},
            forward=False,
            page_size=page_size,
        )

    def _query(
        self,
        pk: str,
        condition: str,
        values: dict[str, str],
        *,
        forward: bool = True,
        page_size: int | None = None,
    ) -> Iterator[it.Item]:
        """Items of one partition, lazily, page by page: a caller that stops early reads no
        further page (`page_size` bounds what one page reads)."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": f"pk = :pk AND {condition}",
            "ExpressionAttributeValues": {
                ":pk": {"S": pk},
                **{k: {"S": v} for k, v in values.items()},
            },
            "ConsistentRead": True,
            "ScanIndexForward": forward,
        }
        if page_size is not None:
            kwargs["Limit"] = page_size
        while True:
            page = self._ddb.query(**kwargs)
            for item in page.get("Items", []):
                yield _from_ddb(item)
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def load_messages(self, head: RunHead, start: int = 0) -> list[Message]:
        if start >= head.msg_seq:
            return []
        # Newest first, in pages of about what is wanted (a page's reads are paid in full).
        page = None if start == 0 else min(1000, 2 * (head.msg_seq - start) + 8)
        newest = self._records(head.run_id, below=records.head_bound(head), page_size=page)
        return records.messages_from(newest, head, start, self.blobs)

    def load_run(self, run_id: str) -> tuple[RunHead, list[Message]]:
        newest = self._records(run_id)
        first = next(newest, None)
        if first is None:
            raise RunNotFound(f"no run {run_id!r}")
        head = records.decode_head(first)
        if head.msg_seq <= 0:
            return head, []
        return head, records.messages_from(itertools.chain([first], newest), head, 0, self.blobs)

    def session_history(self, head: RunHead, limit: int) -> list[Message]:
        if limit <= 0:
            return []
        pk, own = it.marker_key(head)
        markers = self._query(
            pk,
            "sk BETWEEN :lo AND :hi",
            {":lo": "R#", ":hi": own},
            forward=False,
            page_size=min(100, limit + 2),
        )

        def newest(run_id: str, wanted: int) -> Iterator[it.Item]:
            return self._records(run_id, page_size=min(1000, wanted + 4))

        return records.history_from(markers, own, newest, limit, self.blobs)

    def list_events(self, run_id: str, after: int = -1, limit: int = 100) -> list[Event]:
        pk, _ = it.head_key(run_id)
        first = records.record_sk(after + 1, 0)[: len(records.PREFIX) + 8]
        before = None
        if after >= 0:  # the commit before `after + 1`'s may hold it among its events
            before = next(self._records(run_id, below=first, page_size=1), None)
        following = self._query(
            pk,
            "sk BETWEEN :lo AND :hi",
            {":lo": first, ":hi": records.PREFIX + "~"},
            page_size=limit,
        )
        return records.events_from(before, following, after, limit, self.blobs)

    def latest_session_run(self, agent: str, session_id: str) -> str | None:
        """The newest run marker (the session's items under `R#` are its markers)."""
        newest = self._query(
            it.session_pk(agent, session_id),
            "begins_with(sk, :r)",
            {":r": "R#"},
            forward=False,
            page_size=1,
        )
        return next(it.marker_run_ids(newest), None)

    def session_runs(self, agent: str, session_id: str) -> list[str]:
        pk = it.session_pk(agent, session_id)
        return list(it.marker_run_ids(self._query(pk, "begins_with(sk, :r)", {":r": "R#"})))

    def delete_session(self, agent: str, session_id: str) -> list[str]:
        """Every item of the session's runs' partitions, then of the session's own (its run
        markers last, so a crash half way leaves the runs findable for a retry), then their
        objects."""
        pk = it.session_pk(agent, session_id)
        runs = self.session_runs(agent, session_id)
        keys: list[tuple[str, str]] = []
        for run_id in runs:
            run_pk = it.head_key(run_id)[0]
            keys += [(run_pk, i["sk"]) for i in self._query(run_pk, "sk >= :z", {":z": "!"})]
        keys += [(pk, i["sk"]) for i in self._query(pk, "sk >= :z", {":z": "!"})]
        for start in range(0, len(keys), 25):  # BatchWriteItem's limit
            requests = [
                {"DeleteRequest": {"Key": {"pk": {"S": k[0]}, "sk": {"S": k[1]}}}}
                for k in keys[start : start + 25]
            ]
            pending: dict[str, Any] = {self._table: requests}
            while pending:
                answer = self._ddb.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
        for prefix in it.session_blob_prefixes(agent, session_id, runs):
            self.blobs.delete_prefix(prefix)
        return runs

    def session_state(self, agent: str, session_id: str) -> SessionState:
        pk, sk = it.session_state_key(agent, session_id)
        answer = self._ddb.get_item(
            TableName=self._table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        return it.decode_session_state(_from_ddb(answer["Item"]) if "Item" in answer else None)

    def save_workflow_run(self, run: Any, expected_version: int | None) -> None:
        """Write a workflow run's item: new (`expected_version` None) or over that version."""
        if expected_version is None:
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        else:
            condition = {
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": {":v": {"N": str(expected_version)}},
            }
        item = _to_ddb(it.workflow_item(run))
        try:
            self._ddb.put_item(TableName=self._table, Item=item, **condition)
        except self._ddb.exceptions.ConditionalCheckFailedException as exc:
            raise StateConflict(f"workflow run {run.workflow_run_id} changed under us") from exc

    def load_workflow_run(self, workflow_run_id: str) -> str:
        """The workflow run's stored JSON (runtime.workflows.records.WorkflowRun)."""
        pk, sk = it.workflow_key(workflow_run_id)
        answer = self._ddb.get_item(
            TableName=self._table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
        )
        if "Item" not in answer:
            raise RunNotFound(f"no workflow run {workflow_run_id!r}")
        return str(_from_ddb(answer["Item"])["doc"])

    def due_runs(self, now: float, limit: int = 500) -> list[str]:
        found: list[str] = []
        for shard in range(it.SWEEP_SHARDS):
            kwargs: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": it.SWEEP_INDEX,
                "KeyConditionExpression": "sweep_pk = :s AND sweep_at <= :now",
                "ExpressionAttributeValues": {
                    ":s": {"S": f"SWEEP#{shard:02d}"},
                    ":now": {"S": it.sweep_at(now)},
                },
                "Limit": limit - len(found),
            }
            items = self._ddb.query(**kwargs).get("Items", [])
            found += [item["pk"]["S"].removeprefix("RUN#") for item in items]
            if len(found) >= limit:
                break
        return found
