"""The template's logging settings, dashboard and alarms (`deployment.log_level`,
`deployment.monitoring`): what they watch is what the functions emit, and nothing in them
grows with the number of agents."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.sam import monitoring
from infra.sam.template import build_template
from runtime.observability.metrics import METRICS, NAMESPACE
from runtime.spec import AgentfnSpec
from tests.infra.cfn import pessimistic


def _spec(agents: int = 1, **deployment: Any) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "deployment": deployment,
            "models": {"m": {"provider": "scripted", "script": [{"text": "hi"}]}},
            "agents": {f"agent-{i}": {"description": "d", "model": "m"} for i in range(agents)},
        }
    )


def _body(template: dict[str, Any]) -> dict[str, Any]:
    text = template["Resources"][monitoring.DASHBOARD]["Properties"]["DashboardBody"]
    resolved: dict[str, Any] = json.loads(pessimistic()(text))
    return resolved


def _metric_names(body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for widget in body["widgets"]:
        for line in widget["properties"].get("metrics", []):
            if isinstance(line[0], str):
                names.add(line[1])
            else:
                names.update(re.findall(r'MetricName=\\?"(\w+)', line[0]["expression"]))
    return names


def test_log_level_reaches_powertools_and_lambda() -> None:
    for level, lambda_level in (("INFO", "INFO"), ("DEBUG", "DEBUG"), ("WARNING", "WARN")):
        function = build_template(_spec(log_level=level))["Globals"]["Function"]
        assert function["Environment"]["Variables"]["POWERTOOLS_LOG_LEVEL"] == level
        assert function["LoggingConfig"]["ApplicationLogLevel"] == lambda_level
        variables = function["Environment"]["Variables"]
        assert variables["AGENTFN_STACK_NAME"] == {"Ref": "AWS::StackName"}
    with pytest.raises(ValueError):
        _spec(log_level="TRACE")


def test_the_dashboard_is_the_same_for_one_agent_or_a_hundred() -> None:
    one, hundred = build_template(_spec(1)), build_template(_spec(100))
    text = one["Resources"][monitoring.DASHBOARD]["Properties"]["DashboardBody"]
    assert text == hundred["Resources"][monitoring.DASHBOARD]["Properties"]["DashboardBody"]
    body = _body(one)
    assert len(json.dumps(body)) < 20_000  # a few KB, whatever the number of agents
    searches = [
        line[0]["expression"]
        for widget in body["widgets"]
        for line in widget["properties"].get("metrics", [])
        if isinstance(line[0], dict) and "SEARCH" in line[0]["expression"]
    ]
    assert searches and all(f"{{{NAMESPACE}," in s and 'service="SSS' in s for s in searches)
    assert "${!PROP('Dim.agent')}" in text["Fn::Sub"]  # Fn::Sub's escape: ${PROP(…)} deployed
    assert _metric_names(body) <= set(METRICS)
    assert {"RunsFailed", "ModelLatency", "ToolErrors", "CostUSD", "ApprovalWait"} <= (
        _metric_names(body)
    )


def test_alarms_watch_the_stack_and_notify_a_topic() -> None:
    resources = build_template(_spec(3))["Resources"]
    every = {k for k, v in resources.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
    # The run metrics' alarms; the others read AWS's own metrics (test_template_native_alarms).
    assert {monitoring.FAILURE_ALARM, monitoring.STUCK_ALARM} <= every
    alarms = {k: resources[k] for k in (monitoring.FAILURE_ALARM, monitoring.STUCK_ALARM)}
    for other in every - set(alarms):
        assert resources[other]["Properties"]["AlarmActions"] == [{"Ref": monitoring.ALARM_TOPIC}]
    assert resources[monitoring.ALARM_TOPIC]["Type"] == "AWS::SNS::Topic"
    for alarm in alarms.values():
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": monitoring.ALARM_TOPIC}]
        for query in props["Metrics"]:
            if "MetricStat" in query:
                metric = query["MetricStat"]["Metric"]
                assert metric["Namespace"] == NAMESPACE and metric["MetricName"] in METRICS
                assert metric["Dimensions"] == [
                    {"Name": "service", "Value": {"Ref": "AWS::StackName"}}
                ]
    failure = alarms[monitoring.FAILURE_ALARM]["Properties"]
    assert failure["Threshold"] == 0.2 and failure["Metrics"][0]["MetricStat"]["Period"] == 900
    assert "IF(" in failure["Metrics"][-1]["Expression"]
    stuck = alarms[monitoring.STUCK_ALARM]["Properties"]
    assert stuck["Metrics"][0]["MetricStat"]["Period"] == 300  # the sweep's interval
    names = {q["MetricStat"]["Metric"]["MetricName"] for q in stuck["Metrics"] if "MetricStat" in q}
    assert names == {"RunsResumed", "ResumesResent", "RunsStranded", "SweepErrors"}


def test_monitoring_switches() -> None:
    topic = "arn:aws:sns:eu-west-1:123456789012:oncall"
    own = build_template(_spec(monitoring={"alarm_topic_arn": topic}))
    assert monitoring.ALARM_TOPIC not in own["Resources"] and "AlarmTopicArn" not in own["Outputs"]
    alarm = own["Resources"][monitoring.FAILURE_ALARM]["Properties"]
    assert alarm["AlarmActions"] == [topic] == alarm["OKActions"]

    quiet = build_template(_spec(monitoring={"dashboard": False, "alarms": False}))
    kinds = {v["Type"] for v in quiet["Resources"].values()}
    assert not kinds & {"AWS::CloudWatch::Dashboard", "AWS::CloudWatch::Alarm", "AWS::SNS::Topic"}
    assert "DashboardUrl" not in quiet["Outputs"]

    no_alarms = build_template(_spec(monitoring={"alarms": False}))
    assert {w["type"] for w in _body(no_alarms)["widgets"]} == {"metric"}  # no alarm widget
    assert {w["type"] for w in _body(own)["widgets"]} == {"metric", "alarm"}
    tuned = _spec(monitoring={"failure_rate": 0.05, "min_runs": 20, "alarm_period": "1h"})
    alarm = build_template(tuned)["Resources"][monitoring.FAILURE_ALARM]["Properties"]
    assert alarm["Threshold"] == 0.05 and ">= 20" in alarm["Metrics"][-1]["Expression"]
    for bad in ({"failure_rate": 0}, {"alarm_topic_arn": "oncall"}, {"alarm_period": "90s"}):
        with pytest.raises(ValueError):
            _spec(monitoring=bad)
