"""Shared fixtures: the two reference specs, validated once per session."""

from __future__ import annotations

import pytest

from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, FULL_SPEC, load_spec


@pytest.fixture(scope="session")
def demo_spec() -> AgentfnSpec:
    return load_spec(DEMO_SPEC)


@pytest.fixture(scope="session")
def full_spec() -> AgentfnSpec:
    return load_spec(FULL_SPEC)
