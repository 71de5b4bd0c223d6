"""Commit records: one item per commit, holding the run's head as of that commit and the
messages and events it added (runtime.store.items has the table's whole map).

    RUN#{run_id}   T#{event_seq:08d}.{version:08d}   head (`doc`), messages (`msgs`), events
                                                     (`evs`), the first message's number (`ms`)

Why one item: a single conditional PutItem is atomic on its own, so a commit needs no
transaction (which DynamoDB charges twice) and writes each byte once. The key is a function
of the head the writer read (its event counter and the version it makes), so two writers of
the same version collide on it and only the first is stored (`attribute_not_exists`): the
version check is the key. The run's state is its newest record (a Query, newest first,
Limit 1). The event counter leads the key so that events are found by number; it never
goes down, so records sort by version too.

A message or event over BODY_LIMIT goes to the blob store under a key unique to the commit
attempt, leaving `{"$ref", "$preview"}` (and a tool result's `$short`: what later runs of
the session read, so history never fetches bodies). If a commit's messages and events
together still pass RECORD_LIMIT (many large ones at once), they go to one object and the
record keeps `$body`: no record approaches DynamoDB's 400 KB.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from runtime.events import Event
from runtime.messages import Message, UserMessage, as_earlier, message_from_dict
from runtime.store.base import BlobStore, RunHead
from runtime.structs import dump_changed, dump_set, encode, load, load_json
from runtime.structs import prepare as prepare_types

BODY_LIMIT = 8 * 1024
PREVIEW = 1024
RECORD_LIMIT = 64 * 1024
PREFIX = "T#"

Item = dict[str, Any]


def record_sk(event_seq: int, version: int) -> str:
    return f"{PREFIX}{event_seq:08d}.{version:08d}"


def head_doc(head: RunHead) -> str:
    """The head as stored: fields at their defaults are left out (a head under 1 KB), as
    pydantic's `exclude_defaults` wrote it (runtime.structs.dump_changed). tests/conftest.py
    reads every head any test commits back, validated, and checks it is the same head."""
    return encode(dump_changed(head))


def prepare() -> None:
    """What the first commit and read of a run work out about its records, worked out now
    (runtime.structs.prepare; handlers.snapshot calls it before a SnapStart snapshot)."""
    prepare_types(RunHead, Message, Event)


def decode_head(item: Item) -> RunHead:
    """The stored head, validated (coerced as pydantic's lax mode read it)."""
    return load_json(RunHead, item["doc"], strict=False)


def version_of(item: Item) -> int:
    return int(item["sk"].rsplit(".", 1)[1])


def _entry(doc: str, ref: str, blobs: BlobStore, short: str | None = None) -> str:
    """A body inline, or where it went and a preview of it."""
    if len(doc.encode()) <= BODY_LIMIT:
        return doc
    blobs.put(ref, doc.encode())
    entry: dict[str, Any] = {"$ref": ref, "$preview": doc[:PREVIEW]}
    if short is not None:
        entry["$short"] = json.loads(short)
    return json.dumps(entry, ensure_ascii=False)


def record_item(
    head: RunHead,
    messages: list[tuple[int, Message]],
    events: list[Event],
    blobs: BlobStore,
    attempt: Callable[[], str],
) -> Item:
    """The record of a commit that makes `head` (its version and counters already moved).
    `attempt()`: this commit attempt's own token, for the keys of what it offloads (asked
    only when something is: most commits offload nothing)."""
    run = head.run_id
    first = head.event_seq - len(events)
    item: Item = {
        "pk": f"RUN#{run}",
        "sk": record_sk(first, head.version),
        "expires_at": head.expires_at,
        "doc": head_doc(head),
        "ms": head.msg_seq - len(messages),
    }
    msgs = []
    for seq, message in messages:
        raw = msgspec.json.encode(dump_set(message))  # without its unset optional fields
        doc = raw.decode()
        if len(raw) <= BODY_LIMIT:
            msgs.append(doc)
            continue
        earlier = as_earlier(message)
        short = encode(dump_set(earlier)) if earlier is not message else None
        msgs.append(_entry(doc, f"bodies/{run}/M{seq:06d}.{attempt()}.json", blobs, short))
    content = {"msgs": "[" + ",".join(msgs) + "]", "evs": _events_json(events, run, blobs, attempt)}
    if sum(len(v) for v in content.values()) > RECORD_LIMIT:
        ref = f"bodies/{run}/T{head.version:08d}.{attempt()}.json"
        blobs.put(ref, json.dumps(content).encode())
        item["body"] = ref
    else:
        item.update({k: v for k, v in content.items() if v != "[]"})
    return item


def _events_json(
    events: list[Event], run: str, blobs: BlobStore, attempt: Callable[[], str]
) -> str:
    """The events as a JSON list: in one pass when all of them are under BODY_LIMIT
    together (the same text as one by one, at half the cost), else each offloaded as
    needed."""
    together = msgspec.json.encode(events)
    if len(together) <= BODY_LIMIT:
        return together.decode()
    entries = [
        _entry(encode(e), f"bodies/{run}/E{e.seq:08d}.{attempt()}.json", blobs) for e in events
    ]
    return "[" + ",".join(entries) + "]"


def _content(item: Item, blobs: BlobStore, name: str) -> list[Any]:
    if "body" in item:
        stored: dict[str, str] = json.loads(blobs.get(item["body"]))
        return list(json.loads(stored[name]))
    return list(json.loads(item[name])) if name in item else []


def _body(entry: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    if "$ref" not in entry:
        return entry
    loaded: dict[str, Any] = json.loads(blobs.get(entry["$ref"]))
    return loaded


def record_messages(item: Item, blobs: BlobStore, *, earlier: bool = False) -> list[Message]:
    """The record's messages in order; `earlier`: as later runs see them (no S3 read when a
    shortened form was kept)."""
    found: list[Message] = []
    for entry in _content(item, blobs, "msgs"):
        if earlier and "$short" in entry:
            found.append(message_from_dict(entry["$short"]))
            continue
        message = message_from_dict(_body(entry, blobs))
        found.append(as_earlier(message) if earlier else message)
    return found


def record_events(item: Item, blobs: BlobStore) -> list[Event]:
    return [load(Event, _body(e, blobs), strict=False) for e in _content(item, blobs, "evs")]


def message_bodies(item: Item) -> list[dict[str, Any]]:
    """The message entries as stored (inline bodies, or `$ref`/`$preview`/`$short`)."""
    return [] if "msgs" not in item else list(json.loads(item["msgs"]))


# ---- reads shared by the stores ---------------------------------------------------------


def head_bound(head: RunHead) -> str:
    """The greatest record key of `head`'s version: newer records sort after it."""
    return record_sk(head.event_seq, head.version)


def messages_from(
    newest_first: Iterable[Item], head: RunHead, start: int, blobs: BlobStore
) -> list[Message]:
    """RunStore.load_messages over the run's records up to `head`, newest first: stops at
    the record holding message `start`, so a compacted run reads nothing before it."""
    found: list[tuple[int, Item]] = []
    for item in newest_first:
        if "msgs" in item or "body" in item:
            found.append((int(item["ms"]), item))
        if int(item["ms"]) <= start:
            break
    messages: list[Message] = []
    for first, item in reversed(found):
        entries = record_messages(item, blobs)
        messages += entries[max(0, start - first) :]
    return messages


def events_from(
    before: Item | None, following: Iterable[Item], after: int, limit: int, blobs: BlobStore
) -> list[Event]:
    """At most `limit` events after `after`: from the record before the first one numbered
    after it (a commit's events may straddle `after`), then record by record."""
    events: list[Event] = []
    for item in [before] if before is not None else []:
        events += [e for e in record_events(item, blobs) if e.seq > after]
    for item in following:
        if len(events) >= limit:
            break
        events += [e for e in record_events(item, blobs) if e.seq > after]
    return events[:limit]


def history_from(
    markers_newest_first: Iterable[Item],
    own_sk: str,
    records_of: Callable[[str, int], Iterator[Item]],
    limit: int,
    blobs: BlobStore,
) -> list[Message]:
    """RunStore.session_history: the succeeded earlier runs' messages, newest run first,
    each run's records newest first (`records_of(run_id, wanted)`), until one more than
    `limit` is known (whether there are more decides where the history is cut)."""
    if limit <= 0:
        return []
    kept: list[Message] = []  # newest first
    for marker in markers_newest_first:
        if marker["sk"] == own_sk:
            continue
        doc = json.loads(marker["doc"])
        if doc["status"] != "succeeded":
            continue
        for item in records_of(doc["run_id"], limit + 1 - len(kept)):
            if "msgs" in item or "body" in item:
                kept.extend(reversed(record_messages(item, blobs, earlier=True)))
            if len(kept) > limit:
                break
        if len(kept) > limit:
            break
    tail = list(reversed(kept[:limit]))
    if len(kept) <= limit:
        return tail
    for index, message in enumerate(tail):  # cut where a caller's input starts a turn
        if isinstance(message, UserMessage) and message.purpose is None:
            return tail[index:]
    return []
