"""The store's layout under attack and at scale: a losing writer cannot overwrite the
winner's body, agents cannot see each other's sessions or caches, and reads are bounded by
what is needed, not by the size of a session or a run."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from infra.local.aws import embedded_aws
from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import RunNotFound, StateConflict, WrongState
from runtime.messages import ToolResultMessage, UserMessage
from runtime.spec import AgentfnSpec
from runtime.store.dynamo import DynamoStore
from runtime.store.memory import MemoryStore
from runtime.structs import dump, replace
from tests.runtime.engine.kit import call, make_spec, new_engine

BIG = "x" * 20_000  # over the inline body limit: the message body goes to S3


def _clarifying_spec() -> AgentfnSpec:
    script = [
        {"tool_calls": [call("agent_clarify", {"question": "Which order?"}, id="q")]},
        {"text": "thanks"},
    ]
    return make_spec(script, tools=[])


class Racing:
    """Lets two writers read the same head, then commit one after the other."""

    def __init__(self, store: Any):
        self.store = store
        self.blobs = store.blobs
        self.barrier = threading.Barrier(2)
        self.lock = threading.Lock()

    def load_head(self, run_id: str) -> Any:
        head = self.store.load_head(run_id)
        self.barrier.wait(timeout=10)
        return head

    def commit(self, commit: Any) -> None:
        with self.lock:  # one after the other: the second writer loses, after the first won
            self.store.commit(commit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_a_refused_concurrent_reply_cannot_overwrite_the_winners_body() -> None:
    with embedded_aws() as clients:
        store = clients.store()
        spec = _clarifying_spec()
        head = asyncio.run(Engine(spec, store, clock=FakeClock()).run("a", "help"))
        assert head.status == "awaiting_input"
        racing = Racing(store)
        answers: dict[str, Any] = {}

        def reply(text: str) -> None:
            engine = Engine(spec, racing, clock=FakeClock())  # type: ignore[arg-type]
            try:
                answers[text] = engine.reply(head.run_id, text)
            except StateConflict as exc:
                answers[text] = exc

        first, second = "A" + BIG, "B" + BIG
        threads = [threading.Thread(target=reply, args=(t,)) for t in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winner = next(t for t, a in answers.items() if not isinstance(a, Exception))
        loser = next(t for t, a in answers.items() if isinstance(a, Exception))
        assert winner != loser
        fresh = store.load_head(head.run_id)
        recorded = store.load_messages(fresh)[-1]
        assert isinstance(recorded, ToolResultMessage)
        assert recorded.content == winner  # the loser's body never replaced the winner's


def _session_spec(agent_tools: list[str]) -> AgentfnSpec:
    script = [{"tool_calls": [call("big", {"size": 9000}, id="c1")]}, {"text": "done"}]
    base = make_spec(script, tools=agent_tools, tool_result_max_chars=1000)
    data = base.model_dump(mode="json", by_alias=True)
    data["agents"]["b"] = {**data["agents"]["a"], "description": "another agent"}
    return AgentfnSpec.model_validate(data)


def test_another_agent_with_the_same_session_id_sees_nothing_of_it() -> None:
    spec = _session_spec(["big"])
    engine = new_engine(spec)
    first = asyncio.run(engine.run("a", "secret plans", "shared-session"))
    assert first.status == "succeeded"
    other = asyncio.run(engine.run("b", "what did we say?", "shared-session"))
    seen = engine._model_cache["m"].requests[-1].messages
    assert [m.content for m in seen if isinstance(m, UserMessage)] == ["what did we say?"]
    # ... and cannot read a's cached outputs, even with the same call id.
    spec_b = make_spec(
        [{"tool_calls": [call("session_cache_get", {"id": "c1"})]}, {"text": "x"}],
        tools=["echo"],
    )
    data = spec_b.model_dump(mode="json", by_alias=True)
    data["agents"]["b"] = {**data["agents"]["a"], "description": "b"}
    peeker = new_engine(AgentfnSpec.model_validate(data), store=engine.store)
    head = asyncio.run(peeker.run("b", "peek", "shared-session"))
    denied = peeker.result(head.run_id)["tool_calls"][0]
    assert denied["success"] is False and "no cached output" in denied["output"]["error"]
    keys = [k for k in engine.store.blobs.objects if k.startswith("tool-cache/")]
    assert keys and all(k.startswith(("tool-cache/a/", "tool-cache/b/")) for k in keys)
    assert other.session_id == first.session_id == "shared-session"


class CountingDynamo:
    """A DynamoDB client that counts what Query reads (items returned, pages asked for)."""

    def __init__(self, client: Any):
        self.client = client
        self.items_read = 0
        self.queries = 0
        self.exceptions = client.exceptions

    def query(self, **kwargs: Any) -> Any:
        answer = self.client.query(**kwargs)
        self.queries += 1
        self.items_read += len(answer.get("Items", []))
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_session_history_reads_only_the_messages_it_keeps() -> None:
    script = [{"text": "ok"}] * 60
    spec = make_spec(script, tools=[], session={"history_limit": 4})
    with embedded_aws() as clients:
        counting = CountingDynamo(clients.dynamodb)
        store = DynamoStore(counting, clients.table, clients.store().blobs)
        engine = Engine(spec, store, clock=FakeClock())
        head = None
        for i in range(40):  # a long session: 40 runs, 80 messages
            head = asyncio.run(engine.run("a", f"message {i}", head.session_id if head else "s"))
        assert head is not None
        before = counting.items_read
        history = store.session_history(head, 4)
        assert [m.content for m in history if isinstance(m, UserMessage)] == [
            "message 37",
            "message 38",
        ]
        read = counting.items_read - before
        assert read <= 2 * 4 + 10, read  # one page sized to the limit, not 120 items


def test_offloaded_tool_outputs_reach_later_runs_without_reading_s3() -> None:
    script = [{"tool_calls": [call("big", {"size": 30_000}, id="b1")]}, {"text": "ok"}]
    spec = make_spec(script * 2, tools=["big"])
    store = MemoryStore()
    engine = new_engine(spec, store)
    first = asyncio.run(engine.run("a", "one", "s"))
    reads: list[str] = []
    original = store.blobs.get
    store.blobs.get = lambda key: reads.append(key) or original(key)  # type: ignore[method-assign]
    history = store.session_history(
        replace(store.load_head(first.run_id), run_key="9" * 13 + "-z"), 50
    )
    results = [m for m in history if isinstance(m, ToolResultMessage)]
    assert results and "earlier output shortened from" in results[0].content
    assert reads == []  # the item's short form was enough


def test_list_events_reads_one_page_of_the_size_asked_for() -> None:
    spec = make_spec(
        [{"tool_calls": [call("echo", {"text": str(i)})]} for i in range(30)] + [{"text": "done"}],
        tools=["echo"],
        max_turns=40,
    )
    with embedded_aws() as clients:
        counting = CountingDynamo(clients.dynamodb)
        store = DynamoStore(counting, clients.table, clients.store().blobs)
        head = asyncio.run(Engine(spec, store, clock=FakeClock()).run("a", "go"))
        assert head.event_seq > 100
        before, queries = counting.items_read, counting.queries
        events = store.list_events(head.run_id, after=10, limit=5)
        assert [e.seq for e in events] == [11, 12, 13, 14, 15]
        # Events live in their commit's record: the record that may hold event 11, then one
        # page of at most `limit` records, whatever the run's length.
        assert counting.items_read - before <= 5 + 1
        assert counting.queries - queries == 2
        assert [e.seq for e in store.list_events(head.run_id, after=-1, limit=3)] == [0, 1, 2]
        last = store.list_events(head.run_id, after=head.event_seq - 3)
        assert [e.seq for e in last] == [head.event_seq - 2, head.event_seq - 1]


def test_a_reply_to_a_run_that_is_not_waiting_is_refused_unless_it_repeats() -> None:
    engine = new_engine(_clarifying_spec())
    head = asyncio.run(engine.run("a", "help"))
    engine.reply(head.run_id, "ORD-1")
    again = engine.reply(head.run_id, "ORD-1")  # a retry after a lost answer: accepted
    assert again.status == "running"
    with pytest.raises(WrongState):
        engine.reply(head.run_id, "ORD-2")  # a different answer: refused


def test_a_runs_result_is_one_query_and_the_same_as_head_then_messages() -> None:
    """GET /runs/{id} (Engine.result) reads the run's records once: the newest record is the
    head, the rest hold the messages; reading the head first read that record twice. The
    answer is what the head and its messages read apart give, a big offloaded body included."""
    from collections import Counter

    script = [
        {"text": "looking", "tool_calls": [call("echo", {"text": BIG})]},
        {"text": "found it"},
    ]
    with embedded_aws() as clients:
        store = clients.store()
        engine = Engine(make_spec(script, tools=["echo"]), store, clock=FakeClock())
        head = asyncio.run(engine.run("a", "find it"))
        assert head.status == "succeeded"
        queries: Counter[str] = Counter()
        clients.dynamodb.meta.events.register(
            "before-parameter-build.dynamodb", lambda model, **_: queries.update([model.name])
        )
        result = engine.result(head.run_id)
        assert dict(queries) == {"Query": 1}

        apart = store.load_messages(store.load_head(head.run_id))
        together = store.load_run(head.run_id)
        assert together[0] == store.load_head(head.run_id)
        assert [dump(m) for m in together[1]] == [dump(m) for m in apart]
        assert result["result"] == "found it" and len(apart) == 4
        with pytest.raises(RunNotFound):
            store.load_run("a-missing-run")
