"""Alarms on the metrics AWS itself emits, which see what the functions' own EMF metrics
cannot: a function that dies before it emits (an import error, out of memory, a timeout, a
bad deploy), a state machine that cannot invoke its function, a throttled stage or table.

What each service emits (and so what each alarm reads):
- AWS/Lambda `Errors`, `Throttles`: dimension `FunctionName` = the function's name (the
  `Ref` of the function);
- AWS/States `ExecutionsFailed`, `ExecutionsTimedOut`, `ExecutionThrottled`: dimension
  `StateMachineArn` (the `Ref` of a state machine is its ARN);
- AWS/ApiGateway `5XXError` of a REST API: dimensions `ApiName` and `Stage`;
- AWS/DynamoDB `ReadThrottleEvents`, `WriteThrottleEvents`: dimension `TableName`, and
  `TableName` + `GlobalSecondaryIndexName` for an index.

Resources: every alarm is one of CloudFormation's 500 per stack, and an alarm on metric math
reads at most 10 metrics (a hard CloudWatch limit). So the alarms are per kind of signal, each
reading one metric of up to 10 resources and summing them (`FILL(m,0)+…` ≥ 1 in 5 minutes):
`lambda-errors-N` (a function raised, crashed, ran out of memory or timed out),
`lambda-throttles-N`, `executions-failed-N` (every failed run fails its execution too: the
failure-rate alarm says whether that is unusual; this one also sees failures no function
reported, such as a state machine that cannot invoke its function). That is 0.3 alarms per
agent (a function and a state machine). Two per-state-machine metrics are watched once for
the stack instead, at no cost per agent:
- throttled transitions: `ExecutionThrottled` counts state transitions throttled by the
  account's one StateTransition bucket, which AWS/States reports as `ThrottledEvents`
  (dimension `ServiceMetric` = `StateTransition`) for all state machines together;
- timed-out executions: no generated definition sets an execution `TimeoutSeconds` (a test
  holds it), so only Step Functions' one-year limit could time one out; the run it leaves
  unfinished is the sweeper's, and the stuck-runs alarm (infra.sam.monitoring) fires.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from infra.sam import monitoring
from infra.sam.data import IDEMPOTENCY_TABLE, SWEEP_INDEX, TABLE
from infra.sam.intrinsics import ref
from runtime.spec import AgentfnSpec

PERIOD = 300
MAX_METRICS = 10  # metrics one metric-math alarm may read (CloudWatch, not adjustable)
LAMBDA = "AWS/Lambda"
STATES = "AWS/States"
API_5XX_ALARM = "Api5xxAlarm"
TABLE_THROTTLE_ALARM = "TableThrottleAlarm"
TRANSITION_THROTTLE_ALARM = "TransitionThrottleAlarm"

#: (alarm name stem, namespace, metric names, what it means); each resource gives one metric
#: per name, and an alarm takes as many resources as fit in MAX_METRICS.
FUNCTION_KINDS = (
    ("lambda-errors", LAMBDA, ("Errors",), "raised, crashed, ran out of memory or timed out"),
    ("lambda-throttles", LAMBDA, ("Throttles",), "was throttled (concurrency)"),
)
MACHINE_KINDS = (("executions-failed", STATES, ("ExecutionsFailed",), "had a failed execution"),)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _query(
    index: int, namespace: str, name: str, dimensions: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "Id": f"m{index}",
        "MetricStat": {
            "Metric": {"Namespace": namespace, "MetricName": name, "Dimensions": dimensions},
            "Period": PERIOD,
            "Stat": "Sum",
        },
        "ReturnData": False,
    }


def _sum_alarm(
    spec: AgentfnSpec, name: str, description: str, queries: list[dict[str, Any]]
) -> dict[str, Any]:
    total = "+".join(f"FILL({q['Id']},0)" for q in queries)
    return monitoring.alarm(
        spec,
        name,
        description[:1024],
        {
            "Metrics": [
                *queries,
                {"Id": "total", "Expression": total, "Label": name, "ReturnData": True},
            ],
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1,
        },
    )


def _per_resource(
    spec: AgentfnSpec,
    logical_ids: list[str],
    kinds: tuple[tuple[str, str, tuple[str, ...], str], ...],
    dimension: str,
    what: str,
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for stem, namespace, names, meaning in kinds:
        per_alarm = MAX_METRICS // len(names)
        for number, chunk in enumerate(_chunks(logical_ids, per_alarm), start=1):
            queries = [
                _query(i, namespace, metric, [{"Name": dimension, "Value": ref(logical_id)}])
                for i, (logical_id, metric) in enumerate(
                    (logical_id, metric) for logical_id in chunk for metric in names
                )
            ]
            description = f"agentfn: a {what} of this stack {meaning} (its metrics say which)"
            alarm_id = "".join(part.title() for part in stem.split("-")) + f"Alarm{number}"
            found[alarm_id] = _sum_alarm(spec, f"{stem}-{number}", description, queries)
    return found


def resources(spec: AgentfnSpec, template_resources: dict[str, Any]) -> dict[str, Any]:
    """The native-metric alarms of a template whose other resources are `template_resources`
    (every function and state machine in it is watched); none when alarms are off."""
    if not spec.deployment.monitoring.alarms:
        return {}
    kinds = {k: v["Type"] for k, v in template_resources.items()}
    functions = [k for k, t in kinds.items() if t == "AWS::Serverless::Function"]
    machines = [k for k, t in kinds.items() if t == "AWS::Serverless::StateMachine"]
    found = _per_resource(spec, functions, FUNCTION_KINDS, "FunctionName", "function")
    found.update(_per_resource(spec, machines, MACHINE_KINDS, "StateMachineArn", "state machine"))
    found[TRANSITION_THROTTLE_ALARM] = _sum_alarm(
        spec,
        "transitions-throttled",
        "agentfn: Step Functions throttled state transitions in this account and region "
        "(the bucket every state machine shares): executions of this stack slow down",
        [
            _query(
                0,
                STATES,
                "ThrottledEvents",
                [{"Name": "ServiceMetric", "Value": "StateTransition"}],
            )
        ],
    )
    found[API_5XX_ALARM] = _sum_alarm(
        spec,
        "api-5xx",
        "agentfn: the REST API answered 5XX (its function failed or timed out, or API "
        "Gateway could not reach it)",
        [
            _query(
                0,
                "AWS/ApiGateway",
                "5XXError",
                [
                    {"Name": "ApiName", "Value": ref("AWS::StackName")},  # the API's Name
                    {"Name": "Stage", "Value": spec.deployment.stage_name},
                ],
            )
        ],
    )
    tables: list[list[dict[str, Any]]] = [
        [{"Name": "TableName", "Value": ref(TABLE)}],
        [
            {"Name": "TableName", "Value": ref(TABLE)},
            {"Name": "GlobalSecondaryIndexName", "Value": SWEEP_INDEX},
        ],
        [{"Name": "TableName", "Value": ref(IDEMPOTENCY_TABLE)}],
    ]
    queries = [
        _query(i, "AWS/DynamoDB", metric, dimensions)
        for i, (dimensions, metric) in enumerate(
            (d, m) for d in tables for m in ("ReadThrottleEvents", "WriteThrottleEvents")
        )
    ]
    found[TABLE_THROTTLE_ALARM] = _sum_alarm(
        spec,
        "table-throttles",
        "agentfn: DynamoDB throttled reads or writes of the runs table (or its sweep index) "
        "or of the idempotency table",
        queries,
    )
    return found
