"""knowledge_search: BM25 over a project folder (index made by bm25s, searched in plain
Python from the shipped JSON), Bedrock Knowledge Bases through Retrieve (Stubber), the
tool's arguments, and validation of the settings with their line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from infra.checks.validate import validate_file
from infra.sam.package import stage_knowledge_indexes
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from runtime.spec.knowledge import BedrockKnowledgeBase, LocalKnowledgeBase
from runtime.tools.base import ToolContext, ToolError
from runtime.tools.knowledge.bedrock import BedrockIndex
from runtime.tools.knowledge.local import build_index, chunks_of, load_local
from runtime.tools.knowledge.tool import knowledge_search_tool
from tests.helpers import DEMO_SPEC, ROOT, load_spec
from tests.infra.cfn import function_statements
from tests.infra.checks.test_validate_bad import _write_project

POLICIES = LocalKnowledgeBase(kind="local", path="knowledge", chunk_chars=500)


def test_chunks_follow_paragraphs_and_keep_their_heading() -> None:
    chunks = chunks_of(ROOT / "knowledge", 500)
    assert {c["source"] for c in chunks} == {"refunds.md", "shipping.md", "warranty.md"}
    damaged = next(c for c in chunks if "arrives damaged" in c["text"])
    assert damaged["heading"] == "Damaged on arrival" and len(damaged["text"]) <= 500
    numbers = [c["chunk"] for c in chunks if c["source"] == "refunds.md"]
    assert numbers == [f"refunds.md#{i}" for i in range(len(numbers))]


def test_the_most_relevant_passage_comes_first() -> None:
    index = load_local("policies", POLICIES, ROOT)
    for query, expected in (
        ("my parcel has not moved for days, is it lost?", "shipping.md"),
        ("are burrs covered by the warranty", "warranty.md"),
        ("item arrived damaged, prepaid return label", "refunds.md"),
    ):
        hits = index.search(query, 3)
        assert hits[0].source == expected, (query, hits)
        assert hits[0].score > hits[-1].score or len(hits) == 1
    assert index.search("zzz qqq", 3) == []


def test_the_shipped_index_searches_the_same_without_bm25s(tmp_path: Path) -> None:
    spec = load_spec(DEMO_SPEC)
    assert stage_knowledge_indexes(spec, ROOT, tmp_path) == ["knowledge_index"]
    shipped = json.loads((tmp_path / "knowledge_index" / "policies.json").read_text())
    assert shipped == build_index(ROOT / "knowledge", 500)
    query = "refund damaged grinder"
    here = [h.chunk for h in load_local("policies", POLICIES, ROOT).search(query, 5)]
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from runtime.spec.knowledge import LocalKnowledgeBase
        from runtime.tools.knowledge.local import load_local
        kb = LocalKnowledgeBase(kind="local", path="not-shipped", chunk_chars=500)
        hits = load_local("policies", kb, Path({str(tmp_path)!r})).search({query!r}, 5)
        print([h.chunk for h in hits], "bm25s" in sys.modules, "numpy" in sys.modules)
    """)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"{here} False False"


def test_bedrock_knowledge_bases_are_searched_with_retrieve() -> None:
    client = boto3.client("bedrock-agent-runtime", region_name="eu-west-1")
    kb = BedrockKnowledgeBase(kind="bedrock", knowledge_base_id="ABCDEFGHIJ")
    with Stubber(client) as stub:
        stub.add_response(
            "retrieve",
            {
                "retrievalResults": [
                    {
                        "content": {"text": "Returns within 30 days."},
                        "location": {"type": "S3", "s3Location": {"uri": "s3://kb/refunds.pdf"}},
                        "score": 0.82,
                    }
                ]
            },
            {
                "knowledgeBaseId": "ABCDEFGHIJ",
                "retrievalQuery": {"text": "returns"},
                "retrievalConfiguration": {"vectorSearchConfiguration": {"numberOfResults": 4}},
            },
        )
        (hit,) = BedrockIndex("docs", kb, client).search("returns", 4)
    assert (hit.source, hit.score, hit.text) == (
        "s3://kb/refunds.pdf",
        0.82,
        "Returns within 30 days.",
    )
    with Stubber(client) as stub:
        stub.add_client_error("retrieve", "ResourceNotFoundException", "no such knowledge base")
        with pytest.raises(ToolError, match="no such knowledge base"):
            BedrockIndex("docs", kb, client).search("returns", 4)


def test_the_tool_checks_its_arguments() -> None:
    spec = load_spec(DEMO_SPEC)
    tool = knowledge_search_tool(spec, "helpdesk", lambda region: None)
    ctx = ToolContext(run_id="r", session_id="s", agent="helpdesk", call_id="c")
    answer = asyncio.run(tool.call({"query": "warranty claim", "max_results": 1}, ctx))
    assert len(answer["results"]) == 1 and answer["results"][0]["knowledge_base"] == "policies"
    assert tool.effect == "read_only"
    for bad in (
        {"query": ""},
        {"query": "x", "max_results": 99},
        {"query": "x", "knowledge_base_names": ["other"]},
    ):
        with pytest.raises(ToolError):
            asyncio.run(tool.call(bad, ctx))


HEAD = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
knowledge_bases:
  docs: {kind: local, path: docs}
"""
CASES = {
    "the tool without knowledge bases": (
        "agents:\n  a:\n    description: d\n    model: m\n"
        '    tools: ["builtin:knowledge_search"]  #!\n',
        "knowledge_search needs `knowledge_bases:`",
    ),
    "knowledge bases without the tool": (
        "agents:\n  a:\n    description: d\n    model: m\n    knowledge_bases: [docs]  #!\n",
        "in tools, or remove knowledge_bases",
    ),
    "an unknown knowledge base": (
        "agents:\n  a:\n    description: d\n    model: m\n"
        '    tools: ["builtin:knowledge_search"]\n    knowledge_bases:\n      - dcs  #!\n',
        "unknown knowledge base 'dcs'; did you mean 'docs'?",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_knowledge_settings_are_reported_at_their_line(case: str, tmp_path: Path) -> None:
    text, message = CASES[case]
    spec, line = _write_project(tmp_path, HEAD + text)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    issues = validate_file(spec).issues
    assert any(message in i.message and i.line == line for i in issues), [str(i) for i in issues]


def test_a_local_folder_must_hold_something_to_index(tmp_path: Path) -> None:
    text = HEAD.replace(
        "docs: {kind: local, path: docs}", "docs:\n    kind: local\n    path: docs  #!"
    )
    spec, line = _write_project(tmp_path, text + "agents:\n  a: {description: d, model: m}\n")
    issues = validate_file(spec).issues
    assert any("no folder 'docs'" in i.message and i.line == line for i in issues)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.pdf").write_bytes(b"%PDF")
    issues = validate_file(spec).issues
    assert any("no .md, .markdown, .txt files" in i.message for i in issues)


def test_retrieve_is_granted_on_the_agents_bedrock_knowledge_base_only() -> None:
    data = load_spec(DEMO_SPEC).to_compiled()
    data["knowledge_bases"]["manuals"] = {
        "kind": "bedrock",
        "knowledge_base_id": "KB12345678",
        "region": "eu-west-1",
    }
    data["agents"]["helpdesk"]["knowledge_bases"].append("manuals")
    resources = build_template(AgentfnSpec.model_validate(data))["Resources"]
    statements = function_statements(resources, "AgentHelpdeskFunction")
    (grant,) = [s for s in statements if s["Sid"] == "SearchBedrockKnowledgeBases"]
    assert grant["Action"] == "bedrock:Retrieve"
    assert grant["Resource"] == [
        {
            "Fn::Sub": "arn:${AWS::Partition}:bedrock:eu-west-1:${AWS::AccountId}:knowledge-base/KB12345678"
        }
    ]
    others = [k for k in resources if k.endswith("Function") and k != "AgentHelpdeskFunction"]
    assert not any("bedrock:Retrieve" in json.dumps(resources[k]) for k in others)
