"""The web tools in the template: the scraping agent alone takes the WebLayer, and the
searching agent alone may read the search provider's key."""

from __future__ import annotations

import json

from infra.sam.layers import WEB
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, load_spec
from tests.infra.cfn import function_statements


def test_the_web_tools_get_their_layer_and_key_and_nobody_else_does() -> None:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["secrets"]["exa-key"] = {"source": "secretsmanager", "name": "agentfn/exa"}
    data["web"] = {"search": {"provider": "exa", "api_key": "${secret:exa-key}"}}
    data["agents"]["researcher"]["tools"] += ["builtin:web_search", "builtin:web_scrape"]
    resources = build_template(AgentfnSpec.model_validate(data))["Resources"]
    researcher = json.dumps(resources["AgentResearcherFunction"]) + json.dumps(
        function_statements(resources, "AgentResearcherFunction")
    )
    assert WEB.logical_id in researcher and "agentfn/exa" in researcher
    assert resources[WEB.logical_id]["Type"] == "AWS::Serverless::LayerVersion"
    for name, resource in resources.items():
        if name.endswith("Function") and name != "AgentResearcherFunction":
            text = json.dumps(resource) + json.dumps(function_statements(resources, name))
            assert WEB.logical_id not in text and "agentfn/exa" not in text, name


def test_firecrawl_key_goes_to_the_scraper_alone_and_it_needs_no_html_layer() -> None:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["secrets"]["fc-key"] = {"source": "secretsmanager", "name": "agentfn/firecrawl"}
    data["web"] = {"scrape": {"firecrawl": {"api_key": "${secret:fc-key}"}}}
    data["agents"]["researcher"]["tools"] += ["builtin:web_scrape"]
    resources = build_template(AgentfnSpec.model_validate(data))["Resources"]
    assert "agentfn/firecrawl" in json.dumps(
        function_statements(resources, "AgentResearcherFunction")
    )
    assert WEB.logical_id not in resources  # Firecrawl converts; nothing to ship
    for name, resource in resources.items():
        if name.endswith("Function") and name != "AgentResearcherFunction":
            text = json.dumps(resource) + json.dumps(function_statements(resources, name))
            assert "agentfn/firecrawl" not in text, name
