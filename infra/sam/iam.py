"""Least-privilege IAM statements, computed from what an agent actually references.

Each agent's code runs in its own function (a handoff moves the run to the next agent's
function; an agent asked as a tool runs in its own), so a function's grants cover its own
agent only: its models (with their fallbacks), Lambda tools and hooks, and secrets. Nothing
is granted for what the spec does not name.
"""

from __future__ import annotations

import re
from typing import Any

from infra.sam.intrinsics import REGION, arn
from runtime.spec import AgentfnSpec
from runtime.spec.databases import AuroraDatabase
from runtime.spec.graph import agent_hooks, model_closure
from runtime.spec.hooks import HttpHook, LambdaHook
from runtime.spec.knowledge import BedrockKnowledgeBase
from runtime.spec.models import BedrockModel
from runtime.spec.shared import SECRET_REF_RE
from runtime.spec.tools import LambdaTool

# Cross-region inference profiles put a geography in front of the model id.
_PROFILE_PREFIX = re.compile(r"^(us|eu|apac|us-gov|global|jp|au|ca)\.(.+)$")


def _referenced_secrets(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(SECRET_REF_RE.findall(value))
    if isinstance(value, dict):
        return set().union(*(_referenced_secrets(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_referenced_secrets(v) for v in value)) if value else set()
    return set()


def agent_secrets(spec: AgentfnSpec, agent: str) -> list[str]:
    agents = [agent]  # a sub-agent's code runs in its own function, with its own grants
    used: set[str] = set()
    for model in model_closure(spec, agents):
        used |= _referenced_secrets(spec.models[model].model_dump(mode="json"))
    for name in agents:
        for ref in spec.agents[name].tools:
            if ref.startswith("mcp:"):
                server = spec.mcp_servers[ref.removeprefix("mcp:").partition("/")[0]]
                used |= _referenced_secrets(server.model_dump(mode="json"))
            elif ref in spec.tools:
                used |= _referenced_secrets(spec.tools[ref].model_dump(mode="json"))
    if "builtin:web_search" in spec.agents[agent].tools and spec.web.search is not None:
        used |= _referenced_secrets(spec.web.search.api_key)
    if "builtin:web_scrape" in spec.agents[agent].tools and spec.web.scrape.firecrawl is not None:
        used |= _referenced_secrets(spec.web.scrape.firecrawl.api_key)
    for _, hook in agent_hooks(spec, agent):  # the agent's own function asks its hooks
        if isinstance(hook, HttpHook):
            used |= _referenced_secrets(hook.headers)
    if spec.deployment.telemetry is not None:  # the function resolves its exporter's headers
        used |= _referenced_secrets(spec.deployment.telemetry.headers)
    for sub in spec.agents[agent].sub_agents:  # remote A2A agents it asks: their auth headers
        if sub.agent in spec.remote_agents:
            used |= _referenced_secrets(spec.remote_agents[sub.agent].auth.headers)
    return sorted(used)


def remote_answer_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """The API forwards a person's decision to the remote A2A task a run waits for
    (runtime.teams.forward_to_remote), with that remote agent's auth headers."""
    used: set[str] = set()
    for remote in spec.remote_agents.values():
        used |= _referenced_secrets(remote.auth.headers)
    arns = [_secret_arn(spec, name) for name in sorted(used)]
    statements = []
    for source, actions in (
        ("secretsmanager", "secretsmanager:GetSecretValue"),
        ("ssm", ["ssm:GetParameter", "ssm:GetParameters"]),
    ):
        found = [arn for kind, arn in arns if kind == source]
        if found:
            sid = (
                "ReadRemoteAgentSecrets"
                if source == "secretsmanager"
                else "ReadRemoteAgentParameters"
            )
            statements.append({"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": found})
    return statements


def _secret_arn(spec: AgentfnSpec, name: str) -> tuple[str, Any]:
    """The IAM resource of a declared secret. A full ARN (another account or region, or a
    Secrets Manager ARN with its suffix) is used as given; a name becomes this account's ARN.
    Secrets Manager appends `-` and six random characters to a secret's ARN, which a name
    does not know: `-??????` matches exactly those (a `*` would also match `prod/x-old`)."""
    config = spec.secrets[name]
    target = config.name or name
    if target.startswith("arn:"):
        return config.source, target
    if config.source == "ssm":
        return "ssm", arn("ssm", f"parameter/{target.lstrip('/')}")
    return "secretsmanager", arn("secretsmanager", f"secret:{target}-??????")


def _bedrock_arns(model: BedrockModel) -> list[Any]:
    region = model.region or REGION
    match = _PROFILE_PREFIX.match(model.model_id)
    if match:
        # An inference profile routes to the base model in any region of its geography.
        return [
            arn("bedrock", f"inference-profile/{model.model_id}", region=region),
            arn("bedrock", f"foundation-model/{match.group(2)}", region="*", account=""),
        ]
    return [arn("bedrock", f"foundation-model/{model.model_id}", region=region, account="")]


def agent_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """IAM statements for what one agent function references (models, Lambda tools,
    secrets); its data and workflow grants are in infra.sam.grants."""
    agents = [agent]  # a sub-agent's code runs in its own function, with its own grants
    statements: list[dict[str, Any]] = []

    bedrock: list[Any] = []
    for name in model_closure(spec, agents):
        model = spec.models[name]
        if isinstance(model, BedrockModel):
            bedrock += [arn for arn in _bedrock_arns(model) if arn not in bedrock]
    if bedrock:
        statements.append(
            {
                "Sid": "InvokeReferencedBedrockModels",
                "Effect": "Allow",
                "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                "Resource": bedrock,
            }
        )

    functions: list[str] = []
    for name in agents:
        for ref in spec.agents[name].tools:
            tool = spec.tools.get(ref)
            if isinstance(tool, LambdaTool) and tool.function_arn not in functions:
                functions.append(tool.function_arn)
    if functions:
        statements.append(
            {
                "Sid": "InvokeLambdaTools",
                "Effect": "Allow",
                "Action": "lambda:InvokeFunction",
                "Resource": functions,
            }
        )

    statements += _database_statements(spec, agent)
    statements += _knowledge_statements(spec, agent)

    hooks = [h.function_arn for _, h in agent_hooks(spec, agent) if isinstance(h, LambdaHook)]
    if hooks:  # this agent's function asks them; no other function may invoke them
        statements.append(
            {
                "Sid": "InvokeLambdaHooks",
                "Effect": "Allow",
                "Action": "lambda:InvokeFunction",
                "Resource": list(dict.fromkeys(hooks)),
            }
        )

    by_source: dict[str, list[Any]] = {"secretsmanager": [], "ssm": []}
    for secret in agent_secrets(spec, agent):
        source, arn = _secret_arn(spec, secret)
        by_source[source].append(arn)
    if by_source["secretsmanager"]:
        statements.append(
            {
                "Sid": "ReadReferencedSecrets",
                "Effect": "Allow",
                "Action": "secretsmanager:GetSecretValue",
                "Resource": by_source["secretsmanager"],
            }
        )
    if by_source["ssm"]:
        statements.append(
            {
                "Sid": "ReadReferencedParameters",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter", "ssm:GetParameters"],
                "Resource": by_source["ssm"],
            }
        )
    telemetry = spec.deployment.telemetry
    if telemetry is not None and telemetry.xray:  # spans to X-Ray's OTLP endpoint, SigV4
        statements.append(
            {
                "Sid": "WriteSpansToXRay",
                "Effect": "Allow",
                "Action": ["xray:PutSpans", "xray:PutSpansForIndexing"],
                "Resource": "*",
            }
        )
    return statements


def _database_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """The Data API on exactly the aurora clusters the agent's database tools reach, and the
    secret of each (SQLite files ship in the package: nothing to grant)."""
    config = spec.agents[agent]
    if not any(ref in ("builtin:database_query", "builtin:database_write") for ref in config.tools):
        return []
    aurora = [
        spec.databases[n]
        for n in config.databases
        if isinstance(spec.databases.get(n), AuroraDatabase)
    ]
    if not aurora:
        return []
    return [
        {
            "Sid": "QueryAuroraDatabases",
            "Effect": "Allow",
            "Action": [
                "rds-data:ExecuteStatement",
                "rds-data:BeginTransaction",
                "rds-data:CommitTransaction",
                "rds-data:RollbackTransaction",
            ],
            "Resource": sorted({d.cluster_arn for d in aurora}),  # type: ignore[union-attr]
        },
        {
            "Sid": "ReadAuroraSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": sorted({d.secret_arn for d in aurora}),  # type: ignore[union-attr]
        },
    ]


def _knowledge_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """Retrieve on exactly the Bedrock Knowledge Bases the agent searches (local ones ship
    in the package: nothing to grant)."""
    config = spec.agents[agent]
    if "builtin:knowledge_search" not in config.tools:
        return []
    arns = []
    for name in config.knowledge_bases:
        kb = spec.knowledge_bases.get(name)
        if isinstance(kb, BedrockKnowledgeBase):
            region = kb.region or "${AWS::Region}"
            arns.append(
                {"Fn::Sub": f"arn:${{AWS::Partition}}:bedrock:{region}:${{AWS::AccountId}}:"
                 f"knowledge-base/{kb.knowledge_base_id}"}
            )  # fmt: skip
    if not arns:
        return []
    return [
        {
            "Sid": "SearchBedrockKnowledgeBases",
            "Effect": "Allow",
            "Action": "bedrock:Retrieve",
            "Resource": arns,
        }
    ]


def model_statements(spec: AgentfnSpec, models: list[str], sid: str) -> list[dict[str, Any]]:
    """Invoke exactly these models (and their fallbacks) and read exactly their secrets: a
    workflow's function calling its `llm` steps' models (infra.sam.workflows)."""
    names = list(models)
    for name in names:  # grows while fallbacks add models
        names += [f for f in spec.models[name].fallbacks if f not in names]
    statements: list[dict[str, Any]] = []
    bedrock: list[Any] = []
    secrets: set[str] = set()
    for name in names:
        model = spec.models[name]
        if isinstance(model, BedrockModel):
            bedrock += [a for a in _bedrock_arns(model) if a not in bedrock]
        secrets |= _referenced_secrets(model.model_dump(mode="json"))
    if bedrock:
        statements.append(
            {
                "Sid": f"{sid}BedrockModels",
                "Effect": "Allow",
                "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                "Resource": bedrock,
            }
        )
    by_source: dict[str, list[Any]] = {"secretsmanager": [], "ssm": []}
    for secret in sorted(secrets):
        source, resource = _secret_arn(spec, secret)
        by_source[source].append(resource)
    actions = {
        "secretsmanager": "secretsmanager:GetSecretValue",
        "ssm": ["ssm:GetParameter", "ssm:GetParameters"],
    }
    for source, resources in by_source.items():
        if resources:
            statements.append(
                {
                    "Sid": f"{sid}Secrets{'Manager' if source == 'secretsmanager' else 'Ssm'}",
                    "Effect": "Allow",
                    "Action": actions[source],
                    "Resource": resources,
                }
            )
    return statements
