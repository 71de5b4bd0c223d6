"""Shared fixtures: the two reference specs, validated once per session; a differential
check of the Lambda's spec loader on every spec any test validates; and the order: modules
with a `slow` test first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, FULL_SPEC, load_spec
from tests.spec_forms import form_problems


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules with a `slow` test run first, each module's tests together and in their
    order: with -n, a long test started near the end would keep its worker busy while the
    other, nothing left to take, waits."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order is otherwise kept


@pytest.fixture(scope="session")
def demo_spec() -> AgentfnSpec:
    return load_spec(DEMO_SPEC)


@pytest.fixture(scope="session")
def full_spec() -> AgentfnSpec:
    return load_spec(FULL_SPEC)


@pytest.fixture(autouse=True, scope="session")
def _every_spec_loads_in_lambda_as_validated() -> Iterator[None]:
    """A function loads its compiled spec into the run-time structs (runtime.spec.plain),
    without pydantic and without validating it. Every spec a test validates, whatever it
    holds, must come back from its compiled JSON saying exactly what validation gave: the
    same classes, attributes and values, the same JSON with and without its defaults. A
    struct that drops a field or a default, or a kind of section loaded wrong, fails the
    test that first uses it (tests/spec_forms.py)."""
    validate = AgentfnSpec.model_validate.__func__  # type: ignore[attr-defined]

    def checked(cls: type[AgentfnSpec], obj: Any, *args: Any, **kwargs: Any) -> AgentfnSpec:
        spec: AgentfnSpec = validate(cls, obj, *args, **kwargs)
        problems = form_problems(spec)
        assert not problems, (
            "loaded from its compiled JSON into runtime.spec.plain, this spec differs from "
            "its validation: " + "; ".join(problems[:5])
        )
        return spec

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AgentfnSpec, "model_validate", classmethod(checked))
        yield


@pytest.fixture(autouse=True, scope="session")
def _every_committed_head_reads_back_as_committed() -> Iterator[None]:
    """A head is built and copied without validation (msgspec Structs: runtime.structs) and
    stored without the fields at their defaults (records.head_doc). Every head any test
    commits must read back, validated strictly, as the very head committed and write the
    same document again: a field given a value of the wrong type (an int where a float is
    stored, a dict where a record belongs), or a default left out that was not one, fails
    the test that first commits it."""
    from runtime.store import records
    from runtime.store.base import RunHead
    from runtime.structs import load_json

    fast = records.head_doc

    def checked(head: RunHead) -> str:
        doc = fast(head)
        again = load_json(RunHead, doc)
        assert again == head, "a committed head does not read back as itself"
        assert fast(again) == doc, "a committed head holds a value of the wrong type"
        return doc

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records, "head_doc", checked)
        yield
