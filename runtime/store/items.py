"""How runs map onto items of the single table, shared by every store implementation.

    RUN#{run_id}  HEAD                      the run head (version-checked)
    RUN#{run_id}  EV#{seq:08d}              one event
    SES#{sid}     R#{run_key}               a session's run marker (its final status)
    SES#{sid}     R#{run_key}#M#{seq:06d}   one message of that run

Messages live under their session so a session's history is one ordered Query. A body
over BODY_LIMIT bytes goes to the blob store; the item keeps a pointer and a preview, so
no item ever approaches DynamoDB's 400 KB limit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from runtime.events import Event
from runtime.messages import Message, message_from_dict
from runtime.store.base import TERMINAL, BlobStore, Commit, RunHead, SessionRun

BODY_LIMIT = 8 * 1024
PREVIEW = 1024

Item = dict[str, Any]


def head_key(run_id: str) -> tuple[str, str]:
    return f"RUN#{run_id}", "HEAD"


def event_key(run_id: str, seq: int) -> tuple[str, str]:
    return f"RUN#{run_id}", f"EV#{seq:08d}"


def marker_key(head: RunHead) -> tuple[str, str]:
    return f"SES#{head.session_id}", f"R#{head.run_key}"


def message_key(head: RunHead, seq: int) -> tuple[str, str]:
    return f"SES#{head.session_id}", f"R#{head.run_key}#M#{seq:06d}"


def head_item(head: RunHead) -> Item:
    pk, sk = head_key(head.run_id)
    return {
        "pk": pk,
        "sk": sk,
        "version": head.version,
        "status": head.status,
        "expires_at": head.expires_at,
        "doc": head.model_dump_json(),
    }


def decode_head(item: Item) -> RunHead:
    return RunHead.model_validate_json(item["doc"])


def marker_item(head: RunHead) -> Item:
    pk, sk = marker_key(head)
    doc = json.dumps({"run_id": head.run_id, "status": head.status})
    return {"pk": pk, "sk": sk, "expires_at": head.expires_at, "doc": doc}


def message_item(head: RunHead, seq: int, message: Message, blobs: BlobStore) -> Item:
    pk, sk = message_key(head, seq)
    doc = message.model_dump_json(exclude_none=True)  # pydantic's serializer: fast
    item: Item = {"pk": pk, "sk": sk, "expires_at": head.expires_at}
    if len(doc.encode()) > BODY_LIMIT:
        ref = f"bodies/{head.run_id}/M{seq:06d}.json"
        blobs.put(ref, doc.encode())  # deterministic key: a retried commit overwrites it
        item["doc_ref"] = ref
        item["preview"] = doc[:PREVIEW]
    else:
        item["doc"] = doc
    return item


def decode_message(item: Item, blobs: BlobStore) -> Message:
    doc = item.get("doc")
    if doc is None:
        doc = blobs.get(item["doc_ref"]).decode()
    return message_from_dict(json.loads(doc))


def event_item(event: Event, expires_at: int) -> Item:
    pk, sk = event_key(event.run_id, event.seq)
    return {"pk": pk, "sk": sk, "expires_at": expires_at, "doc": event.model_dump_json()}


def decode_event(item: Item) -> Event:
    return Event.model_validate_json(item["doc"])


def commit_items(commit: Commit, blobs: BlobStore) -> tuple[Item, list[Item], list[Item]]:
    """(head item, items that must not exist yet, items written unconditionally)."""
    head = commit.head
    new = [message_item(head, seq, m, blobs) for seq, m in commit.messages]
    new += [event_item(e, head.expires_at) for e in commit.events]
    upserts: list[Item] = []
    if commit.expected_version is None or head.status in TERMINAL:
        upserts.append(marker_item(head))
    return head_item(head), new, upserts


def group_session_runs(found: Iterable[Item], own: str, blobs: BlobStore) -> list[SessionRun]:
    """Session items in key order (a run's marker, then its messages) → earlier runs."""
    runs: list[SessionRun] = []
    for item in found:
        if item["sk"] >= own:
            break
        if "#M#" in item["sk"]:
            runs[-1].messages.append(decode_message(item, blobs))
        else:
            doc = json.loads(item["doc"])
            runs.append(SessionRun(doc["run_id"], doc["status"], []))
    return runs
