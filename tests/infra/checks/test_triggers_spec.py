"""`triggers:` validation (issue #28): the issue's five triggers validate; every mistake is
reported at its file:line with what to write instead. Each bad case marks the line the
problem must be reported on with `#!`."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.checks.validate import validate_file
from runtime.triggers.schedule import ScheduleError, next_fire, parse

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "triggers" / "agents.yaml"

HEAD = """\
version: 1
secrets:
  gh-hook: {source: secretsmanager}
models:
  m: {provider: scripted, script: [{text: hi}]}
agents:
  a:
    description: d
    model: m
    triggers:
"""


def test_the_five_triggers_of_the_issue_validate() -> None:
    result = validate_file(FIXTURE)
    assert result.ok, [str(i) for i in result.issues]
    assert result.spec is not None
    kinds = {t.name: t.kind for t in result.spec.agents["support"].triggers}
    assert kinds == {
        "nightly": "schedule",
        "github": "webhook",
        "inbox": "queue",
        "uploads": "s3",
        "orders": "event",
    }
    nightly = result.spec.agents["support"].triggers[0]
    assert nightly.schedule == "cron(0 7 * * ? *)" and nightly.timezone == "Europe/Paris"
    assert result.spec.workflows["digest"].triggers[0].input == {"topic": "the hour before {time}"}


CASES: dict[str, tuple[str, str]] = {
    "five-field Unix cron": (
        """
        - name: n
          schedule: "cron(0 7 * * *)"  #!
          input: x
        """,
        "has five fields: that is Unix cron. AWS cron has six (minutes hours day-of-month "
        "month day-of-week year), days of the week 1-7 from Sunday, and `?` in day-of-month "
        "or day-of-week: cron(0 7 * * ? *)",
    ),
    "both day fields set": (
        """
        - name: n
          schedule: "cron(0 7 * * MON *)"  #!
          input: x
        """,
        "exactly one of day-of-month and day-of-week must be `?`",
    ),
    "rate with the wrong plural": (
        """
        - name: n
          schedule: rate(5 minute)  #!
          input: x
        """,
        "AWS wants rate(5 minutes)",
    ),
    "unknown time zone": (
        """
        - name: n
          schedule: rate(1 hour)
          timezone: Europe/Pariss  #!
          input: x
        """,
        "'Europe/Pariss' is not a time zone",
    ),
    "two sources": (
        """
        - name: n  #!
          schedule: rate(1 hour)
          queue: {}
          input: x
        """,
        "a trigger has exactly one of `schedule`, `webhook`, `queue`, `s3`, `event` (got 2)",
    ),
    "no source": (
        """
        - name: n  #!
          input: x
        """,
        "(got 0)",
    ),
    "names repeat": (
        """
        - {name: n, schedule: rate(1 hour), input: x}
        - {name: n, queue: {}, input: y}  #!
        """,
        "trigger name 'n' is used twice in this list",
    ),
    "webhook reference the event lacks": (
        """
        - name: n
          webhook: {secret: "${secret:gh-hook}", signature: github}
          input: "New issue: {bdy.issue.title}"  #!
        """,
        "{bdy.issue.title}: the event of a webhook trigger has no 'bdy'; did you mean 'body'?",
    ),
    "s3 key is a value": (
        """
        - name: n
          s3: {bucket: my-bucket}
          input: "{key.name}"  #!
        """,
        "{key.name}: {key} of a s3 trigger's event is a value, not an object",
    ),
    "schedule has no body": (
        """
        - name: n
          schedule: rate(1 hour)
          input: "{body}"  #!
        """,
        "the event of a schedule trigger has no 'body'",
    ),
    "session template checked too": (
        """
        - name: n
          queue: {}
          input: "{body}"
          session: "{thread}"  #!
        """,
        "{thread}: the event of a queue trigger has no 'thread'",
    ),
    "undeclared webhook secret": (
        """
        - name: n
          webhook: {secret: "${secret:gh-hok}", signature: github}  #!
          input: x
        """,
        "secret 'gh-hok' is not declared under `secrets`; did you mean 'gh-hook'?",
    ),
    "plaintext webhook secret": (
        """
        - name: n
          webhook: {secret: hunter2, signature: github}  #!
          input: x
        """,
        "must be a secret reference ${secret:NAME}",
    ),
    "hmac without its header": (
        """
        - name: n
          webhook: {secret: "${secret:gh-hook}", signature: hmac-sha256}  #!
          input: x
        """,
        "signature hmac-sha256 needs `header`",
    ),
    "one queue, one trigger": (
        """
        - {name: n, queue: {arn: "arn:aws:sqs:us-east-1:123456789012:q"}, input: x}
        - name: m
          queue: {arn: "arn:aws:sqs:us-east-1:123456789012:q"}  #!
          input: y
        """,
        "trigger a/n reads this queue already; one queue, one trigger",
    ),
    "an agent's input is text": (
        """
        - name: n
          queue: {}
          input: {a: "{body}"}  #!
        """,
        "an agent's input is text; write one template string",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_trigger_is_reported_at_its_line(case: str, tmp_path: Path) -> None:
    body, expected = CASES[case]
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "      ")
    text = HEAD + lines + "\n"
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "#!" in t)
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    issues = validate_file(path).issues
    matching = [i for i in issues if expected in i.message]
    assert matching, [str(i) for i in issues]
    assert matching[0].line == line, [str(i) for i in issues]
    assert str(matching[0]).startswith(f"{path}:{line}:")


@pytest.mark.parametrize(
    "expression",
    [
        "cron(0 7 * * ? *)",
        "cron(0/15 8-17 ? * MON-FRI *)",
        "cron(0 9 L * ? *)",
        "cron(0 9 15W * ? 2030-2035)",
        "cron(30 6 ? * 2#1 *)",
        "cron(0 18 ? * 6L *)",
        "cron(0 0 1 JAN,JUL ? *)",
        "rate(1 minute)",
        "rate(12 hours)",
        "at(2030-01-01T09:00:00)",
    ],
)
def test_aws_schedule_syntax_is_accepted(expression: str) -> None:
    parse(expression)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("cron(0 7 * * 1)", "cron(0 7 ? * 2 *)"),  # Unix Monday 1 is AWS Monday 2
        ("cron(60 7 * * ? *)", "minutes: 60 is outside 0-59"),
        ("cron(0 7 * * ? 1969)", "year: 1969 is outside 1970-2199"),
        ("cron(0 7 * 13 ? *)", "month: 13 is outside 1-12"),
        ("cron(0 7 ? * 8 *)", "day-of-week: 8 is outside 1-7"),
        ("cron(0 7 ? * 2#6 *)", "the week after # is 1-5"),
        ("cron(0 7 * *)", "six fields"),
        ("rate(0 minutes)", "at least 1"),
        ("rate(1 minutes)", "AWS wants rate(1 minute)"),
        ("rate(2 weeks)", "minute(s), hour(s) or day(s)"),
        ("every day", "not a schedule expression"),
    ],
)
def test_aws_schedule_syntax_errors_say_what_to_write(expression: str, message: str) -> None:
    with pytest.raises(ScheduleError, match=None) as raised:
        parse(expression)
    assert message in str(raised.value)


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _utc(seconds: float | None) -> str:
    assert seconds is not None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def test_next_fire_follows_the_time_zone_and_aws_day_rules() -> None:
    # 07:00 in Paris is 06:00 UTC in winter, 05:00 UTC in summer.
    assert _utc(next_fire("cron(0 7 * * ? *)", "Europe/Paris", _at("2026-01-10T12:00"))) == (
        "2026-01-11 06:00"
    )
    assert _utc(next_fire("cron(0 7 * * ? *)", "Europe/Paris", _at("2026-07-10T12:00"))) == (
        "2026-07-11 05:00"
    )
    # Day of week 2 is Monday in AWS cron; 2026-11-26 is a Thursday.
    assert _utc(next_fire("cron(0 9 ? * 2 *)", None, _at("2026-11-26T10:00"))) == "2026-11-30 09:00"
    # The last day of February 2028 (a leap year), and the first Monday of a month.
    assert _utc(next_fire("cron(0 0 L 2 ? *)", None, _at("2027-03-01T00:00"))) == "2028-02-29 00:00"
    assert (
        _utc(next_fire("cron(0 8 ? * 2#1 *)", None, _at("2026-11-26T00:00"))) == "2026-12-07 08:00"
    )
    # 15W: 2026-11-15 is a Sunday, so the nearest weekday is Monday the 16th.
    assert (
        _utc(next_fire("cron(0 8 15W * ? *)", None, _at("2026-11-01T00:00"))) == "2026-11-16 08:00"
    )
    assert next_fire("rate(5 minutes)", None, 1000.0) == 1300.0
    assert next_fire("at(2020-01-01T00:00:00)", None, _at("2026-01-01T00:00")) is None
    assert next_fire("cron(0 0 1 1 ? 2020)", None, _at("2026-01-01T00:00")) is None
