"""The deployment's CloudWatch dashboard and alarms (`deployment.monitoring`), on the metrics
the functions emit (runtime.observability.metrics: namespace `agentfn`, dimension `service`
= the stack's name, and `agent`, `tool`, `error_code` where they apply).

Nothing here grows with the number of agents. The dashboard draws every agent with metric
search expressions (`SEARCH('{agentfn,agent,service} …')`), so its body is the same few KB
for one agent or a hundred (and a new agent shows up without a rebuild); the alarms watch
the whole stack through the metrics' stack-only roll-up (a per-agent alarm would spend two
of CloudFormation's 500 resources per agent):

- failure rate: the share of the runs finished in `alarm_period` that failed (cancelled
  runs aside), once at least `min_runs` finished;
- stuck runs: a run the sweeper found without an owner (resumed, resent, stranded, or one it
  could not settle) in its last pass: something lost an execution or a resume.

They notify `alarm_topic_arn`, or an SNS topic the template makes (output AlarmTopicArn), as
do the alarms on the metrics AWS emits (infra.sam.native_alarms: crashes, throttles, 5XX).
"""

from __future__ import annotations

import json
from typing import Any

from infra.sam.intrinsics import ref, sub
from runtime.spec import AgentfnSpec

DASHBOARD = "Dashboard"
FAILURE_ALARM = "FailureRateAlarm"
STUCK_ALARM = "StuckRunsAlarm"
ALARM_TOPIC = "AlarmTopic"
NAMESPACE = "agentfn"
PERIOD = 300  # the dashboard's
STACK = "${AWS::StackName}"


def resources(spec: AgentfnSpec) -> dict[str, Any]:
    settings = spec.deployment.monitoring
    found: dict[str, Any] = {}
    if settings.alarms:
        if settings.alarm_topic_arn is None:
            found[ALARM_TOPIC] = {
                "Type": "AWS::SNS::Topic",
                "Properties": {"DisplayName": "agentfn alarms"},
            }
        found[FAILURE_ALARM] = failure_rate_alarm(spec)
        found[STUCK_ALARM] = stuck_runs_alarm(spec)
    if settings.dashboard:
        found[DASHBOARD] = {
            "Type": "AWS::CloudWatch::Dashboard",
            "Properties": {
                "DashboardName": sub(f"{STACK}-agentfn"),
                "DashboardBody": sub(dashboard_body(settings.alarms)),
            },
        }
    return found


def outputs(spec: AgentfnSpec) -> dict[str, Any]:
    settings = spec.deployment.monitoring
    found: dict[str, Any] = {}
    if settings.dashboard:
        found["DashboardUrl"] = {
            "Description": "The CloudWatch dashboard of this deployment",
            "Value": sub(
                "https://${AWS::Region}.console.${AWS::URLSuffix}/cloudwatch/home"
                f"?region=${{AWS::Region}}#dashboards:name={STACK}-agentfn"
            ),
        }
    if settings.alarms and settings.alarm_topic_arn is None:
        found["AlarmTopicArn"] = {
            "Description": "Subscribe to it to hear of the alarms (runs, functions, APIs, tables)",
            "Value": ref(ALARM_TOPIC),
        }
    return found


# ---- alarms --------------------------------------------------------------------------------


def _stack_metric(name: str, period: int, label: str | None = None) -> dict[str, Any]:
    """A query of `name` rolled up for the whole stack (its only dimension: `service`)."""
    metric = {
        "Namespace": NAMESPACE,
        "MetricName": name,
        "Dimensions": [{"Name": "service", "Value": ref("AWS::StackName")}],
    }
    return {
        "Id": (label or name).lower(),
        "MetricStat": {"Metric": metric, "Period": period, "Stat": "Sum"},
        "ReturnData": False,
    }


def alarm(spec: AgentfnSpec, name: str, description: str, props: dict[str, Any]) -> dict[str, Any]:
    topic = spec.deployment.monitoring.alarm_topic_arn
    actions = [topic if topic is not None else ref(ALARM_TOPIC)]
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmName": sub(f"{STACK}-{name}"),
            "AlarmDescription": description,
            "ActionsEnabled": True,
            "AlarmActions": actions,
            "OKActions": actions,
            "EvaluationPeriods": 1,
            "DatapointsToAlarm": 1,
            "TreatMissingData": "notBreaching",  # no runs finished: nothing is failing
            **props,
        },
    }


def failure_rate_alarm(spec: AgentfnSpec) -> dict[str, Any]:
    settings = spec.deployment.monitoring
    period = int(settings.alarm_period)
    failed, succeeded = "FILL(failed,0)", "FILL(succeeded,0)"
    finished = f"{failed}+{succeeded}"
    rate = f"IF({finished} >= {settings.min_runs}, {failed}/({finished}), 0)"
    description = (
        f"agentfn: more than {settings.failure_rate:.0%} of the runs that finished in "
        f"{period // 60} minutes failed (at least {settings.min_runs} finished)"
    )
    return alarm(
        spec,
        "failure-rate",
        description,
        {
            "Metrics": [
                _stack_metric("RunsFailed", period, "failed"),
                _stack_metric("RunsSucceeded", period, "succeeded"),
                {"Id": "rate", "Expression": rate, "Label": "failed share", "ReturnData": True},
            ],
            "ComparisonOperator": "GreaterThanThreshold",
            "Threshold": settings.failure_rate,
        },
    )


STUCK_METRICS = ("RunsResumed", "ResumesResent", "RunsStranded", "SweepErrors")


def stuck_runs_alarm(spec: AgentfnSpec) -> dict[str, Any]:
    period = int(spec.deployment.sweep_interval)
    queries = [_stack_metric(name, period) for name in STUCK_METRICS]
    total = "+".join(f"FILL({q['Id']},0)" for q in queries)
    description = (
        "agentfn: the sweeper found runs that had lost their owner (an execution or a resume "
        "lost: resumed, resent, stranded, or not settled); see its log lines"
    )
    return alarm(
        spec,
        "stuck-runs",
        description,
        {
            "Metrics": [
                *queries,
                {"Id": "stuck", "Expression": total, "Label": "stuck runs", "ReturnData": True},
            ],
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1,
        },
    )


# ---- dashboard -----------------------------------------------------------------------------


def _search(metric: str, stat: str, schema: str = "agent,service", label: str = "agent") -> Any:
    """Every agent's series of `metric` in this stack (a search: no list of agents here).
    `${!…}` is Fn::Sub's escape: CloudWatch gets `${PROP(…)}`, its dynamic label."""
    query = f'{{{NAMESPACE},{schema}}} MetricName="{metric}" service="{STACK}"'
    labels = " ".join(f"${{!PROP('Dim.{part}')}}" for part in label.split(","))
    expression = f"SEARCH('{query}', '{stat}', {PERIOD})"
    return [{"expression": expression, "label": labels, "id": f"s_{metric.lower()}"}]


def _stack(metric: str, label: str, **options: Any) -> list[Any]:
    return [NAMESPACE, metric, "service", STACK, {"label": label, "stat": "Sum", **options}]


def _widget(title: str, metrics: list[Any], x: int, y: int, **properties: Any) -> dict[str, Any]:
    return {
        "type": "metric",
        "x": x,
        "y": y,
        "width": 8,
        "height": 6,
        "properties": {
            "title": title,
            "region": "${AWS::Region}",
            "view": "timeSeries",
            "period": PERIOD,
            "metrics": metrics,
            **properties,
        },
    }


def dashboard_body(with_alarms: bool) -> str:
    """The dashboard's JSON, for Fn::Sub (the stack name and region filled in at deploy)."""
    failed, ok = "FILL(f,0)", "FILL(s,0)"
    asked, decided = "FILL(r,0)", "FILL(d,0)"
    rows: list[list[tuple[str, list[Any], dict[str, Any]]]] = [
        [
            (
                "Runs (stack)",
                [
                    _stack("RunsStarted", "started"),
                    _stack("RunsSucceeded", "succeeded", id="s"),
                    _stack("RunsFailed", "failed", id="f"),
                    _stack("RunsCancelled", "cancelled"),
                ],
                {},
            ),
            (
                "Failed share of finished runs (stack)",
                [
                    _stack("RunsFailed", "failed", id="f", visible=False),
                    _stack("RunsSucceeded", "succeeded", id="s", visible=False),
                    [{"expression": f"100*{failed}/({failed}+{ok})", "label": "%", "id": "p"}],
                ],
                {"yAxis": {"left": {"min": 0, "max": 100}}},
            ),
            ("Runs started, by agent", [_search("RunsStarted", "Sum")], {}),
        ],
        [
            (
                "Runs failed, by agent and error code",
                [_search("RunsFailed", "Sum", "agent,error_code,service", "agent,error_code")],
                {},
            ),
            ("Runs succeeded, by agent", [_search("RunsSucceeded", "Sum")], {}),
            ("Turns (model answers), by agent", [_search("Turns", "Sum")], {}),
        ],
        [
            ("Model latency p90 (ms), by agent", [_search("ModelLatency", "p90")], {}),
            (
                "Tokens in / out, by agent",
                [_search("InputTokens", "Sum"), _search("OutputTokens", "Sum")],
                {},
            ),
            ("Cost (USD), by agent", [_search("CostUSD", "Sum")], {}),
        ],
        [
            (
                "Tool latency p90 (ms), by agent and tool",
                [_search("ToolLatency", "p90", "agent,service,tool", "agent,tool")],
                {},
            ),
            (
                "Tool errors, by agent and tool",
                [_search("ToolErrors", "Sum", "agent,service,tool", "agent,tool")],
                {},
            ),
            ("Approval wait max (s), by agent", [_search("ApprovalWait", "Maximum")], {}),
        ],
        [
            (
                "Approvals (stack)",
                [
                    _stack("ApprovalsRequested", "requested", id="r"),
                    _stack("ApprovalsDecided", "decided", id="d"),
                    _stack("ApprovalsTimedOut", "timed out"),
                    [
                        {
                            "expression": f"RUNNING_SUM({asked}-{decided})",
                            "label": "waiting (net, since the left edge)",
                            "id": "w",
                        }
                    ],
                ],
                {},
            ),
            (
                "Sweeper: runs without an owner (stack)",
                [_stack(name, name) for name in ("SweptRuns", *STUCK_METRICS)],
                {},
            ),
        ],
    ]
    widgets = [
        _widget(title, metrics, 8 * column, 6 * row, **extra)
        for row, widgets in enumerate(rows)
        for column, (title, metrics, extra) in enumerate(widgets)
    ]
    if with_alarms:
        widgets.append(
            {
                "type": "alarm",
                "x": 16,
                "y": 24,
                "width": 8,
                "height": 6,
                "properties": {
                    "title": "Alarms",
                    "alarms": [f"${{{FAILURE_ALARM}.Arn}}", f"${{{STUCK_ALARM}.Arn}}"],
                },
            }
        )
    return json.dumps({"widgets": widgets}, separators=(",", ":"))
