"""infra/sam/asl_check.py: each rule catches the definition it is about (hand-made broken
machines), a sound machine passes, and `agentfn build` refuses a generated definition that
breaks one, with the state named."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from infra.cli import commands as cli
from infra.sam import asl_check, workflow_asl
from infra.sam.asl_check import AslError, checked, problems
from tests.helpers import DEMO_SPEC


def _task(next_state: str | None = None, **extra: Any) -> dict[str, Any]:
    state: dict[str, Any] = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}
    state.update({"Next": next_state} if next_state else {"End": True})
    return {**state, **extra}


def sound() -> dict[str, Any]:
    """A small machine with a Choice, a Catch and a Map iterator: every rule holds."""
    return {
        "StartAt": "First",
        "States": {
            "First": _task("Pick", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Broke"}]),
            "Pick": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.x", "BooleanEquals": True, "Next": "Each"}],
                "Default": "Done",
            },
            "Each": {
                "Type": "Map",
                "Iterator": {
                    "StartAt": "Item",
                    "States": {"Item": _task("ItemDone"), "ItemDone": {"Type": "Succeed"}},
                },
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
            "Broke": {"Type": "Fail", "Error": "Broke"},
        },
    }


def _broken(change: Any) -> list[str]:
    machine = sound()
    change(machine)
    return problems(machine, "m")


def test_a_sound_machine_passes() -> None:
    assert problems(sound()) == []
    assert checked(sound(), "m") == sound()


def test_a_name_used_twice_even_in_a_nested_iterator_is_refused() -> None:
    def rename(m: dict[str, Any]) -> None:
        iterator = m["States"]["Each"]["Iterator"]
        iterator["States"]["Done"] = iterator["States"].pop("ItemDone")
        iterator["States"]["Item"]["Next"] = "Done"

    (found,) = _broken(rename)
    assert found == "m > Each > Done: the name is used twice (also in m)"


@pytest.mark.parametrize(
    ("where", "bad"),
    [
        (("First", "Next"), "Nowhere"),
        (("Pick", "Default"), "Nowhere"),
        (("Pick", "Choices", 0, "Next"), "Nowhere"),
        (("First", "Catch", 0, "Next"), "Nowhere"),
        (("Each", "Next"), "Item"),  # a state of the iterator: out of the outer scope
    ],
)
def test_every_kind_of_target_must_be_a_state_of_its_scope(
    where: tuple[Any, ...], bad: str
) -> None:
    def point(m: dict[str, Any]) -> None:
        node: Any = m["States"]
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = bad

    found = _broken(point)
    assert f"m > {where[0]}: " in found[0] and f"{bad!r} is not a state of this scope" in found[0]


def test_an_iterator_cannot_jump_out_and_start_at_must_exist() -> None:
    def escape(m: dict[str, Any]) -> None:
        m["States"]["Each"]["Iterator"]["States"]["Item"]["Next"] = "Done"

    assert "m > Each > Item: Next 'Done' is not a state of this scope" in _broken(escape)

    def no_start(m: dict[str, Any]) -> None:
        m["StartAt"] = "Missing"

    assert "m: StartAt 'Missing' is not a state of this scope" in _broken(no_start)


def test_an_unreachable_state_is_refused() -> None:
    def orphan(m: dict[str, Any]) -> None:
        m["States"]["Orphan"] = {"Type": "Succeed"}

    assert _broken(orphan) == ["m > Orphan: unreachable from StartAt 'First'"]


def test_a_state_that_can_only_loop_is_refused() -> None:
    def loop(m: dict[str, Any]) -> None:
        m["States"]["Pick"]["Default"] = "Spin"
        m["States"]["Spin"] = _task("Spin2")
        m["States"]["Spin2"] = _task("Spin")

    found = _broken(loop)
    assert found == [
        "m > Spin: no terminal state is reachable from it",
        "m > Spin2: no terminal state is reachable from it",
    ]


def test_a_state_without_a_way_on_that_is_not_terminal_is_refused() -> None:
    def stuck(m: dict[str, Any]) -> None:
        del m["States"]["Each"]["Next"]

    assert "m > Each: no transition and not terminal" in _broken(stuck)


@pytest.mark.parametrize("name", ["x" * 81, "has space", "Wait~1", "a/b", ""])
def test_a_name_over_80_characters_or_with_odd_characters_is_refused(name: str) -> None:
    def rename(m: dict[str, Any]) -> None:
        m["States"][name] = m["States"].pop("Done")
        m["States"]["Pick"]["Default"] = name
        m["States"]["Each"]["Next"] = name

    (found,) = _broken(rename)
    assert "a state name is 1-80 characters of A-Za-z0-9_-" in found
    assert problems({"StartAt": "x" * 80, "States": {"x" * 80: {"Type": "Succeed"}}}) == []


def test_checked_raises_a_value_error_listing_the_problems() -> None:
    machine = sound()
    machine["States"]["First"]["Next"] = "Nowhere"
    with pytest.raises(AslError, match="agent 'x' > First: Next 'Nowhere'") as raised:
        checked(machine, "agent 'x'")
    assert isinstance(raised.value, ValueError)  # `agentfn build` reports ValueErrors


def test_long_step_ids_keep_names_within_80_characters_and_distinct() -> None:
    long_a, long_b = "a" * 80, "a" * 79 + "b"
    names = {workflow_asl.state_name(i, "Finished") for i in (long_a, long_b)}
    assert len(names) == 2 and all(len(n) == 80 and n.endswith("-Finished") for n in names)
    assert workflow_asl.state_name("a" * 64, "Finished") == "a" * 64 + "-Finished"
    assert workflow_asl.state_name(long_a, "Go") == workflow_asl.state_name(long_a, "Go")


def test_build_refuses_a_broken_generated_definition(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """If a generator regressed to the old shape (every step's iterator states named alike),
    `agentfn build` exits 1 naming the state, and writes no template."""
    original = workflow_asl.state_name
    monkeypatch.setattr(
        workflow_asl,
        "state_name",
        lambda step, role: role if role in ("Wait", "Done") else original(step, role),
    )
    output = tmp_path / "template.yaml"
    code = cli.main(["build", "-f", str(DEMO_SPEC), "-o", str(output)])
    err = capsys.readouterr().err
    assert code == 1 and not output.exists()
    assert "cannot build a template: invalid state machine definition" in err
    assert "workflow 'damaged_order' > refund-Runs > Wait: the name is used twice" in err


def test_every_scope_is_walked() -> None:
    machine = copy.deepcopy(sound())
    machine["States"]["Each"]["Type"] = "Parallel"
    machine["States"]["Each"]["Branches"] = [machine["States"]["Each"].pop("Iterator")]
    machine["States"]["Each"]["Branches"][0]["States"]["Item"]["Next"] = "Gone"
    assert problems(machine, "m") == [
        "m > Each[0] > Item: Next 'Gone' is not a state of this scope",
        "m > Each[0] > ItemDone: unreachable from StartAt 'Item'",
        "m > Each[0] > Item: no terminal state is reachable from it",
    ]
    assert asl_check.state_names(sound()) == [
        "First",
        "Pick",
        "Each",
        "Done",
        "Broke",
        "Item",
        "ItemDone",
    ]
