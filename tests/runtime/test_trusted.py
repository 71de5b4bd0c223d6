"""runtime.trusted builds models without validation on the per-turn path: each use must give
what pydantic's own (validated) construction, copy and equality give, byte for byte."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from runtime.events import Event, made_event
from runtime.messages import Usage
from runtime.store.base import ContextState, RunHead, Spend
from runtime.trusted import copied, made


def test_made_event_is_the_validated_event() -> None:
    data = {"turn": 3, "inputs": {"a": [1, 2]}, "text": "é"}
    made = made_event(7, "tool_call", 1_790_000_000.25, "run1", data)
    validated = Event(seq=7, type="tool_call", at=1_790_000_000.25, run_id="run1", data=data)
    assert made == validated
    assert made.model_dump_json() == validated.model_dump_json()
    assert made.model_fields_set == validated.model_fields_set
    assert made.data is not data  # validation copies the dict: so does made_event
    # A clock that answers in whole seconds: validation makes the float, so must this.
    whole = made_event(1, "run_started", 5, "r", {})
    assert (
        whole.model_dump_json()
        == Event(seq=1, type="run_started", at=5, run_id="r").model_dump_json()
    )


def test_made_is_model_construct() -> None:
    values = {"input_tokens": 3, "output_tokens": 4}
    assert made(Usage, dict(values)) == Usage(**values)
    assert made(Usage, dict(values)).model_dump_json() == Usage(**values).model_dump_json()


def _head(**extra: object) -> RunHead:
    return RunHead(
        run_id="r",
        agent="a",
        session_id="s",
        run_key="k",
        spec_hash="h",
        agent_hash="g",
        created_at=1.0,
        updated_at=1.0,
        expires_at=2,
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "update",
    [
        {},
        {"version": 2, "usage": Usage(input_tokens=5), "lease_owner": None},
        {"warnings": ["w"], "context": ContextState(base=4), "status": "succeeded"},
    ],
)
def test_copied_is_model_copy(update: dict[str, object]) -> None:
    head = _head(turn=3)
    ours, theirs = copied(head, update), head.model_copy(update=update)
    assert ours == theirs
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.model_dump_json(exclude_defaults=True) == theirs.model_dump_json(
        exclude_defaults=True
    )
    assert head.version == 0 and ours is not head  # the original is untouched


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (Usage(), Usage()),
        (Usage(input_tokens=1), Usage()),
        (Usage(), Spend()),
        (Spend(tokens=2, cost_usd=0.5), Spend(tokens=2, cost_usd=0.5)),
        (Spend(), Spend(cost_usd=0.1)),
        (ContextState(), ContextState()),
        (ContextState(answers_before={"a": 1}), ContextState()),
        (Usage(), 0),
        (Usage(), None),
    ],
)
def test_fast_equality_is_pydantics(a: BaseModel, b: object) -> None:
    assert (a == b) is BaseModel.__eq__(a, b) or (
        BaseModel.__eq__(a, b) is NotImplemented and (a == b) is False
    )
    assert (a != b) is (a == b) ^ True


def test_head_without_defaults_is_unchanged() -> None:
    """A head at its defaults and one far from them serialise as pydantic always did."""
    far = _head(
        usage=Usage(input_tokens=9),
        context=ContextState(base=2, answers_before={"a": 1}),
        session_spent=Spend(tokens=1),
        usage_by_agent={"a": Usage(output_tokens=2)},
    )
    near = _head(usage=Usage(), context=ContextState(), session_spent=Spend())
    assert "usage" not in near.model_dump_json(exclude_defaults=True)
    assert '"usage":{"input_tokens":9}' in far.model_dump_json(exclude_defaults=True)
    assert '"context":{"base":2,"answers_before":{"a":1}}' in far.model_dump_json(
        exclude_defaults=True
    )


def test_made_without_every_field_falls_back_to_model_construct() -> None:
    """A field the caller does not name (one added to the model later) takes its default."""
    from runtime.messages import ToolCall

    call = made(ToolCall, {"id": "c", "name": "n", "arguments": {"a": 1}})
    assert call == ToolCall(id="c", name="n", arguments={"a": 1})
    assert call.provider_data is None and call.raw_arguments is None


def test_head_doc_is_pydantics_exclude_defaults_for_copies_and_assignments() -> None:
    """head_doc looks only at fields ever set: copies (model_copy, copied) and assignments
    mark theirs, so it matches the plain dump; a value changed in place is the one thing it
    cannot see (no code does that: tests/conftest.py checks every committed head)."""
    from runtime.store import records

    head_doc = records.head_doc  # as tests/conftest.py checks it

    head = _head()
    changed = copied(head.model_copy(update={"warnings": ["w"]}), {"usage": Usage(output_tokens=1)})
    changed.sweep_after = 5.0
    changed.status = "running"  # set, but at its default: still left out
    for h in (head, changed):
        assert head_doc(h) == h.model_dump_json(exclude_defaults=True)
    head.warnings.append("in place")  # the contract's one exception: the tests' check sees it
    with pytest.raises(AssertionError, match="without being marked set"):
        head_doc(head)


@pytest.mark.parametrize(
    "output",
    [
        {"i": 1, "nested": [1.5, None]},
        "x" * 9000,  # over the inline size: cached whole, a preview inline
        None,
        "rich",
    ],
)
def test_a_shaped_tool_result_is_the_validated_message(output: object) -> None:
    """shape_output builds its ToolResultMessage without validation: it must equal, and
    serialise like, the message validation makes from the same values."""
    from runtime.engine.toolrun import shape_output
    from runtime.messages import ImagePart, ToolCall, ToolResultMessage
    from runtime.store.memory import MemoryBlobs
    from runtime.tools.base import FunctionTool, RichOutput, ToolContext, ToolImage

    if output == "rich":
        output = RichOutput(
            text="t", full={"a": 1}, is_error=True, images=[ToolImage("image/png", "aGk=")]
        )
    tool = FunctionTool("n", "d", {}, None, reference="n")
    call = ToolCall(id="c", name="n", arguments={"q": [1]})
    ctx = ToolContext("r", "s", "a", "c")
    made_one = shape_output(
        tool, call, ctx, output, turn=2, cap=4000, blobs=MemoryBlobs(), duration_ms=3
    )
    validated = ToolResultMessage.model_validate(made_one.model_dump())
    assert made_one == validated
    assert made_one.model_dump_json(exclude_none=True) == validated.model_dump_json(
        exclude_none=True
    )
    assert made_one.inputs == call.arguments and made_one.inputs is not call.arguments
    assert all(isinstance(i, ImagePart) for i in made_one.images)
