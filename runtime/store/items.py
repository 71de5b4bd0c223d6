"""How runs map onto items of the single table, shared by every store implementation.

    RUN#{run_id}           HEAD                      the run head (version-checked)
    RUN#{run_id}           EV#{seq:08d}              one event
    SES#{agent}#{sid}      R#{run_key}               a session's run marker (its final status)
    SES#{agent}#{sid}      R#{run_key}#M#{seq:06d}   one message of that run

Every partition key starts with something IAM can scope to one agent: a run id starts with
its agent's tag (runtime.naming), and a session belongs to one agent, so agent B started
with agent A's session id sees nothing of A's conversation. Messages live under their
session so a session's history is one ordered Query (read backwards, only as far as needed).

A body over BODY_LIMIT bytes goes to the blob store under a key unique to the commit
attempt (`bodies/{run_id}/M{seq}.{attempt}.json`): a writer whose conditional commit loses
can never overwrite the body the winner's item points to. The item keeps the pointer and a
preview; an offloaded tool result also keeps the shortened form later runs of the session
read (`short`), so session history never fetches bodies from S3 for them. No item ever
approaches DynamoDB's 400 KB limit.

Heads of runs that are not finished carry `sweep_pk`/`sweep_at`, the keys of the sparse
`sweep` index the stale-run sweeper reads; a finished run's head drops them.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterable, Iterator
from typing import Any

from runtime.events import Event
from runtime.messages import Message, UserMessage, as_earlier, message_from_dict
from runtime.store.base import TERMINAL, BlobStore, Commit, RunHead, SessionState, Spend

BODY_LIMIT = 8 * 1024
PREVIEW = 1024
SWEEP_INDEX = "sweep"
SWEEP_SHARDS = 16
#: Granularity of `sweep_at`: the index entry changes at most this often per run.
SWEEP_BUCKET_SECONDS = 300

Item = dict[str, Any]


def head_key(run_id: str) -> tuple[str, str]:
    return f"RUN#{run_id}", "HEAD"


def event_key(run_id: str, seq: int) -> tuple[str, str]:
    return f"RUN#{run_id}", f"EV#{seq:08d}"


def session_pk(agent: str, session_id: str) -> str:
    return f"SES#{agent}#{session_id}"


def marker_key(head: RunHead) -> tuple[str, str]:
    return session_pk(head.agent, head.session_id), f"R#{head.run_key}"


def session_state_key(agent: str, session_id: str) -> tuple[str, str]:
    return session_pk(agent, session_id), "STATE"


def message_key(head: RunHead, seq: int) -> tuple[str, str]:
    pk, marker = marker_key(head)
    return pk, f"{marker}#M#{seq:06d}"


def sweep_shard(run_id: str) -> str:
    return f"SWEEP#{int(run_id[-1], 16) % SWEEP_SHARDS:02d}" if run_id else "SWEEP#00"


def sweep_at(seconds: float) -> str:
    """`sweep_at` as stored: rounded up to the bucket, fixed width so strings sort as numbers."""
    bucket = math.ceil(seconds / SWEEP_BUCKET_SECONDS) * SWEEP_BUCKET_SECONDS
    return f"{bucket:012d}"


def head_item(head: RunHead) -> Item:
    pk, sk = head_key(head.run_id)
    item: Item = {
        "pk": pk,
        "sk": sk,
        "version": head.version,
        "status": head.status,
        "expires_at": head.expires_at,
        "doc": head.model_dump_json(),
    }
    if head.status not in TERMINAL:
        item["sweep_pk"] = sweep_shard(head.run_id)
        item["sweep_at"] = sweep_at(head.sweep_after)
    return item


def decode_head(item: Item) -> RunHead:
    return RunHead.model_validate_json(item["doc"])


def marker_item(head: RunHead) -> Item:
    pk, sk = marker_key(head)
    doc = json.dumps({"run_id": head.run_id, "status": head.status})
    return {"pk": pk, "sk": sk, "expires_at": head.expires_at, "doc": doc}


def _offload(item: Item, doc: str, ref: str, blobs: BlobStore) -> None:
    blobs.put(ref, doc.encode())
    item["doc_ref"] = ref
    item["preview"] = doc[:PREVIEW]


def message_item(head: RunHead, seq: int, message: Message, blobs: BlobStore, attempt: str) -> Item:
    pk, sk = message_key(head, seq)
    doc = message.model_dump_json(exclude_none=True)  # pydantic's serializer: fast
    item: Item = {"pk": pk, "sk": sk, "expires_at": head.expires_at}
    if len(doc.encode()) > BODY_LIMIT:
        _offload(item, doc, f"bodies/{head.run_id}/M{seq:06d}.{attempt}.json", blobs)
        earlier = as_earlier(message)
        if earlier is not message:
            item["short"] = earlier.model_dump_json(exclude_none=True)
    else:
        item["doc"] = doc
    return item


def decode_message(item: Item, blobs: BlobStore, *, earlier: bool = False) -> Message:
    """The message of an item; `earlier`: as later runs see it (no S3 read when shortened)."""
    if earlier and "short" in item:
        return message_from_dict(json.loads(item["short"]))
    doc = item.get("doc")
    if doc is None:
        doc = blobs.get(item["doc_ref"]).decode()
    message = message_from_dict(json.loads(doc))
    return as_earlier(message) if earlier else message


def event_item(event: Event, expires_at: int, blobs: BlobStore, attempt: str) -> Item:
    pk, sk = event_key(event.run_id, event.seq)
    doc = event.model_dump_json()
    item: Item = {"pk": pk, "sk": sk, "expires_at": expires_at}
    if len(doc.encode()) > BODY_LIMIT:
        _offload(item, doc, f"bodies/{event.run_id}/E{event.seq:08d}.{attempt}.json", blobs)
    else:
        item["doc"] = doc
    return item


def decode_event(item: Item, blobs: BlobStore) -> Event:
    doc = item.get("doc")
    if doc is None:
        doc = blobs.get(item["doc_ref"]).decode()
    return Event.model_validate_json(doc)


def commit_items(commit: Commit, blobs: BlobStore) -> tuple[Item, list[Item], list[Item]]:
    """(head item, items that must not exist yet, items written unconditionally)."""
    head = commit.head
    attempt = secrets.token_hex(6)  # offloaded bodies of this attempt only
    new = [message_item(head, seq, m, blobs, attempt) for seq, m in commit.messages]
    new += [event_item(e, head.expires_at, blobs, attempt) for e in commit.events]
    upserts: list[Item] = []
    if commit.expected_version is None or head.status in TERMINAL:
        upserts.append(marker_item(head))
    if head.status in TERMINAL and head.parent_run_id is None:
        # Who has the session's conversation now: the next run starts with them.
        pk, sk = session_state_key(head.agent, head.session_id)
        spent = head.session_spent + head.spent  # the session's runs, this one included
        doc = json.dumps({"chain": head.chain, "run_id": head.run_id, "spent": spent.model_dump()})
        upserts.append({"pk": pk, "sk": sk, "expires_at": head.expires_at, "doc": doc})
    return head_item(head), new, upserts


def decode_session_state(item: Item | None) -> SessionState:
    if item is None:
        return SessionState()
    doc = json.loads(item["doc"])
    return SessionState(chain=doc.get("chain") or [], spent=Spend(**(doc.get("spent") or {})))


def session_history(newest_first: Iterable[Item], limit: int, blobs: BlobStore) -> list[Message]:
    """RunStore.session_history over the session's items below the run's own marker, in
    descending key order (a run's messages come before its marker, newest run first)."""
    if limit <= 0:
        return []
    kept: list[Item] = []  # newest first
    pending: list[Item] = []  # messages of the run whose marker is not reached yet
    for item in newest_first:
        if "#M#" in item["sk"]:
            pending.append(item)
            continue
        if json.loads(item["doc"])["status"] == "succeeded":
            kept.extend(pending)
        pending = []
        if len(kept) >= limit:
            break
    tail = [decode_message(i, blobs, earlier=True) for i in reversed(kept[:limit])]
    if len(kept) <= limit:
        return tail
    for index, message in enumerate(tail):  # cut where a caller's input starts a turn
        if isinstance(message, UserMessage) and message.purpose is None:
            return tail[index:]
    return []


def marker_run_ids(items: Iterable[Item]) -> Iterator[str]:
    """Run ids of a session's run markers among its items (its messages and STATE skipped)."""
    for item in items:
        if item["sk"].startswith("R#") and "#M#" not in item["sk"]:
            yield str(json.loads(item["doc"])["run_id"])


def session_blob_prefixes(agent: str, session_id: str, run_ids: Iterable[str]) -> list[str]:
    """Where a session's objects live: its tool-output cache, and each run's bodies/results."""
    prefixes = [f"tool-cache/{agent}/{session_id}/"]
    for run_id in run_ids:
        prefixes += [f"bodies/{run_id}/", f"results/{run_id}."]
    return prefixes


def workflow_key(workflow_run_id: str) -> tuple[str, str]:
    return f"WF#{workflow_run_id}", "HEAD"


def workflow_item(run: Any) -> Item:
    """A workflow run's item (runtime.workflows.records.WorkflowRun)."""
    pk, sk = workflow_key(run.workflow_run_id)
    doc = run.model_dump_json()
    return {"pk": pk, "sk": sk, "version": run.version, "expires_at": run.expires_at, "doc": doc}
