"""The Redactor: every spelling of a secret (raw, JSON- and URL-escaped, repr, base64, the
members of a JSON secret) is replaced, overlapping values leave no piece, nested values are
walked, texts without a secret cost one search; and the logging filter built on it."""

from __future__ import annotations

import base64
import io
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from runtime.redaction import (
    REDACTED,
    RedactingFilter,
    Redactor,
    redactor_for,
    secret_values,
)

SECRET = 'p"a\\ss/wörd +&x'


def spelled(value: str) -> dict[str, str]:
    once_ascii = json.dumps(value)[1:-1]
    once_utf8 = json.dumps(value, ensure_ascii=False)[1:-1]
    return {
        "raw": value,
        "json": once_ascii,
        "json utf-8": once_utf8,
        "json with \\/": once_utf8.replace("/", "\\/"),
        "json in json": json.dumps(once_ascii)[1:-1],
        "repr": repr(value)[1:-1],
        "quote": quote(value, safe=""),
        "quote with /": quote(value),
        "quote_plus": quote_plus(value),
        "lower-case hex": re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value)),
        "base64": base64.b64encode(value.encode()).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(value.encode()).decode().rstrip("="),
    }


@pytest.mark.parametrize(("form", "text"), list(spelled(SECRET).items()))
def test_every_spelling_is_redacted(form: str, text: str) -> None:
    redacted = Redactor([SECRET]).redact_text(f"before {text} after")
    assert redacted.startswith("before " + REDACTED)
    assert redacted.endswith(" after")
    assert "ss" not in redacted  # no piece of the value survives


def test_the_spellings_differ_so_each_case_tests_something() -> None:
    forms = spelled(SECRET)
    assert len(set(forms.values())) == len(forms)


def test_a_json_secret_is_redacted_whole_and_member_by_member() -> None:
    secret = json.dumps({"username": "svc", "password": 'p"w', "host": "db.internal", "port": "54"})
    redactor = Redactor([secret])
    basic = base64.b64encode(b'svc:p"w').decode()
    text = f'{{"pw": "p\\"w", "raw": p"w, "host": "db.internal", "auth": "Basic {basic}"}}'
    assert redactor.redact_text(text) == (
        '{"pw": "[redacted]", "raw": [redacted], "host": "[redacted]", "auth": "Basic [redacted]"}'
    )
    assert redactor.redact_text(secret) == REDACTED
    assert redactor.redact_text(json.dumps(secret)) == f'"{REDACTED}"'
    # short members under ordinary keys are left alone: they would shred text
    assert redactor.redact_text("user svc on port 54") == "user svc on port 54"


def test_secret_values_of_a_json_secret() -> None:
    secret = json.dumps(
        {"user": "admin", "pass": "pw", "nested": {"token": "t1", "x": ["long-one"]}}
    )
    assert secret_values(secret) == {secret, "admin", "pw", "t1", "long-one", "admin:pw"}
    assert secret_values("not {json") == {"not {json"}
    assert secret_values('{"broken": ') == {'{"broken": '}


def test_overlapping_values_leave_no_piece() -> None:
    redactor = Redactor(["pass", "password", "abcdef", "defghi"])
    assert redactor.redact_text("my password!") == f"my {REDACTED}!"
    assert redactor.redact_text("x abcdefghi y") == f"x {REDACTED} y"
    assert redactor.redact_text("pass, abcdef and defghi") == (
        f"{REDACTED}, {REDACTED} and {REDACTED}"
    )


def test_nested_values_are_walked_keys_included() -> None:
    value: Any = {
        "k": ["x tok3n y", {"tok3n": ("tok3n", 1)}],
        "n": 3,
        "f": 1.5,
        "b": True,
        "z": None,
    }
    assert Redactor(["tok3n"]).redact(value) == {
        "k": [f"x {REDACTED} y", {REDACTED: (REDACTED, 1)}],
        "n": 3,
        "f": 1.5,
        "b": True,
        "z": None,
    }


def test_an_empty_redactor_changes_nothing() -> None:
    redactor = Redactor(["", ""])
    value = {"a": ["b"]}
    assert not redactor and redactor.pattern is None
    assert redactor.redact(value) is value
    assert redactor.redact_text("text") == "text"


class _CountingPattern:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls = 0

    def search(self, *args: Any) -> re.Match[str] | None:
        self.calls += 1
        return self.pattern.search(*args)

    def match(self, *args: Any) -> re.Match[str] | None:
        self.calls += 1
        return self.pattern.match(*args)


def test_a_megabyte_without_secrets_costs_one_search(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor([SECRET, json.dumps({"password": "hunter2-long", "user": "svc"})])
    assert redactor.pattern is not None
    counting = _CountingPattern(redactor.pattern)
    monkeypatch.setattr(redactor, "pattern", counting)
    text = "The quick brown fox jumps over the lazy dog; p, w, 0123456789.\n" * 16_384
    assert len(text) > 1_000_000
    started = time.perf_counter()
    assert redactor.redact_text(text) is text
    elapsed = time.perf_counter() - started
    assert counting.calls == 1
    assert elapsed < 2.0  # one C-level scan; generous for a loaded machine


def test_a_text_with_secrets_costs_a_search_per_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    redactor = Redactor(["needle"])
    assert redactor.pattern is not None
    counting = _CountingPattern(redactor.pattern)
    monkeypatch.setattr(redactor, "pattern", counting)
    text = ("hay " * 10_000 + "needle ") * 3
    assert redactor.redact_text(text).count(REDACTED) == 3
    # one search per hit and one that finds nothing more, plus a match per inner character
    assert counting.calls == 1 + 3 + 3 * (len("needle") - 1)


def test_redactors_are_compiled_once_per_set_of_values() -> None:
    one = redactor_for(["alpha-1", "beta-22"])
    assert redactor_for(["beta-22", "alpha-1", ""]) is one
    assert one.including(["alpha-1"]) is one
    wider = one.including(["gamma-333"])
    assert wider is redactor_for(["alpha-1", "beta-22", "gamma-333"])
    assert wider.redact_text("alpha-1 gamma-333") == f"{REDACTED} {REDACTED}"


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, io.StringIO, list[logging.LogRecord]]]:
    """A logger whose handler carries the filter, formats into a buffer and keeps records."""
    stream = io.StringIO()
    records: list[logging.LogRecord] = []

    class Keeping(logging.StreamHandler[io.StringIO]):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)
            super().emit(record)

    handler = Keeping(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(Redactor([SECRET])))
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, stream, records
    finally:
        logger.removeHandler(handler)


def _absent(text: str) -> None:
    for form in spelled(SECRET).values():
        assert form not in text


def test_the_logging_filter_redacts_message_args_extras_and_tracebacks(
    logged: tuple[logging.Logger, io.StringIO, list[logging.LogRecord]],
) -> None:
    logger, stream, records = logged
    logger.warning("sent %s and %r", SECRET, {"key": SECRET}, extra={"header": SECRET})
    logger.info({"structured": SECRET})
    logger.info("nothing %s here", "secret-free")
    try:
        raise ValueError(f"server said {json.dumps(SECRET)}")
    except ValueError:
        logger.exception("failed")
    output = stream.getvalue()
    _absent(output)
    _absent(repr([vars(r) for r in records]))
    assert f"WARNING sent {REDACTED} and {{'key': '{REDACTED}'}}" in output
    assert records[0].header == REDACTED  # type: ignore[attr-defined]
    assert records[1].msg == {"structured": REDACTED}
    assert (records[2].msg, records[2].args) == ("nothing %s here", ("secret-free",))
    assert "ValueError: server said" in output and REDACTED in output


def test_the_logging_filter_follows_a_changing_redactor() -> None:
    current = [Redactor()]
    record = logging.makeLogRecord({"msg": "key %s", "args": ("later-secret",)})
    RedactingFilter(lambda: current[0]).filter(record)
    assert record.getMessage() == "key later-secret"
    current[0] = Redactor(["later-secret"])
    RedactingFilter(lambda: current[0]).filter(record)
    assert record.getMessage() == f"key {REDACTED}"


def test_a_short_secret_is_redacted_only_where_it_stands_alone() -> None:
    """A dummy local secret `x` must not turn every `x` of a stored conversation into the
    marker; where it stands alone (a header value, a JSON string, a word) it is still hidden."""
    redactor = Redactor(["x"])
    text = 'the example box: x, {"key": "x"} and x'
    assert redactor.redact_text(text) == (
        f'the example box: {REDACTED}, {{"key": "{REDACTED}"}} and {REDACTED}'
    )
    assert redactor.redact_text("max xx x1 _x") == "max xx x1 _x"


def test_a_short_credential_member_is_hidden_alone_and_longer_values_everywhere() -> None:
    secret = json.dumps({"username": "admin", "password": "p1"})
    redactor = Redactor([secret])
    assert redactor.redact_text("password=p1; user=admin") == (
        f"password={REDACTED}; user={REDACTED}"
    )
    assert redactor.redact_text("step1p1 and v2p1x stay") == "step1p1 and v2p1x stay"
    assert redactor.redact_text("superadministrator") == f"super{REDACTED}istrator"
    assert redactor.redact_text(base64.b64encode(b"admin:p1").decode()) == REDACTED
