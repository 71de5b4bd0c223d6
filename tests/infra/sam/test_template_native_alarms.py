"""Alarms that see a crash: a function that raises at import never emits its EMF metrics, but
Lambda counts the failed invocation in AWS/Lambda `Errors` (dimension `FunctionName` = the
function's name). For every function and state machine CloudFormation would deploy (after
the SAM transform, names resolved as in a real stack), some alarm reads exactly the metric the
service emits and, given that metric's 1, goes to ALARM and notifies the topic. Also: state
machine execution logs, and the limits alarms must respect.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from infra.sam import monitoring, native_alarms, state_logs
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.infra.cfn import concrete, pessimistic, sam_transform

_TERM = re.compile(r"^FILL\((\w+),0\)$")


def _of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _evaluate(expression: str, values: dict[str, float]) -> float:
    """The alarms' expressions are sums of `FILL(id,0)` (a missing datapoint counts 0); an
    expression of any other form fails here rather than being guessed at."""
    total = 0.0
    for term in expression.split("+"):
        match = _TERM.match(term)
        assert match, f"the evaluator does not know {term!r}"
        total += values.get(match.group(1), 0.0)
    return total


def _fires(alarm: dict[str, Any], values: dict[str, float]) -> bool:
    props = alarm["Properties"]
    (watched,) = [q for q in props["Metrics"] if q.get("ReturnData", True)]
    value = _evaluate(watched["Expression"], values)
    operator = props["ComparisonOperator"]
    assert operator in ("GreaterThanOrEqualToThreshold", "GreaterThanThreshold"), operator
    if operator == "GreaterThanOrEqualToThreshold":
        return value >= props["Threshold"]
    return value > props["Threshold"]


def _alarms_on(
    deployed: dict[str, Any], namespace: str, metric: str, dimensions: dict[str, str]
) -> list[tuple[dict[str, Any], str]]:
    """(alarm, query id) of every alarm query that reads exactly this metric (names and
    dimensions resolved as CloudFormation would)."""
    resolve = concrete(deployed)
    found = []
    for alarm in _of_type(deployed, "AWS::CloudWatch::Alarm").values():
        for query in alarm["Properties"].get("Metrics", []):
            stat = query.get("MetricStat")
            if stat is None:
                continue
            read = resolve(stat["Metric"])
            dims = {d["Name"]: d["Value"] for d in read.get("Dimensions", [])}
            if (read["Namespace"], read["MetricName"], dims) == (namespace, metric, dimensions):
                assert stat["Stat"] == "Sum" and stat["Period"] <= 300, stat
                found.append((resolve(alarm), query["Id"]))
    return found


def _trips(deployed: dict[str, Any], namespace: str, metric: str, dims: dict[str, str]) -> None:
    """What the service emits for one failure (the metric's Sum is 1, every other metric
    absent) puts some alarm into ALARM, and that alarm notifies someone."""
    found = _alarms_on(deployed, namespace, metric, dims)
    assert found, f"no alarm reads {namespace} {metric} {dims}"
    assert any(_fires(alarm, {query: 1.0}) for alarm, query in found), (metric, dims)
    for alarm, _ in found:
        assert alarm["Properties"]["AlarmActions"] and alarm["Properties"]["ActionsEnabled"]
        assert alarm["Properties"]["EvaluationPeriods"] == 1
        assert alarm["Properties"]["TreatMissingData"] == "notBreaching"
    for alarm, _ in found:  # and nothing at all (no failure) keeps it quiet
        assert not _fires(alarm, {})


@pytest.fixture(scope="module", params=["demo", "full"])
def deployed(
    request: pytest.FixtureRequest, demo_spec: AgentfnSpec, full_spec: AgentfnSpec
) -> dict[str, Any]:
    spec = demo_spec if request.param == "demo" else full_spec
    return sam_transform(build_template(spec))


def test_a_crashed_function_trips_an_alarm(deployed: dict[str, Any]) -> None:
    """Every function: a crash (an invocation error Lambda counts in `Errors`) and a throttled
    invocation (`Throttles`), each with dimension FunctionName = the function's name."""
    resolve = concrete(deployed)
    functions = _of_type(deployed, "AWS::Lambda::Function")
    assert len(functions) >= 5  # the agents', the workflow's, the API, live and sweeper
    for logical_id in functions:
        name = resolve({"Ref": logical_id})  # Lambda's FunctionName dimension
        for metric in ("Errors", "Throttles"):
            _trips(deployed, "AWS/Lambda", metric, {"FunctionName": name})


def test_every_state_machine_has_an_alarm_path_over_its_arn(deployed: dict[str, Any]) -> None:
    resolve = concrete(deployed)
    machines = _of_type(deployed, "AWS::StepFunctions::StateMachine")
    assert machines
    for logical_id in machines:
        arn = resolve({"Ref": logical_id})
        assert arn.startswith("arn:aws:states:us-east-1:123456789012:stateMachine:agentfn-")
        _trips(deployed, "AWS/States", "ExecutionsFailed", {"StateMachineArn": arn})
    # Throttled transitions: one account-wide bucket, reported once for every state machine.
    _trips(deployed, "AWS/States", "ThrottledEvents", {"ServiceMetric": "StateTransition"})


def test_api_5xx_and_table_throttles_trip_alarms(deployed: dict[str, Any]) -> None:
    resolve = concrete(deployed)
    (api,) = _of_type(deployed, "AWS::ApiGateway::RestApi").values()
    (stage,) = _of_type(deployed, "AWS::ApiGateway::Stage").values()
    # A REST API's metrics carry ApiName (its Name) and Stage.
    dims = {
        "ApiName": resolve(api["Properties"]["Name"]),
        "Stage": stage["Properties"]["StageName"],
    }
    _trips(deployed, "AWS/ApiGateway", "5XXError", dims)
    tables = _of_type(deployed, "AWS::DynamoDB::Table")
    assert len(tables) == 2
    for logical_id, table in tables.items():
        name = resolve({"Ref": logical_id})
        for metric in ("ReadThrottleEvents", "WriteThrottleEvents"):
            _trips(deployed, "AWS/DynamoDB", metric, {"TableName": name})
            for index in table["Properties"].get("GlobalSecondaryIndexes", []):
                dims = {"TableName": name, "GlobalSecondaryIndexName": index["IndexName"]}
                _trips(deployed, "AWS/DynamoDB", metric, dims)


def test_alarms_stay_within_cloudwatch_limits(deployed: dict[str, Any]) -> None:
    resolve = pessimistic()
    names = []
    for alarm in _of_type(deployed, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        queries = props["Metrics"]
        stats = [q for q in queries if "MetricStat" in q]
        assert len(stats) <= 10  # metrics one alarm may read: a hard CloudWatch limit
        assert len(queries) - len(stats) <= 10
        assert len({q["Id"] for q in queries}) == len(queries)
        assert len(resolve(props["AlarmDescription"])) <= 1024
        names.append(resolve(props["AlarmName"]))
        assert len(names[-1]) <= 255
    assert len(names) == len(set(names))


def _spec(agents: int, **monitoring_settings: Any) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "deployment": {"monitoring": monitoring_settings},
            "models": {"m": {"provider": "scripted", "script": [{"text": "hi"}]}},
            "agents": {f"agent-{i}": {"description": "d", "model": "m"} for i in range(agents)},
        }
    )


@pytest.mark.parametrize("agents", [1, 7, 8, 30])
def test_native_alarms_grow_by_three_metrics_per_agent(agents: int) -> None:
    """An agent adds a function (Errors, Throttles) and a state machine (ExecutionsFailed):
    three metrics, ten to an alarm. The API, live and sweeper functions come first."""
    resources = build_template(_spec(agents))["Resources"]
    alarms = {k for k, v in resources.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
    functions = agents + 3
    expected = 2 * math.ceil(functions / 10) + math.ceil(agents / 10)
    fixed = {
        monitoring.FAILURE_ALARM,
        monitoring.STUCK_ALARM,
        native_alarms.API_5XX_ALARM,
        native_alarms.TABLE_THROTTLE_ALARM,
        native_alarms.TRANSITION_THROTTLE_ALARM,
    }
    assert fixed <= alarms
    assert len(alarms - fixed) == expected
    assert not {
        k for k, v in build_template(_spec(agents, alarms=False))["Resources"].items()
        if v["Type"] == "AWS::CloudWatch::Alarm"
    }  # fmt: skip


def test_state_machines_log_errors_without_data_to_a_retained_group(
    deployed: dict[str, Any],
) -> None:
    resolve = concrete(deployed)
    groups = _of_type(deployed, "AWS::Logs::LogGroup")
    (group_id,) = [k for k, g in groups.items() if "vendedlogs/states" in str(g)]
    assert groups[group_id]["Properties"]["RetentionInDays"] >= 1
    group_arn = resolve({"Fn::GetAtt": [group_id, "Arn"]})
    for machine in _of_type(deployed, "AWS::StepFunctions::StateMachine").values():
        props = machine["Properties"]
        logging = resolve(props["LoggingConfiguration"])
        assert logging["Level"] == "ERROR" and logging["IncludeExecutionData"] is False
        (destination,) = logging["Destinations"]
        assert destination["CloudWatchLogsLogGroup"]["LogGroupArn"] == group_arn
        # The role may set up the log delivery (actions AWS accepts only on "*").
        role = deployed["Resources"][props["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
        (policy,) = [
            deployed["Resources"][p["Ref"]] for p in role.get("ManagedPolicyArns", []) if "Ref" in p
        ]
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Resource"] == "*"
        assert set(statement["Action"]) == set(state_logs.LOG_DELIVERY_ACTIONS)
        assert not {"logs:GetLogEvents", "logs:FilterLogEvents"} & set(statement["Action"])


def test_no_execution_can_time_out_before_step_functions_own_limit(
    demo_spec: AgentfnSpec, full_spec: AgentfnSpec
) -> None:
    """No alarm reads ExecutionsTimedOut: no definition sets an execution timeout, so only
    Step Functions' one-year limit ends an execution that way (native_alarms says how that
    is seen). Holds for every state machine the template defines."""
    for spec in (demo_spec, full_spec):
        resources = build_template(spec)["Resources"]
        machines = [r for r in resources.values() if r["Type"] == "AWS::Serverless::StateMachine"]
        assert machines
        for machine in machines:
            assert "TimeoutSeconds" not in machine["Properties"]["Definition"]
