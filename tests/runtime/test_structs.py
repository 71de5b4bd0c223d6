"""The run-time records (msgspec Structs, runtime.structs) store the very bytes pydantic
stored, and what comes from outside is still validated.

The expected documents were written by the pydantic models of 2fc2743 from the same values
(`model_dump_json(exclude_defaults=True)` for a head, `exclude_none=True` for messages, a
plain dump for events): stored runs and runs in flight stay readable with no migration.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from runtime.errors import InvalidRequest, ModelError
from runtime.events import Event, made_event
from runtime.messages import (
    AssistantMessage,
    ImagePart,
    SummaryMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
)
from runtime.models.base import assemble_response, wire_usage
from runtime.store import records
from runtime.store.base import (
    ApprovalDecision,
    ChildRun,
    ContextState,
    PendingApproval,
    RemoteTask,
    RunHead,
    Spend,
    TraceRef,
    new_head,
)
from runtime.structs import dump, dump_changed, encode, load, load_json, replace

HEAD_DOC = (
    '{"run_id":"r","agent":"a","session_id":"s","run_key":"k","spec_hash":"h",'
    '"agent_hash":"g","created_at":1.0,"updated_at":1.5,"expires_at":2,"pending_approval":'
    '[{"tool_call_id":"c","tool_name":"n","inputs":null,"expires_at":0.0,"decisions":[]}],'
    '"decisions":{"c":{"approved":true}},"result":{"x":null,"y":0,"z":"é\u2028\\"\\\\"},'
    '"children":[{"tool_call_id":"c","run_id":"x","agent":"y","remote":{"task_id":"t"}}],'
    '"usage_by_agent":{"a":{"input_tokens":1}},"context":{"answers_before":{"a":0}},'
    '"cost_usd":1e-7,"budget_left":{},"trace":{"trace_id":"t","span_id":"s"}}'
)


def _head() -> RunHead:
    return new_head(
        run_id="r",
        agent="a",
        session_id="s",
        run_key="k",
        spec_hash="h",
        agent_hash="g",
        created_at=1,  # a whole-second clock: stored as the float it is
        updated_at=1.5,
        expires_at=2,
        children=[
            # 0.0 computed, not the default's own object: still left out, as pydantic did
            ChildRun(
                tool_call_id="c",
                run_id="x",
                agent="y",
                remote=RemoteTask(task_id="t", checked_at=0.5 - 0.5),
            )
        ],
        decisions={"c": ApprovalDecision(approved=True)},
        usage_by_agent={"a": Usage(input_tokens=1)},
        pending_approval=[
            PendingApproval(
                tool_call_id="c", tool_name="n", inputs=None, expires_at=0.0, decisions=[]
            )
        ],
        context=ContextState(answers_before={"a": 0}),
        session_spent=Spend(tokens=0, cost_usd=0.1 - 0.1),  # equal to the default: left out
        result={"x": None, "y": 0, "z": 'é\u2028"\\'},
        cost_usd=1e-7,
        usage=Usage(input_tokens=0, output_tokens=0),
        budget_left=Spend(),  # not the default (None): written, with its own defaults left out
        warnings=[],
        trace=TraceRef(trace_id="t", span_id="s"),
    )


def test_a_head_is_stored_as_pydantic_stored_it_and_reads_back_equal() -> None:
    head = _head()
    assert records.head_doc(head) == HEAD_DOC
    again = records.decode_head({"doc": HEAD_DOC})
    assert again == head
    assert isinstance(again.created_at, float) and isinstance(again.children[0].remote, RemoteTask)


MESSAGES: list[tuple[Any, str]] = [
    (
        ToolResultMessage(
            tool_call_id="a",
            tool_name="b",
            content="c",
            inputs={"x": None},
            output={"y": None, "z": [None]},
            images=[ImagePart(mime_type="image/png", data="AA==")],
            at=2.5,
        ),
        '{"kind":"tool_result","tool_call_id":"a","tool_name":"b","content":"c","success":true,'
        '"inputs":{"x":null},"output":{"y":null,"z":[null]},"output_truncated":false,'
        '"duration_ms":0,"turn":0,"at":2.5,"outcome_unknown":false,'
        '"images":[{"mime_type":"image/png","data":"AA=="}]}',
    ),
    (
        AssistantMessage(
            text=None,
            tool_calls=[
                ToolCall(id="1", name="n", arguments={"q": None}, provider_data={"s": "x"})
            ],
            usage=Usage(input_tokens=3),
        ),
        '{"kind":"assistant","tool_calls":[{"id":"1","name":"n","arguments":{"q":null},'
        '"provider_data":{"s":"x"}}],"usage":{"input_tokens":3,"output_tokens":0},"model":"",'
        '"agent":"","model_id":"","stop_reason":"end_turn","turn":0}',
    ),
    (
        UserMessage(content="hi", purpose="correct"),
        '{"kind":"user","content":"hi","purpose":"correct"}',
    ),
    (
        SummaryMessage(content="s", covers_before=3),
        '{"kind":"summary","content":"s","covers_before":3,"replaced":0,"model":"",'
        '"usage":{"input_tokens":0,"output_tokens":0}}',
    ),
]


@pytest.mark.parametrize(("message", "stored"), MESSAGES)
def test_a_message_is_stored_as_pydantic_stored_it_and_reads_back_equal(
    message: Any, stored: str
) -> None:
    item = records.record_item(_head(), [(0, message)], [], blobs=None, attempt=str)  # type: ignore[arg-type]
    assert item["msgs"] == f"[{stored}]"
    assert records.record_messages(item, blobs=None) == [message]  # type: ignore[arg-type]
    assert message_from_dict(json.loads(stored)) == message


def test_an_event_is_stored_as_pydantic_stored_it() -> None:
    event = made_event(1, "tool_call", 5, "r", {"a": [1, None]})  # a whole-second clock
    stored = '{"seq":1,"type":"tool_call","at":5.0,"run_id":"r","data":{"a":[1,null]}}'
    assert encode(event) == stored
    assert load(Event, json.loads(stored)) == event


def test_a_stored_record_is_validated_when_read_back() -> None:
    doc = json.loads(HEAD_DOC)
    with pytest.raises(msgspec.ValidationError, match="unknown field `surprise`"):
        records.decode_head({"doc": json.dumps({**doc, "surprise": 1})})
    with pytest.raises(msgspec.ValidationError, match=r"decisions\[\.\.\.\]\.approved"):
        records.decode_head({"doc": json.dumps({**doc, "decisions": {"c": {"approved": []}}})})
    with pytest.raises(msgspec.ValidationError, match=r"\$\.kind"):
        message_from_dict({"kind": "robot", "content": "x"})
    with pytest.raises(msgspec.ValidationError, match=r"\$\.turn"):
        message_from_dict({"kind": "assistant", "turn": "many"})
    # Coerced where pydantic's lax mode coerced, as the stores read with it.
    assert message_from_dict({"kind": "assistant", "turn": "3"}).turn == 3  # type: ignore[union-attr]
    assert load_json(Spend, b'{"tokens":"4"}', strict=False) == Spend(tokens=4)


def test_dumps_and_copies() -> None:
    usage = Usage(input_tokens=2, output_tokens=1)
    assert dump(usage) == {"input_tokens": 2, "output_tokens": 1}
    assert dump_changed(replace(usage, output_tokens=0)) == {"input_tokens": 2}
    assert usage == Usage(input_tokens=2, output_tokens=1) and usage != Spend(tokens=3)
    assert dump(UserMessage(content="x")) == {"kind": "user", "content": "x", "purpose": None}


def test_a_provider_answering_garbage_gets_a_model_error() -> None:
    """Token counts and tool call ids come from the wire: validated (coerced as pydantic's
    lax mode did), and what is not a count is the model's error, said, not a crash."""
    assert wire_usage("m", "12", 3.0) == Usage(input_tokens=12, output_tokens=3)
    with pytest.raises(ModelError, match="invalid token counts"):
        wire_usage("m", {"lots": True}, 3)
    with pytest.raises(ModelError, match="invalid token counts"):
        assemble_response(["hi"], [], "end_turn", None, "many", "model-x")  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="not strings"):
        ToolCall.from_json(None, "lookup", "{}")  # type: ignore[arg-type]
    assert ToolCall.from_json("c1", "lookup", "[1]").arguments_error is not None


def test_a_new_run_with_a_bad_value_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidRequest) as refused:
        new_head(**{**msgspec.structs.asdict(_head()), "max_turns": "lots"})
    assert refused.value.field == "max_turns"


#: One scripted run with a sync tool on the in-memory store, in a fresh interpreter that
#: notes every module outside the spec (runtime.spec: validated with pydantic at build time)
#: that imports pydantic; handlers.step is imported as the function's entry point.
NO_PYDANTIC = """
import asyncio, builtins, json, sys
real, offenders = builtins.__import__, set()
def noted(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "?")
    if level == 0 and name.split(".")[0] in ("pydantic", "pydantic_core"):
        if not importer.startswith(("pydantic", "runtime.spec")):
            offenders.add(importer)
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = noted
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/bench"]
import handlers.step
from loop_overhead import spec_for
from runtime.engine.loop import Engine
from runtime.store.memory import MemoryStore
store = MemoryStore()
head = asyncio.run(Engine(spec_for(3, "noop"), store).run("a", "go"))
assert head.status == "succeeded", head
store.load_run(head.run_id), store.list_events(head.run_id)
print(json.dumps(sorted(offenders)))
"""


def test_a_step_imports_pydantic_only_for_the_spec() -> None:
    """The run-time records, their store and the engine never import pydantic: only the
    spec's models do (runtime.spec, which loads the compiled spec at run time)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", NO_PYDANTIC, str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []


PREPARED = """
import msgspec
from runtime import structs
from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.events import made_event
from runtime.store import records
from runtime.store.base import ChildRun, ContextState, RemoteTask, new_head
records.prepare()
def unprepared(*args, **kwargs):
    raise AssertionError("a record's plan was worked out at its first use")
structs._Plan.__init__ = unprepared
head = new_head(run_id="r", agent="a", session_id="s", run_key="k", spec_hash="h",
                agent_hash="g", created_at=1.0, updated_at=1.0, expires_at=2,
                context=ContextState(base=1), children=[ChildRun(
                    tool_call_id="c", run_id="x", agent="y", remote=RemoteTask(task_id="t"))])
messages = [UserMessage(content="x"), AssistantMessage(tool_calls=[ToolCall(id="c", name="n")]),
            ToolResultMessage(tool_call_id="c", tool_name="n", content="ok")]
item = records.record_item(head, list(enumerate(messages)), [made_event(0, "run_started", 1.0, "r", {})], None, str)
assert records.decode_head(item) == head and records.record_messages(item, None) == messages
print("ok")
"""


def test_prepare_works_out_what_the_first_commit_would() -> None:
    """handlers.snapshot prepares the records at a SnapStart init: a restored copy's first
    commit and read then work nothing out again (a fresh interpreter, plans forbidden)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", PREPARED], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
