"""Value types of the spec: durations and secret references."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from runtime.spec import AgentfnSpec, parse_duration
from runtime.spec.shared import secret_names


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("250ms", 0.25),
        ("2d", 172800),
        (45, 45),
        ("1.5h", 5400),
    ],
)
def test_durations_parse_to_seconds(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["30x", "", "h", "-5s", "1 hour", True])
def test_bad_durations_are_rejected(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_zero_duration_is_rejected_by_the_model() -> None:
    with pytest.raises(ValidationError):
        AgentfnSpec.model_validate(
            {"version": 1, "defaults": {"tool_timeout": 0}, "agents": {"a": {"description": "d"}}}
        )


def test_secret_names_are_found_inside_strings() -> None:
    assert secret_names("Bearer ${secret:orders-token} and ${secret:b}") == ["orders-token", "b"]
    assert secret_names("no secrets ${env:HOME}") == []
