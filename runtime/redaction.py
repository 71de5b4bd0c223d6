"""Redact secret values from anything that leaves the process: model-visible text, events,
stored results and logs.

A secret rarely travels in its raw spelling. A server echoing a header back JSON-encodes it
(`p"w` becomes `p\\"w`, `é` may become `\\u00e9`), a URL percent-encodes it, a Basic auth
header base64-encodes `user:password`, a log line shows it through `repr`. Replacing only the
raw value after any of these steps lets the escaped form through, so a `Redactor` knows every
spelling of every value it was given and replaces each, wherever it appears.

A secret stored as a JSON object (a Secrets Manager key/value secret) is used piecewise as
often as whole, so each of its string members is a value of its own; members shorter than
`MIN_MEMBER_CHARS` (a port, a region code) are left alone so redaction does not shred
ordinary text, unless their key names a credential (`password`, `token`, ...).

A value shorter than `MIN_MEMBER_CHARS` (a dummy local secret `x`, a two-character
password) is replaced only where it stands alone, not inside a word or a number: replacing
every `x` would corrupt every stored message and tool result while hiding nothing a guess
would not find.

Cost: each set of values is compiled once into one alternation (longest spelling first, so
a value cannot leave a piece of a longer one that contains it); a text holding no secret
costs one regex search, and `redactor_for` shares the compiled Redactor between callers.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
#: Members of a JSON object secret shorter than this are not redacted on their own.
MIN_MEMBER_CHARS = 4
#: Members of a JSON secret whose values pair up as `user:password` in a Basic auth header.
_USER_KEYS = frozenset({"username", "user", "user_name", "login", "client_id", "clientid"})
_PASSWORD_KEYS = frozenset({"password", "pass", "passwd", "secret", "client_secret"})
#: Keys whose values are secret at any length (`"password": "p1"`).
_CREDENTIAL_KEY = re.compile(r"pass|secret|token|key|auth|credential|private", re.I)
_UPPER_PERCENT = re.compile(r"%[0-9A-F]{2}")
#: Around a short value's spelling: no letter, digit or underscore on either side.
_ALONE_BEFORE, _ALONE_AFTER = r"(?<![0-9A-Za-z_])", r"(?![0-9A-Za-z_])"


def _json_spellings(text: str) -> set[str]:
    """Inside a JSON string: ASCII-only and UTF-8 escaping, with and without `\\/` for `/`."""
    out = {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
    return out | {s.replace("/", "\\/") for s in out}


def _base64(text: str) -> set[str]:
    """Standard and URL-safe base64, padded (whole) and unpadded (JWT style)."""
    raw = text.encode("utf-8")
    padded = {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    return padded | {s.rstrip("=") for s in padded}


def spellings(value: str) -> set[str]:
    """Every form of `value` worth looking for: raw; JSON-escaped (once, and twice for JSON
    held in a JSON string); as `repr` shows it; percent-encoded (quote, quote_plus, either
    hex case); base64 (a token or `user:password` sent as Basic auth)."""
    if not value:
        return set()
    found = {value, repr(value)[1:-1]}
    once = _json_spellings(value)
    found |= once
    for escaped in once:
        found |= _json_spellings(escaped)
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value)):
        found |= {encoded, _UPPER_PERCENT.sub(lambda m: m.group(0).lower(), encoded)}
    if len(value) >= MIN_MEMBER_CHARS:
        found |= _base64(value)
    return {s for s in found if s}


def _members(value: Any, key: str = "") -> Iterator[str]:
    """The string members of a parsed JSON secret worth redacting on their own."""
    if isinstance(value, str):
        if len(value) >= MIN_MEMBER_CHARS or (value and _CREDENTIAL_KEY.search(key)):
            yield value
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _members(item, str(name))
    elif isinstance(value, list):
        for item in value:
            yield from _members(item, key)


def secret_values(secret: str) -> set[str]:
    """The values hidden in one secret: itself and, for a JSON object or array, its string
    members (any length under a key such as `password`, else `MIN_MEMBER_CHARS` or more),
    plus the `user:password` pairs a Basic auth header would carry."""
    values = {secret} if secret else set()
    if not secret.lstrip().startswith(("{", "[")):
        return values
    try:
        parsed = json.loads(secret)
    except ValueError:
        return values
    values |= set(_members(parsed))
    if isinstance(parsed, dict):
        lowered = {str(k).lower(): v for k, v in parsed.items() if isinstance(v, str) and v}
        users = [v for k, v in lowered.items() if k in _USER_KEYS]
        passwords = [v for k, v in lowered.items() if k in _PASSWORD_KEYS]
        values |= {f"{user}:{password}" for user in users for password in passwords}
    return values


class Redactor:
    """Replaces every spelling of the given secrets with `marker`, in text and in nested
    JSON-able values (dict keys and values, lists, tuples)."""

    def __init__(self, secrets: Iterable[str] = (), *, marker: str = REDACTED) -> None:
        self.secrets = frozenset(s for s in secrets if s)
        self.marker = marker
        forms: set[str] = set()
        alone: set[str] = set()  # the spellings of short values: matched standing alone
        for secret in self.secrets:
            for value in secret_values(secret):
                found = spellings(value)
                forms |= found
                if len(value) < MIN_MEMBER_CHARS:
                    alone |= found
        #: Longest first: the alternation takes the first branch that matches at a position.
        self.forms = tuple(sorted(forms, key=lambda s: (-len(s), s)))
        branches = (
            f"{_ALONE_BEFORE}{re.escape(f)}{_ALONE_AFTER}" if f in alone else re.escape(f)
            for f in self.forms
        )
        self.pattern: re.Pattern[str] | None = (
            re.compile("|".join(branches)) if self.forms else None
        )

    def __bool__(self) -> bool:
        return self.pattern is not None

    def including(self, secrets: Iterable[str]) -> Redactor:
        """A Redactor over these secrets and the new ones (shared, compiled once)."""
        extra = {s for s in secrets if s} - self.secrets
        return redactor_for(self.secrets | extra, self.marker) if extra else self

    def redact_text(self, text: str) -> str:
        """`text` with every spelling replaced; the same object when there is none."""
        if self.pattern is None:
            return text
        match = self.pattern.search(text)
        if match is None:
            return text
        pieces: list[str] = []
        done = 0
        while match is not None:
            start, end = match.span()
            # A value starting inside this match may run past its end (two secrets that
            # overlap, `abcd` and `cdef` in `abcdef`): widen until nothing does.
            inner = start + 1
            while inner < end:
                longer = self.pattern.match(text, inner)
                if longer is not None and longer.end() > end:
                    end = longer.end()
                inner += 1
            pieces += [text[done:start], self.marker]
            done = end
            match = self.pattern.search(text, end)
        pieces.append(text[done:])
        return "".join(pieces)

    def redact(self, value: Any) -> Any:
        """`value` with every string in it redacted (dict keys too); other leaves unchanged."""
        if self.pattern is None:
            return value
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {self.redact(k): self.redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.redact(v) for v in value)
        return value


@functools.lru_cache(maxsize=128)
def _shared(secrets: frozenset[str], marker: str) -> Redactor:
    return Redactor(secrets, marker=marker)


def redactor_for(secrets: Iterable[str], marker: str = REDACTED) -> Redactor:
    """The Redactor for this set of secrets, compiled once per distinct set and reused: a
    tool calling the same endpoint with the same key never recompiles."""
    return _shared(frozenset(s for s in secrets if s), marker)


#: Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from a record before any handler formats it:
    the message with its arguments merged in, the arguments themselves (for formatters that
    emit them), `extra=` fields, the formatted traceback and stack.

    Give it a Redactor, or a callable returning the current one (`resolver.redactor`) so
    secrets resolved after it was installed are covered too. Add it to handlers to cover
    every logger that propagates to them; a logger's own filters see only its own records.
    """

    def __init__(self, redactor: Redactor | Callable[[], Redactor]) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self._redactor if isinstance(self._redactor, Redactor) else self._redactor()
        if not redactor:
            return True
        if isinstance(record.msg, str):
            try:
                message = record.getMessage()
            except (TypeError, ValueError):  # bad arguments: logging reports them itself
                message = record.msg
            cleaned = redactor.redact_text(message)
            if cleaned is not message:  # merged, so no argument can bring the value back
                record.msg, record.args = cleaned, None
        else:  # a dict or other structured message (Powertools logs these as JSON)
            record.msg = redactor.redact(record.msg)
        if record.args:
            record.args = redactor.redact(record.args)
        for name, value in list(vars(record).items()):
            if name not in _STANDARD_ATTRIBUTES:
                setattr(record, name, redactor.redact(value))
        if record.exc_info and not record.exc_text:
            # Formatted here only when it holds a secret; otherwise the handler's own
            # formatter still formats it its way.
            trace = logging.Formatter().formatException(record.exc_info)
            if (cleaned := redactor.redact_text(trace)) is not trace:
                record.exc_text = cleaned
        elif record.exc_text:
            record.exc_text = redactor.redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redactor.redact_text(record.stack_info)
        return True
