"""Agents are isolated from each other by IAM: what each function's role allows, evaluated on
the deployed (SAM-transformed) template with concrete names, request by request.

Key layout (runtime.naming, runtime.store): DynamoDB partitions `RUN#{run_id}` (the run id
starts with its agent's tag) and `SES#{agent}#{session}`; S3 keys `bodies/{run_id}/…`,
`results/{run_id}…`, `tool-cache/{agent}/…` and the agent's storage prefix.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.aws import embedded_aws
from infra.sam.naming import agent_function_id, agent_state_machine_id
from infra.sam.template import build_template
from runtime.naming import agent_resource_name, agent_tag, new_run_id
from runtime.spec import AgentfnSpec
from runtime.spec.graph import handoff_paths
from tests.infra.cfn import STACK8, allowed, concrete, role_statements, sam_transform

TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/agentfn-demo-StateTable-RANDOM1234"
IDEMPOTENCY_ARN = (
    "arn:aws:dynamodb:us-east-1:123456789012:table/agentfn-demo-IdempotencyTable-RANDOM1234"
)
BUCKET_ARN = "arn:aws:s3:::agentfn-demo-DataBucket-RANDOM1234"
OTHER_STACK8 = "ffff0000"
LOCAL_IDEMPOTENCY_TABLE = "agentfn-local-idempotency"  # what handlers/api.py uses locally


def _function_arn(agent: str, stack8: str = STACK8) -> str:
    name = f"agentfn-{stack8}-{agent_resource_name(agent)}"
    return f"arn:aws:lambda:us-east-1:123456789012:function:{name}"


def _machine_arn(agent: str, stack8: str = STACK8) -> str:
    name = f"agentfn-{stack8}-{agent_resource_name(agent)}"
    return f"arn:aws:states:us-east-1:123456789012:stateMachine:{name}"


@pytest.fixture(scope="module")
def deployed(full_spec: AgentfnSpec) -> dict[str, Any]:
    return sam_transform(build_template(full_spec))


def _role(deployed: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    return role_statements(deployed, f"{logical_id}Role")


def _ddb(statements: list[dict[str, Any]], action: str, key: str, table: str = TABLE_ARN) -> bool:
    return allowed(statements, f"dynamodb:{action}", table, {"dynamodb:LeadingKeys": [key]})


def _s3(statements: list[dict[str, Any]], action: str, key: str) -> bool:
    return allowed(statements, f"s3:{action}", f"{BUCKET_ARN}/{key}")


def _list(statements: list[dict[str, Any]], prefix: str | None) -> bool:
    context = {} if prefix is None else {"s3:prefix": prefix}
    return allowed(statements, "s3:ListBucket", BUCKET_ARN, context)


def test_agent_function_reaches_only_its_own_runs_sessions_and_objects(
    deployed: dict[str, Any],
) -> None:
    support = _role(deployed, agent_function_id("support"))
    own, other = new_run_id("support"), new_run_id("billing")
    for action in ("GetItem", "Query", "PutItem"):
        assert _ddb(support, action, f"RUN#{own}"), action
        assert _ddb(support, action, "SES#support#s-1"), action
        assert not _ddb(support, action, f"RUN#{other}"), action
        assert not _ddb(support, action, "SES#billing#s-1"), action
        assert not _ddb(support, action, "IDEMPOTENCY"), action
    for action in ("Scan", "DeleteItem", "UpdateItem", "BatchWriteItem", "DeleteTable"):
        assert not _ddb(support, action, f"RUN#{own}"), action
    assert not allowed(support, "dynamodb:Scan", TABLE_ARN)  # no leading key at all

    for key in (f"bodies/{own}/M000001.0.json", f"results/{own}.json", "tool-cache/support/s/c"):
        assert _s3(support, "GetObject", key) and _s3(support, "PutObject", key), key
    for key in (f"bodies/{other}/M1.json", f"results/{other}.json", "tool-cache/billing/s/c"):
        assert not _s3(support, "GetObject", key) and not _s3(support, "PutObject", key), key
    for action in ("DeleteObject", "PutObjectAcl", "GetObjectAcl"):
        assert not _s3(support, action, f"bodies/{own}/M1.json"), action
    for action in ("PutLifecycleConfiguration", "PutBucketPolicy", "DeleteBucket"):
        assert not allowed(support, f"s3:{action}", BUCKET_ARN), action
    assert _list(support, "tool-cache/support/session-1/")
    for prefix in (None, "", "tool-cache/", "tool-cache/billing/", "bodies/", "storage/support/"):
        assert not _list(support, prefix), prefix  # support lists no storage tool


def test_storage_tools_add_exactly_the_agents_storage_prefix(deployed: dict[str, Any]) -> None:
    billing = _role(deployed, agent_function_id("billing"))  # lists storage_read/write
    assert _s3(billing, "GetObject", "storage/billing/notes.txt")
    assert _s3(billing, "PutObject", "storage/billing/notes.txt")
    assert _list(billing, "storage/billing/")
    assert not _s3(billing, "GetObject", "storage/support/notes.txt")
    assert not _list(billing, "storage/")


def test_agent_function_may_continue_only_in_its_own_state_machine(
    deployed: dict[str, Any],
) -> None:
    support = _role(deployed, agent_function_id("support"))
    assert allowed(support, "states:StartExecution", _machine_arn("support"))
    assert not allowed(support, "states:StartExecution", _machine_arn("billing"))
    assert not allowed(support, "states:StartExecution", _machine_arn("support", OTHER_STACK8))
    assert not allowed(support, "lambda:InvokeFunction", _function_arn("billing"))


def test_api_function_reads_every_run_and_runs_only_this_stacks_agents(
    deployed: dict[str, Any], full_spec: AgentfnSpec
) -> None:
    api = _role(deployed, "ApiFunction")
    run = new_run_id("billing")
    for action in ("GetItem", "Query", "PutItem"):
        assert _ddb(api, action, f"RUN#{run}"), action
    for action in ("Scan", "DeleteItem", "UpdateItem"):
        assert not _ddb(api, action, f"RUN#{run}"), action
    # DELETE /agents/{agent}/sessions/{id} (issue 25): runs' and sessions' items only.
    assert _ddb(api, "BatchWriteItem", f"RUN#{run}") and _ddb(api, "BatchWriteItem", "SES#b#s")
    assert not _ddb(api, "BatchWriteItem", "WF#x")
    for action in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
        assert _ddb(api, action, "StartRun#abc", IDEMPOTENCY_ARN), action
    assert not _ddb(api, "Scan", "StartRun#abc", IDEMPOTENCY_ARN)
    for key in (f"bodies/{run}/M1.json", f"results/{run}.json", "tool-cache/billing/s/c"):
        assert _s3(api, "GetObject", key), key
    assert _s3(api, "PutObject", f"bodies/{run}/M1.json")
    assert not _s3(api, "PutObject", f"results/{run}.json")
    assert not _s3(api, "GetObject", "storage/billing/notes.txt")
    assert _s3(api, "DeleteObject", f"bodies/{run}/M1.json")  # a session deleted on demand
    assert not _s3(api, "DeleteObject", "storage/billing/notes.txt")
    for agent in full_spec.agents:
        assert allowed(api, "lambda:InvokeFunction", _function_arn(agent)), agent
        assert allowed(api, "states:StartExecution", _machine_arn(agent)), agent
        execution = _machine_arn(agent).replace(":stateMachine:", ":execution:") + f":{run}"
        assert allowed(api, "states:StopExecution", execution)
        assert allowed(api, "states:DescribeExecution", execution)
    assert not allowed(api, "lambda:InvokeFunction", _function_arn("support", OTHER_STACK8))
    assert not allowed(api, "states:StartExecution", _machine_arn("support", OTHER_STACK8))
    assert allowed(api, "states:SendTaskSuccess", "*")
    assert allowed(
        api, "events:PutEvents", "arn:aws:events:us-east-1:123456789012:event-bus/default"
    )


def test_each_state_machine_invokes_exactly_its_handoff_teams_functions(
    deployed: dict[str, Any], full_spec: AgentfnSpec
) -> None:
    """A handoff moves the run to the next agent's function: the state machine may invoke
    its agent's handoff team, and nothing else (not an agent asked as a tool: that child has
    its own state machine)."""
    resolve = concrete(deployed)
    # The full fixture has deployment.snapstart: each function is invoked by its alias `live`.
    arns = {
        a: resolve({"Fn::GetAtt": [agent_function_id(a), "Arn"]}) + ":live"
        for a in full_spec.agents
    }
    for agent, own in arns.items():
        machine = _role(deployed, agent_state_machine_id(agent))
        team = handoff_paths(full_spec, agent)
        for member in team:
            assert allowed(machine, "lambda:InvokeFunction", arns[member]), (agent, member)
        # SAM's LambdaInvokePolicy grants `function:NAME*`: a prefix of other names too.
        unqualified = own.removesuffix(":live")
        assert not allowed(machine, "lambda:InvokeFunction", unqualified + "-2"), agent
        assert not allowed(machine, "lambda:InvokeFunction", unqualified + ":other"), agent
        # nor `$LATEST`, which has no snapshot: nothing invokes it
        assert not allowed(machine, "lambda:InvokeFunction", unqualified), agent
        others = [arn for other, arn in arns.items() if other not in team]
        assert not any(allowed(machine, "lambda:InvokeFunction", arn) for arn in others)
    assert handoff_paths(full_spec, "support") == {
        "support": ["support"],
        "billing": ["support", "billing"],
        "ledger": ["support", "billing", "ledger"],
    }


def test_sweeper_runs_on_schedule_with_exactly_its_grants(deployed: dict[str, Any]) -> None:
    function = deployed["Resources"]["SweeperFunction"]["Properties"]
    assert function["Handler"] == "handlers.sweeper.handler"
    assert function["Timeout"] == 300 and function["MemorySize"] == 512
    rule = deployed["Resources"]["SweeperFunctionSweep"]["Properties"]
    assert rule["ScheduleExpression"] == "rate(5 minutes)"
    sweeper = _role(deployed, "SweeperFunction")
    run = new_run_id("support")
    assert allowed(sweeper, "dynamodb:Query", f"{TABLE_ARN}/index/sweep")
    assert not allowed(sweeper, "dynamodb:Scan", f"{TABLE_ARN}/index/sweep")
    for action in ("GetItem", "PutItem", "Query"):
        assert _ddb(sweeper, action, f"RUN#{run}"), action
    assert _ddb(sweeper, "Query", "SES#support#s-1")
    # Failing a stranded run also writes its session's marker, in the same transaction.
    assert _ddb(sweeper, "PutItem", "SES#support#s-1")
    assert not _ddb(sweeper, "GetItem", "SES#support#s-1")
    assert not _ddb(sweeper, "PutItem", "IDEMPOTENCY")
    assert not _ddb(sweeper, "DeleteItem", f"RUN#{run}")
    assert _s3(sweeper, "GetObject", f"bodies/{run}/M1.json")
    assert not _s3(sweeper, "PutObject", f"bodies/{run}/M1.json")
    execution = _machine_arn("support").replace(":stateMachine:", ":execution:") + f":{run}"
    assert allowed(sweeper, "states:DescribeExecution", execution)
    assert not allowed(sweeper, "states:StopExecution", execution)
    assert allowed(sweeper, "states:StartExecution", _machine_arn("support"))
    assert not allowed(sweeper, "states:StartExecution", _machine_arn("support", OTHER_STACK8))
    assert allowed(sweeper, "states:SendTaskSuccess", "*")
    assert not allowed(sweeper, "lambda:InvokeFunction", _function_arn("support"))


@pytest.mark.parametrize(
    ("interval", "expression"), [("1m", "rate(1 minute)"), ("2h", "rate(120 minutes)")]
)
def test_sweep_interval_compiles_into_the_schedule(
    full_spec: AgentfnSpec, interval: str, expression: str
) -> None:
    data = full_spec.to_compiled()
    data["deployment"]["sweep_interval"] = interval  # type: ignore[index]
    template = build_template(AgentfnSpec.model_validate(data))
    events = template["Resources"]["SweeperFunction"]["Properties"]["Events"]
    assert events["Sweep"]["Properties"]["Schedule"] == expression


@pytest.mark.parametrize("interval", ["30s", "90s"])
def test_sweep_interval_is_whole_minutes_of_at_least_one(
    full_spec: AgentfnSpec, interval: str
) -> None:
    data = full_spec.to_compiled()
    data["deployment"]["sweep_interval"] = interval  # type: ignore[index]
    with pytest.raises(ValueError, match="sweep_interval") as error:
        AgentfnSpec.model_validate(data)
    assert "multiple of 60" in str(error.value) or "greater than or equal to 60" in str(error.value)


def test_functions_find_agents_by_the_naming_contract(
    deployed: dict[str, Any], full_spec: AgentfnSpec
) -> None:
    """The prefixes in every function's environment plus runtime.naming give exactly the
    physical names CloudFormation creates (runtime.stack.Stack reads these variables)."""
    from runtime.stack import Stack

    resolve = concrete(deployed)
    resources = deployed["Resources"]
    for logical_id in ("ApiFunction", "SweeperFunction", agent_function_id("support")):
        variables = resolve(resources[logical_id]["Properties"]["Environment"]["Variables"])
        assert "AGENTFN_STATE_MACHINES" not in variables
        assert "AGENTFN_AGENT_FUNCTIONS" not in variables
        stack = Stack(
            function_prefix=variables["AGENTFN_FUNCTION_PREFIX"],
            state_machine_prefix=variables["AGENTFN_STATE_MACHINE_PREFIX"],
            function_alias=variables["AGENTFN_FUNCTION_ALIAS"],  # deployment.snapstart
        )
        for agent in full_spec.agents:
            function = resources[agent_function_id(agent)]["Properties"]
            machine = resources[agent_state_machine_id(agent)]
            alias = resources[agent_function_id(agent) + "Aliaslive"]["Properties"]
            assert resolve(alias["FunctionName"]) == resolve(function["FunctionName"])
            # a handoff names the function's published alias, never `$LATEST`
            assert stack.function(agent) == f"{resolve(function['FunctionName'])}:{alias['Name']}"
            assert stack.state_machine(agent) == resolve({"Ref": agent_state_machine_id(agent)})
            assert machine["Properties"]["StateMachineName"] == function["FunctionName"]
    assert len({agent_tag(a) for a in full_spec.agents}) == len(full_spec.agents)


def test_tables_have_the_sweep_index_and_a_separate_idempotency_table(
    full_spec: AgentfnSpec,
) -> None:
    resources = build_template(full_spec)["Resources"]
    (index,) = resources["StateTable"]["Properties"]["GlobalSecondaryIndexes"]
    assert index == {
        "IndexName": "sweep",
        "KeySchema": [
            {"AttributeName": "sweep_pk", "KeyType": "HASH"},
            {"AttributeName": "sweep_at", "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }
    table = resources["IdempotencyTable"]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    api_env = resources["ApiFunction"]["Properties"]["Environment"]["Variables"]
    assert api_env["AGENTFN_IDEMPOTENCY_TABLE"] == {"Ref": "IdempotencyTable"}


def test_the_embedded_aws_has_the_same_tables() -> None:
    with embedded_aws() as clients:
        table = clients.dynamodb.describe_table(TableName=clients.table)["Table"]
        (index,) = table["GlobalSecondaryIndexes"]
        assert index["IndexName"] == "sweep"
        assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
        assert [k["AttributeName"] for k in index["KeySchema"]] == ["sweep_pk", "sweep_at"]
        idempotency = clients.dynamodb.describe_table(TableName=LOCAL_IDEMPOTENCY_TABLE)["Table"]
        assert idempotency["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
        ttl = clients.dynamodb.describe_time_to_live(TableName=LOCAL_IDEMPOTENCY_TABLE)
        assert ttl["TimeToLiveDescription"]["AttributeName"] == "expiration"


def test_agents_sharing_a_physical_name_do_not_build(full_spec: AgentfnSpec) -> None:
    """A long name is cut and hashed to 47 characters; a second agent literally named like
    the result would share the first one's function, state machine and IAM."""
    long = "a" + "-very-long-agent-name" * 3
    data = full_spec.to_compiled()
    data["agents"] = {  # type: ignore[index]
        long: {"description": "long", "model": "local"},
        agent_resource_name(long): {"description": "clash", "model": "local"},
    }
    with pytest.raises(ValueError, match="share agent_resource_name"):
        build_template(AgentfnSpec.model_validate(data))


def _team_spec() -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": [{"text": "x"}]}},
            "agents": {
                "desk": {
                    "description": "d",
                    "model": "m",
                    "sub_agents": ["refunds", {"agent": "researcher", "as": "tool"}],
                },
                "refunds": {"description": "r", "model": "m"},
                "researcher": {"description": "s", "model": "m"},
                "loner": {"description": "l", "model": "m"},
            },
        }
    )


def test_team_functions_reach_exactly_the_runs_their_team_shares() -> None:
    """refunds may advance desk's runs (desk hands conversations to it); desk creates and
    reads its asked researcher's child runs and starts their executions; researcher, as a
    child, may only read its parent's head (to wake it); nobody reaches the loner's runs."""
    deployed = sam_transform(build_template(_team_spec()))
    desk, refunds, researcher = (
        _role(deployed, agent_function_id(a)) for a in ("desk", "refunds", "researcher")
    )
    desk_run, child, loner = (new_run_id(a) for a in ("desk", "researcher", "loner"))
    for action in ("GetItem", "Query", "PutItem"):
        assert _ddb(refunds, action, f"RUN#{desk_run}"), action
        assert _ddb(refunds, action, "SES#desk#s-1"), action
        assert _ddb(desk, action, f"RUN#{child}"), action  # desk creates and reads its child
        assert not _ddb(refunds, action, f"RUN#{child}"), action
        assert not _ddb(desk, action, f"RUN#{loner}"), action
    assert _ddb(researcher, "GetItem", f"RUN#{desk_run}")  # wakes its parent
    assert not _ddb(researcher, "PutItem", f"RUN#{desk_run}")
    assert not _ddb(researcher, "Query", "SES#desk#s-1")
    assert allowed(desk, "states:StartExecution", _machine_arn("researcher"))
    assert allowed(refunds, "states:StartExecution", _machine_arn("desk"))  # continue anew
    assert not allowed(refunds, "states:StartExecution", _machine_arn("researcher"))
    assert _s3(refunds, "GetObject", "tool-cache/desk/s/r/c")  # the session's cache
    machine = _role(deployed, agent_state_machine_id("desk"))
    assert allowed(machine, "lambda:InvokeFunction", _function_arn("refunds"))
    assert not allowed(machine, "lambda:InvokeFunction", _function_arn("researcher"))
