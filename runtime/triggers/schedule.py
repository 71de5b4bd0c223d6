"""Schedule expressions as EventBridge Scheduler reads them: `cron(…)`, `rate(…)`, `at(…)`.

AWS cron is not Unix cron: it has six fields (minutes hours day-of-month month day-of-week
year), days of the week count from 1 = Sunday, and one of day-of-month / day-of-week must be
`?`. A five-field Unix expression would be refused at deploy; `parse` refuses it at
validation and says how to write it. croniter reads Unix cron (and seconds, not years, as a
sixth field), so this small parser is the one that agrees with AWS.

`next_fire` computes when an expression fires next in its time zone: `agentfn dev` fires
schedules with it (infra.local.dev_triggers).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}  # JAN=1
_MONTHS = {k.upper(): v for k, v in _MONTHS.items()}
_DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], start=1)}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (  # name, low, high, names
    ("minutes", 0, 59, {}),
    ("hours", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 1, 7, _DAYS),
    ("year", 1970, 2199, {}),
)
_RATE_RE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_AT_RE = re.compile(r"^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
#: How far ahead next_fire looks before it says an expression never fires again.
LOOKAHEAD_DAYS = 366 * 5


class ScheduleError(ValueError):
    """An expression EventBridge Scheduler would refuse, in words that say how to fix it."""


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    years: frozenset[int]
    dom: str  # the day-of-month field as written ("?" when unused)
    dow: str  # the day-of-week field as written ("?" when unused)

    def day_matches(self, day: datetime) -> bool:
        if self.dom != "?":
            return _dom_matches(self.dom, day)
        return _dow_matches(self.dow, day)


@dataclass(frozen=True)
class Rate:
    seconds: int


@dataclass(frozen=True)
class At:
    when: datetime  # naive, in the schedule's time zone


Expression = Cron | Rate | At


def parse(expression: str) -> Expression:
    """The parsed expression, or ScheduleError saying what AWS would refuse."""
    text = expression.strip()
    if text.startswith("rate("):
        return _rate(text)
    if text.startswith("at("):
        found = _AT_RE.match(text)
        if not found:
            raise ScheduleError("a one-time schedule is at(yyyy-mm-ddThh:mm:ss)")
        return At(datetime.fromisoformat(found.group(1)))
    if not (text.startswith("cron(") and text.endswith(")")):
        raise ScheduleError(
            f"{expression!r} is not a schedule expression; write cron(0 7 * * ? *), "
            "rate(1 hour) or at(2030-01-01T09:00:00)"
        )
    return _cron(text[5:-1].split())


def _rate(text: str) -> Rate:
    found = _RATE_RE.match(text)
    if not found:
        raise ScheduleError(
            f"{text!r}: a rate is rate(VALUE UNIT), VALUE a positive whole number and UNIT "
            "minute(s), hour(s) or day(s), e.g. rate(5 minutes)"
        )
    value, unit = int(found.group(1)), found.group(2)
    if value < 1:
        raise ScheduleError(f"{text!r}: the rate must be at least 1")
    if (value == 1) != (not unit.endswith("s")):
        right = unit.rstrip("s") if value == 1 else unit + "s"
        raise ScheduleError(f"{text!r}: AWS wants rate({value} {right})")
    return Rate(value * _UNIT_SECONDS[unit.rstrip("s")])


def _cron(fields: list[str]) -> Cron:
    if len(fields) == 5:
        raise ScheduleError(
            f"cron({' '.join(fields)}) has five fields: that is Unix cron. AWS cron has six "
            "(minutes hours day-of-month month day-of-week year), days of the week 1-7 from "
            f"Sunday, and `?` in day-of-month or day-of-week{_suggestion(fields)}"
        )
    if len(fields) != 6:
        raise ScheduleError(
            f"cron has six fields (minutes hours day-of-month month day-of-week year), "
            f"got {len(fields)}"
        )
    minute, hour, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise ScheduleError(
            "exactly one of day-of-month and day-of-week must be `?` (AWS does not take both, "
            f"nor neither): e.g. cron({minute} {hour} * {month} ? {year})"
        )
    if dom != "?":
        _check_dom(dom)
    if dow != "?":
        _check_dow(dow)
    return Cron(
        minutes=_values(minute, 0),
        hours=_values(hour, 1),
        months=_values(month, 3),
        years=_values(year, 5),
        dom=dom.upper(),
        dow=dow.upper(),
    )


def _suggestion(fields: list[str]) -> str:
    minute, hour, dom, month, dow = fields
    if dow == "*":
        return f": cron({minute} {hour} {dom} {month} ? *)"
    if dom == "*" and re.fullmatch(r"[0-6](,[0-6])*", dow):
        days = ",".join(str(int(d) + 1) for d in dow.split(","))
        return f": cron({minute} {hour} ? {month} {days} *)"
    return ""


def _number(text: str, index: int) -> int:
    name, low, high, names = _FIELDS[index]
    value = names.get(text.upper()) if names else None
    if value is None:
        if not text.isdigit():
            raise ScheduleError(f"cron {name}: {text!r} is not a number")
        value = int(text)
    if not low <= value <= high:
        raise ScheduleError(f"cron {name}: {value} is outside {low}-{high}")
    return value


def _values(field: str, index: int) -> frozenset[int]:
    """The values a field of `,` `-` `*` `/` allows (minutes, hours, months, years)."""
    name, low, high, _ = _FIELDS[index]
    out: set[int] = set()
    for part in field.split(","):
        step = 1
        if "/" in part:
            part, _, every = part.partition("/")
            if not every.isdigit() or int(every) < 1:
                raise ScheduleError(f"cron {name}: {every!r} after `/` is not a positive number")
            step = int(every)
        if part == "*":
            first, last = low, high
        elif "-" in part:
            a, _, b = part.partition("-")
            first, last = _number(a, index), _number(b, index)
            if first > last:
                raise ScheduleError(f"cron {name}: the range {part} runs backwards")
        else:
            first = _number(part, index)
            last = high if step > 1 else first
        out.update(range(first, last + 1, step))
    return frozenset(out)


def _check_dom(field: str) -> None:
    if field.upper() in ("L", "LW") or re.fullmatch(r"\d{1,2}W", field.upper()):
        if field[:-1].isdigit():
            _number(field[:-1], 2)
        return
    _values(field, 2)


def _check_dow(field: str) -> None:
    upper = field.upper()
    if "#" in upper:
        day, _, nth = upper.partition("#")
        _number(day, 4)
        if nth not in {"1", "2", "3", "4", "5"}:
            raise ScheduleError(f"cron day-of-week: {field!r}: the week after # is 1-5")
        return
    if upper.endswith("L") and len(upper) > 1:
        _number(upper[:-1], 4)
        return
    _values(upper, 4)


def _dom_matches(field: str, day: datetime) -> bool:
    last = calendar.monthrange(day.year, day.month)[1]
    if field == "L":
        return day.day == last
    if field == "LW":
        return day.day == _weekday_near(day, last)
    if field.endswith("W"):
        return day.day == _weekday_near(day, min(int(field[:-1]), last))
    return day.day in _values(field, 2)


def _weekday_near(day: datetime, target: int) -> int:
    """The weekday (Mon-Fri) nearest to day `target` of the month, not leaving the month."""
    last = calendar.monthrange(day.year, day.month)[1]
    weekday = calendar.weekday(day.year, day.month, target)  # Monday = 0
    if weekday == 5:
        return target - 1 if target > 1 else target + 2
    if weekday == 6:
        return target + 1 if target < last else target - 2
    return target


def _dow_matches(field: str, day: datetime) -> bool:
    aws_day = (day.weekday() + 1) % 7 + 1  # Monday=0 → 2; Sunday=6 → 1
    if "#" in field:
        wanted, _, nth = field.partition("#")
        return aws_day == _number(wanted, 4) and (day.day - 1) // 7 + 1 == int(nth)
    if field.endswith("L") and len(field) > 1:
        last = calendar.monthrange(day.year, day.month)[1]
        return aws_day == _number(field[:-1], 4) and day.day + 7 > last
    return aws_day in _values(field, 4)


def next_fire(expression: str, timezone: str | None, after: float) -> float | None:
    """When the expression fires next after `after` (epoch seconds), or None if never.
    A rate counts from `after` (Scheduler counts from the schedule's creation)."""
    parsed = parse(expression)
    zone = ZoneInfo(timezone or "UTC")
    if isinstance(parsed, Rate):
        return after + parsed.seconds
    if isinstance(parsed, At):
        when = parsed.when.replace(tzinfo=zone).timestamp()
        return when if when > after else None
    start = datetime.fromtimestamp(after, zone).replace(second=0, microsecond=0)
    start += timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(LOOKAHEAD_DAYS):
        if day.year in parsed.years and day.month in parsed.months and parsed.day_matches(day):
            for hour in sorted(parsed.hours):
                for minute in sorted(parsed.minutes):
                    local = day.replace(hour=hour, minute=minute, tzinfo=zone)
                    if local >= start:
                        return local.astimezone(UTC).timestamp()
        day = (day + timedelta(days=1)).replace(hour=0, minute=0)
    return None
