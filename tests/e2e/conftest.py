"""The embedded stack for the durability and sweeper tests (the API and each agent function
are separate engines, as deployed)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from tests.e2e.test_durability import DEMO
from tests.helpers import ROOT


@pytest.fixture
def durable_stack() -> Iterator[EmbeddedStack]:
    with embedded_aws() as clients:
        built = EmbeddedStack(DEMO, clients, template_path=ROOT / "template.yaml")
        yield built
