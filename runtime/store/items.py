"""How runs map onto items of the single table, shared by every store implementation.

    RUN#{run_id}           T#{event_seq:08d}.{version:08d}  one commit (runtime.store.records):
                                                    the head as of it, its messages and events
    RUN#{run_id}           HEAD                      the run's entry in the `sweep` index
    SES#{agent}#{sid}      R#{run_key}               a session's run marker (its final status)
    SES#{agent}#{sid}      STATE                     who has the session, what its runs spent

Every partition key starts with something IAM can scope to one agent: a run id starts with
its agent's tag (runtime.naming), and a session belongs to one agent, so agent B started
with agent A's session id sees nothing of A's conversation. A session's history is read
through its markers (newest first) and each earlier run's records, newest first, only as
far as needed.

A commit is one record, written only if absent (the version check: runtime.store.records).
The commits that also change the session — a run's start (its marker) and its end (the
marker's final status, the session's state) — are one transaction with their record.

The HEAD item of a run that is not finished carries `sweep_pk`/`sweep_at`, the keys of the
sparse `sweep` index the stale-run sweeper reads; a finished run's drops them. It is
written only when `sweep_at` moves (it is rounded to SWEEP_BUCKET_SECONDS), with the
version of the record it follows (`hv`, a write from an older commit never lands over a
newer one's). The head remembers what the index holds (`sweep_indexed`). An entry that
is earlier than the head's `sweep_after` only costs the sweeper a look (it re-reads the
head); one later than it could hide a stalled run, so a commit that brings the entry
forward writes it before its record, one that pushes it back after.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from runtime.store import records
from runtime.store.base import TERMINAL, BlobStore, Commit, RunHead, SessionState, Spend
from runtime.structs import dump, encode, load

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


def sweep_shard(run_id: str) -> str:
    return f"SWEEP#{int(run_id[-1], 16) % SWEEP_SHARDS:02d}" if run_id else "SWEEP#00"


def sweep_at(seconds: float) -> str:
    """`sweep_at` as stored: rounded up to the bucket, fixed width so strings sort as numbers.
    The last one is kept: a run's commits fall in the same bucket for minutes."""
    global _last_sweep
    bucket = math.ceil(seconds / SWEEP_BUCKET_SECONDS) * SWEEP_BUCKET_SECONDS
    last = _last_sweep
    if last[0] == bucket:
        return last[1]
    _last_sweep = bucket, f"{bucket:012d}"
    return _last_sweep[1]


_last_sweep: tuple[int, str] = (-1, "")


def index_item(head: RunHead) -> Item:
    """The run's HEAD item: in the `sweep` index while the run is not finished."""
    pk, sk = head_key(head.run_id)
    item: Item = {"pk": pk, "sk": sk, "hv": head.version, "expires_at": head.expires_at}
    if head.sweep_indexed:
        item["sweep_pk"] = sweep_shard(head.run_id)
        item["sweep_at"] = head.sweep_indexed
    return item


def marker_item(head: RunHead) -> Item:
    pk, sk = marker_key(head)
    doc = json.dumps({"run_id": head.run_id, "status": head.status})
    return {"pk": pk, "sk": sk, "expires_at": head.expires_at, "doc": doc}


@dataclass
class CommitItems:
    """What one commit writes: its record, the HEAD item when the index entry moves (and
    whether before the record), and the session's items that change with it."""

    record: Item
    index: Item | None
    index_first: bool
    upserts: list[Item]


class _Attempt:
    """A commit attempt's own token (for the keys of the bodies it offloads), drawn when
    first asked: most commits offload nothing, and a draw is a system call."""

    def __init__(self) -> None:
        self._token = ""

    def __call__(self) -> str:
        if not self._token:
            self._token = secrets.token_hex(6)
        return self._token


def commit_items(commit: Commit, blobs: BlobStore) -> CommitItems:
    head = commit.head
    if head.version != (commit.expected_version or 0) + 1:  # the record's key says which
        raise ValueError(f"a commit makes version {(commit.expected_version or 0) + 1}")
    attempt = _Attempt()  # offloaded bodies of this attempt only
    upserts: list[Item] = []
    if commit.expected_version is None or head.status in TERMINAL:
        upserts.append(marker_item(head))
    if head.status in TERMINAL and head.parent_run_id is None:
        # Who has the session's conversation now: the next run starts with them.
        pk, sk = session_state_key(head.agent, head.session_id)
        spent = head.session_spent + head.spent  # the session's runs, this one included
        doc = json.dumps({"chain": head.chain, "run_id": head.run_id, "spent": dump(spent)})
        upserts.append({"pk": pk, "sk": sk, "expires_at": head.expires_at, "doc": doc})
    indexed = head.sweep_indexed
    wanted = "" if head.status in TERMINAL else sweep_at(head.sweep_after)
    head.sweep_indexed = wanted  # the record says what the index holds once it is written
    index = index_item(head) if upserts or wanted != indexed else None
    first = bool(wanted) and (not indexed or wanted < indexed)
    record = records.record_item(head, commit.messages, commit.events, blobs, attempt)
    return CommitItems(record, index, first, upserts)


def decode_session_state(item: Item | None) -> SessionState:
    if item is None:
        return SessionState()
    doc = json.loads(item["doc"])
    spent = load(Spend, doc.get("spent") or {}, strict=False)
    return SessionState(chain=load(list[str], doc.get("chain") or []), spent=spent)


def marker_run_ids(items: Iterable[Item]) -> Iterator[str]:
    """Run ids of a session's run markers among its items (its STATE skipped)."""
    for item in items:
        if item["sk"].startswith("R#"):
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
    doc = encode(run)
    return {"pk": pk, "sk": sk, "version": run.version, "expires_at": run.expires_at, "doc": doc}
