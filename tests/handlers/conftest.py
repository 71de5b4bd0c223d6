"""The embedded stack the API tests talk to (module-scoped: one per test module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.embedded_stack import EmbeddedStack
from infra.local import embedded_aws
from runtime.spec import AgentfnSpec
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def stack(demo_spec: AgentfnSpec) -> Iterator[EmbeddedStack]:
    import handlers.api
    import handlers.step

    with embedded_aws() as clients:
        embedded = EmbeddedStack(demo_spec, clients, template_path=ROOT / "template.yaml")
        embedded.serve_api()
        try:
            yield embedded
        finally:
            handlers.api.configure(None)
            handlers.step.configure(None)
