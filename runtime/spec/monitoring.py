"""`deployment.monitoring`: the CloudWatch dashboard and alarms of a deployment.

The functions always emit their metrics (runtime.observability.metrics: one EMF line per
invocation, nothing to call, nothing to grant); these switches decide only what the template
builds on them. The dashboard is one resource whatever the number of agents (metric search
expressions, so its body does not grow per agent), and the alarms watch the whole stack (a
per-agent alarm would spend two resources per agent of CloudFormation's 500).
"""

from pydantic import Field

from runtime.spec.models import SpecModel
from runtime.spec.types import Duration

_SNS_TOPIC_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$"


class MonitoringSettings(SpecModel):
    """What the template builds on the functions' metrics (namespace `agentfn`)."""

    dashboard: bool = Field(
        True, description="A CloudWatch dashboard of the deployment, every agent on it."
    )
    alarms: bool = Field(
        True, description="Alarms for the failure rate of runs and for stuck runs."
    )
    alarm_topic_arn: str | None = Field(
        None,
        pattern=_SNS_TOPIC_ARN,
        description="The SNS topic the alarms notify; absent: the template makes one "
        "(output AlarmTopicArn) for you to subscribe to.",
    )
    failure_rate: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Alarm when more than this share of the runs that finished in "
        "`alarm_period` failed (cancelled runs do not count).",
    )
    min_runs: int = Field(
        5, ge=1, le=10_000, description="Finished runs a period needs before its rate counts."
    )
    alarm_period: Duration = Field(
        900.0,
        ge=60,
        le=86_400,
        multiple_of=60,
        description="The window the failure rate is taken over (whole minutes).",
    )
