"""Triggers: what starts an agent's or a workflow's runs besides a caller of the API.

Each trigger has exactly one source — `schedule`, `webhook`, `queue`, `s3` or `event` —
and an `input` template rendered with the event (the workflows' template language,
runtime.workflows.template: parsed, never executed). Which references an event kind
provides is runtime.triggers.events.PROVIDES; infra/checks/trigger_checks.py checks the
templates against it at validation. The sources compile to AWS (infra/sam/triggers.py):
EventBridge Scheduler, an unauthenticated-but-signed REST route, SQS with a dead-letter
queue, EventBridge rules for S3 uploads and for events.
"""

from typing import Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from runtime.spec.methods import TriggerMethods
from runtime.spec.models import SpecModel
from runtime.spec.shared import SOURCES
from runtime.spec.types import Duration, Name, SecretRef

HEADER_RE = r"^[A-Za-z0-9-]{1,64}$"


class WebhookSource(SpecModel):
    """`POST /hooks/{agent}/{trigger}`: no IAM auth, a signature checked with `secret`."""

    secret: SecretRef = Field(description="The shared signing secret: ${secret:NAME}.")
    signature: Literal["github", "stripe", "hmac-sha256"] = Field(
        description="github: X-Hub-Signature-256; stripe: Stripe-Signature (timestamped); "
        "hmac-sha256: hex HMAC-SHA256 of the raw body in `header`."
    )
    header: str | None = Field(
        None, pattern=HEADER_RE, description="hmac-sha256: the header holding the signature."
    )
    id_header: str | None = Field(
        None,
        pattern=HEADER_RE,
        description="The header with the sender's delivery id (redeliveries start no second "
        "run); default X-GitHub-Delivery for github, the event's `id` for stripe.",
    )
    tolerance: Duration = Field(
        300.0, le=3600, description="stripe: how old a signed timestamp may be."
    )

    @model_validator(mode="after")
    def _header_for_hmac(self) -> Self:
        if self.signature == "hmac-sha256" and self.header is None:
            raise ValueError("signature hmac-sha256 needs `header`: the header it arrives in")
        if self.signature != "hmac-sha256" and self.header is not None:
            raise ValueError(f"`header` belongs to hmac-sha256; {self.signature} has its own")
        return self


class QueueSource(SpecModel):
    """An SQS queue: one the stack creates (with a dead-letter queue), or `arn`."""

    arn: str | None = Field(
        None,
        pattern=r"^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$",
        description="An existing queue (its redrive policy is yours); absent: the stack "
        "creates one.",
    )
    batch_size: int = Field(1, ge=1, le=10, description="Messages per invocation.")
    max_receives: int = Field(
        3, ge=1, le=1000, description="Deliveries before a message is parked in the DLQ."
    )
    visibility_timeout: Duration = Field(
        60.0, ge=60, le=43200, description="The created queue's (≥ the function's timeout)."
    )


class S3Source(SpecModel):
    """`Object Created` in a bucket the stack does not own, via EventBridge notifications
    (the bucket must have them on: see README "Triggers")."""

    bucket: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    prefix: str | None = Field(None, min_length=1, max_length=1024)
    suffix: str | None = Field(None, min_length=1, max_length=1024)


class EventSource(SpecModel):
    """An EventBridge rule on the deployment's event bus with this pattern."""

    source: list[str] = Field(min_length=1, max_length=50)
    detail_type: list[str] | None = Field(None, min_length=1, max_length=50)
    bus: str | None = Field(None, description="An event bus name; default deployment.event_bus.")


class TriggerConfig(TriggerMethods, SpecModel):
    name: Name = Field(description="Unique within its agent or workflow; part of the route.")
    input: str | dict[str, str] = Field(
        description="Template of the run's input ({body.title}, {detail.id}…); a workflow "
        "with an object input_schema takes a mapping of templates."
    )
    session: str = Field(
        "per_event",
        min_length=1,
        max_length=200,
        description="per_event (a session per event), a fixed id, or a template.",
    )
    schedule: str | None = Field(None, description="cron(0 7 * * ? *), rate(1 hour), at(…).")
    timezone: str | None = Field(None, description="IANA zone of the schedule; default UTC.")
    flexible_window: Duration | None = Field(
        None, le=86400, description="Scheduler's flexible time window; default off."
    )
    webhook: WebhookSource | None = None
    queue: QueueSource | None = None
    s3: S3Source | None = None
    event: EventSource | None = None

    @field_validator("schedule")
    @classmethod
    def _aws_schedule(cls, value: str | None) -> str | None:
        if value is not None:
            from runtime.triggers.schedule import parse

            parse(value)  # ScheduleError is a ValueError: reported at the key
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"{value!r} is not a time zone; write an IANA name like Europe/Paris"
                ) from None
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [s for s in SOURCES if getattr(self, s) is not None]
        if len(given) != 1:
            listed = ", ".join(f"`{s}`" for s in SOURCES)
            raise ValueError(f"a trigger has exactly one of {listed} (got {len(given)})")
        if self.kind != "schedule" and (self.timezone or self.flexible_window):
            raise ValueError("`timezone` and `flexible_window` belong to a `schedule` trigger")
        return self
