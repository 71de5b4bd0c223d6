"""moto's DynamoDB answers without the work it repeats for every request (local only: the
embedded AWS and `agentfn dev`): a model walk per attribute, and Flask.

**Serialising.** moto 5 writes every response through a generic serializer that walks
botocore's output shape: for each member of each structure it builds a context and tries a
handful of key spellings on the value (`AttributePicker`). A DynamoDB item is a map of
`AttributeValue` structures with ten members each, of which one is set, so every attribute
of every item cost ten such look-ups; with 50 team runs at once on `agentfn dev` that was
a quarter of the server's CPU, inside the lock DynamoDB requests take one at a time
(infra.local.dev_concurrency), so every other request waited for it too.

Here an `AttributeValue` holding a string, a number, a set of either, a map or a list is
written directly, exactly as the generic walk writes it (a map's and a list's elements go
through the same path, one by one); any other value (binary, booleans, NULL, anything
unexpected) goes through moto's own walk. tests/infra/local/test_local_dynamodb_answers.py
compares both on generated items. `install()` is idempotent and lasts for the process.

**Reading.** botocore reads every answer by the same kind of walk, on the client side (in
this process: the stack's functions, the API, the Step Functions interpreter): for each
`AttributeValue`, its ten members looked up one by one. `install()` gives botocore's JSON
parser the same direct path for the same kinds (strings, numbers, their sets, maps,
lists), and leaves the rest to botocore; the test compares both on generated items too.

**Dispatching.** moto's server hands every request to a Flask app (request context,
URL routing over the service's rules, CORS) that calls the service's `dispatch` with a
normalised request and turns its (status, headers, body) into a response. `direct(app)`
does that itself for DynamoDB's one route (`POST /` with a `DynamoDB_*` target): the same
request class, the same call, the same werkzeug response; everything else goes to `app`.
It sits under the request log (infra.local.local_state), so what is logged and replayed
is unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: The botocore shape written here, and the kinds of value written directly.
ATTRIBUTE_VALUE = "AttributeValue"
_TEXT = frozenset({"S", "N"})
_TEXT_SETS = frozenset({"SS", "NS"})
_NESTED = frozenset({"M", "L"})

_installed = False
_lock = threading.Lock()
#: moto's own JSONSerializer._serialize and botocore's BaseJSONParser._handle_structure,
#: once install() has replaced them (for comparisons).
generic_serialize: Any = None
generic_parse: Any = None


def install() -> None:
    """Give moto's JSON serializer the direct path for AttributeValue (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from moto.core.serialize import JSONSerializer

        global generic_serialize
        generic = generic_serialize = JSONSerializer._serialize

        def _serialize(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
            if (
                shape.name != ATTRIBUTE_VALUE
                or not key
                or not write(self, serialized, value, shape, key)
            ):
                generic(self, serialized, value, shape, key)

        JSONSerializer._serialize = _serialize  # type: ignore[method-assign]
        _install_reading()
        _installed = True


def _install_reading() -> None:
    """botocore's JSON parser with the direct path for AttributeValue (lock held)."""
    global generic_parse
    from botocore.parsers import BaseJSONParser

    generic = generic_parse = BaseJSONParser._handle_structure

    def _handle_structure(self: Any, shape: Any, value: Any) -> Any:
        if shape.name == ATTRIBUTE_VALUE:
            found = read(self, shape, value)
            if found is not None:
                return found
        return generic(self, shape, value)

    BaseJSONParser._handle_structure = _handle_structure


def read(parser: Any, shape: Any, value: Any) -> dict[str, Any] | None:
    """AttributeValue `value` as botocore's walk reads it; None when it is not one of the
    kinds read here."""
    if type(value) is not dict or len(value) != 1:
        return None
    ((kind, inner),) = value.items()
    if kind in _TEXT:
        return {kind: inner} if type(inner) is str else None
    if kind in _TEXT_SETS:
        if type(inner) is not list or not all(type(item) is str for item in inner):
            return None
        return {kind: list(inner)}
    if kind == "M" and type(inner) is dict:
        return {kind: parser._handle_map(shape.members[kind], inner)}
    if kind == "L" and type(inner) is list:
        return {kind: parser._handle_list(shape.members[kind], inner)}
    return None


def write(serializer: Any, serialized: dict[str, Any], value: Any, shape: Any, key: str) -> bool:
    """Write AttributeValue `value` under `key` as moto's walk would; False (nothing
    written) when it is not one of the kinds written here."""
    if type(value) is not dict or len(value) != 1:
        return False
    ((kind, inner),) = value.items()
    if kind in _TEXT:
        if type(inner) is not str:
            return False
        serialized[key] = {kind: inner}
    elif kind in _TEXT_SETS:
        if type(inner) is not list or not all(type(item) is str for item in inner):
            return False
        serialized[key] = {kind: list(inner)}
    elif kind in _NESTED:
        if type(inner) is not (dict if kind == "M" else list):
            return False
        written: dict[str, Any] = {}
        serializer._serialize(written, inner, shape.members[kind], kind)  # each element: here
        serialized[key] = written
    else:
        return False
    return True


def direct(app: Wsgi) -> Wsgi:
    """moto's WSGI app, with DynamoDB requests dispatched without Flask (see above)."""
    from botocore.exceptions import ClientError
    from moto.core.request import Request, normalize_request
    from moto.dynamodb.responses import DynamoHandler
    from moto.moto_api import recorder
    from werkzeug.wrappers import Response

    class ServerRequest(Request):
        from_wsgi_server = True  # as moto's server's requests: no Date header added

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if (
            not target.startswith("DynamoDB_")
            or environ.get("REQUEST_METHOD") != "POST"
            or environ.get("PATH_INFO") != "/"
        ):
            return app(environ, start_response)
        request = normalize_request(ServerRequest(environ))
        recorder._record_request(request)
        try:  # what moto's convert_to_flask_response does around the call
            status, headers, body = DynamoHandler.dispatch(
                request, request.raw_url, dict(request.headers)
            )
        except ClientError as exc:
            status, headers, body = 400, {}, exc.response["Error"]["Message"]
        response = Response(response=body, status=status, headers=headers)
        return response(environ, start_response)

    return serve
