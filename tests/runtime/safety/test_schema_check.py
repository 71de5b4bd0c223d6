"""runtime.safety.schema_check refuses schemas it cannot use safely, and says why, instead of
fetching what they point at or crashing the caller."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.safety.schema_check import SchemaViolation, check


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    _Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "ref",
    ["{host}/x", "{host}/a#/definitions/b", "file:///etc/passwd", "data:,{{}}", "other.json"],
)
def test_references_outside_the_schema_are_refused_never_fetched(loopback: str, ref: str) -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": ref.format(host=loopback)}}}
    with pytest.raises(SchemaViolation, match="points outside this schema"):
        check(schema, {"x": "1"})
    assert _Recorder.requests == []


def test_the_compiler_itself_refuses_to_fetch(loopback: str) -> None:
    """Even a reference the static check did not see (it is the compiler that resolves)
    is refused by the resolver agentfn compiles with."""
    from runtime.safety import schema_check

    with pytest.raises(Exception, match="agentfn never fetches schemas"):
        schema_check._compile({"$ref": f"{loopback}/x"})
    assert _Recorder.requests == []


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"$ref": "#"}, "leads back to itself"),
        (
            {
                "definitions": {"a": {"anyOf": [{"$ref": "#/definitions/a"}]}},
                "$ref": "#/definitions/a",
            },
            "leads back to itself",
        ),
        ({"$ref": "#/definitions/missing"}, "points to nothing"),
        ({"type": "string", "pattern": "(x+x+)+y"}, "can backtrack catastrophically"),
        ({"patternProperties": {"^(a|a)*$": {}}}, "can backtrack catastrophically"),
        ({"type": "string", "pattern": "(abc"}, "not a valid regular expression"),
        ({"type": "integer", "minimum": "zero"}, "does not compile"),
    ],
)
def test_unusable_schemas_raise_a_violation_saying_why(schema: dict[str, Any], reason: str) -> None:
    with pytest.raises(SchemaViolation, match="the schema cannot be used") as raised:
        check(schema, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!")
    assert reason in str(raised.value)


def test_recursion_through_items_is_fine_and_too_deep_data_is_a_violation() -> None:
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    check(tree, {"children": [{"children": []}]})
    deep: dict[str, Any] = {"children": []}
    for _ in range(5000):
        deep = {"children": [deep]}
    with pytest.raises(SchemaViolation, match="nested too deeply"):
        check(tree, deep)
