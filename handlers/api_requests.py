"""The API's requests and answers, apart from routing: who is calling, what a body may be,
and which HTTP status and body answer an error. Standard library only at import (the
handler's cold start), Powertools and runtime errors are imported when first needed.

A caller's mistake is a 4xx naming the field; a body too large (413), not JSON, nested
deeper than MAX_JSON_DEPTH, or holding what cannot be stored (400) is refused before any
work; anything unexpected is a 500 with a generic message.
"""

import json
import sys
from typing import Any

IDEMPOTENCY_HEADER = "Idempotency-Key"
MAX_BODY_BYTES = 1024 * 1024  # a run's input lives in DynamoDB and S3; 1 MB is plenty
MAX_JSON_DEPTH = 64
_HEADERS = {IDEMPOTENCY_HEADER.lower(): IDEMPOTENCY_HEADER}  # Powertools lowercases them

Answer = tuple[int, dict[str, Any]]


def caller_of(event: Any) -> str:
    """Who made the request, as API Gateway established it: the IAM principal that signed it
    (`deployment.api_auth: iam`), or an authorizer's principal / claims. Recorded with every
    decision, reply and cancel, and scopes Idempotency-Keys. "anonymous@IP" when the API is
    open (`api_auth: none`): still worth recording."""
    context = event.get("requestContext") or {}
    identity = context.get("identity") or {}
    authorizer = context.get("authorizer") or {}
    claims = authorizer.get("claims") or {}
    for found in (
        identity.get("userArn"),
        claims.get("cognito:username") and f"cognito:{claims['cognito:username']}",
        claims.get("sub") and f"sub:{claims['sub']}",
        authorizer.get("principalId"),
        identity.get("caller"),
        identity.get("cognitoIdentityId"),
    ):
        if found:
            return str(found)
    return f"anonymous@{identity.get('sourceIp') or 'unknown'}"


def error_answer(exc: Exception, request_id: str = "", binary: bool = False) -> Answer:
    """(HTTP status, error body) for an exception raised while answering a request (`binary`:
    the request's body came base64-encoded, so it may not be text)."""
    from aws_lambda_powertools.event_handler.exceptions import NotFoundError, ServiceError
    from aws_lambda_powertools.event_handler.openapi.exceptions import (
        RequestUnsupportedContentType,
        RequestValidationError,
    )

    from runtime.errors import InvalidRequest, RunNotFound, StateConflict, WrongState

    def answer(code: int, error: str, message: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        body = {"error_code": error, "error_message": message}
        return code, body | {k: v for k, v in extra.items() if v}

    if isinstance(exc, RequestUnsupportedContentType):
        return answer(415, "UNSUPPORTED_MEDIA_TYPE", "send the body as application/json")
    if isinstance(exc, RequestValidationError):
        field, message = validation_error(exc.errors())
        return answer(400, "INVALID_REQUEST", message, field=field)
    if isinstance(exc, UnicodeDecodeError) and binary:
        return answer(400, "INVALID_REQUEST", "body: not UTF-8 text", field="body")
    if isinstance(exc, NotFoundError):
        return answer(404, "NOT_FOUND", "no such route")
    if isinstance(exc, ServiceError) and exc.status_code < 500:
        return answer(exc.status_code, "INVALID_REQUEST", str(exc.msg))
    # Only raised once start_run has loaded them: no import (and boto3) for every error.
    idempotency = sys.modules.get("aws_lambda_powertools.utilities.idempotency.exceptions")
    if idempotency and isinstance(exc, idempotency.IdempotencyValidationError):
        message = f"this {IDEMPOTENCY_HEADER} was used for a different request"
        return answer(422, "IDEMPOTENCY_KEY_REUSED", message, field=IDEMPOTENCY_HEADER)
    if idempotency and isinstance(exc, idempotency.IdempotencyAlreadyInProgressError):
        message = f"a request with this {IDEMPOTENCY_HEADER} is still running; retry"
        return answer(409, "IDEMPOTENCY_KEY_IN_USE", message, field=IDEMPOTENCY_HEADER)
    if isinstance(exc, RunNotFound):
        return answer(404, exc.error_code, str(exc), field="run_id")
    if isinstance(exc, InvalidRequest):
        if exc.not_found:
            return answer(404, "NOT_FOUND", str(exc), field=exc.field)
        return answer(400, exc.error_code, str(exc), field=exc.field)
    if isinstance(exc, WrongState):
        return answer(409, exc.error_code, str(exc), status=exc.status)
    if isinstance(exc, StateConflict):
        return answer(409, exc.error_code, "the run changed during this request; retry")
    return answer(500, "INTERNAL", f"internal error (request {request_id or 'unknown'})")


def validation_error(errors: Any) -> tuple[str, str]:
    """(field, message) for the first failing part: the field as the request spells it."""
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return "body", f"body: not valid JSON ({(first.get('ctx') or {}).get('error')})"
    loc = [str(part) for part in first.get("loc", ("body",))]
    field = ".".join(loc[1:]) or loc[0]
    field = _HEADERS.get(field, field)
    return field, f"{field}: {first.get('msg') or 'is not valid'}"


def json_body(text: str) -> Any:
    """json.loads that refuses what cannot be stored: NaN/Infinity, lone surrogates, and
    nesting deeper than MAX_JSON_DEPTH (which would exhaust the parser's recursion)."""

    def no_constants(name: str) -> Any:
        raise json.JSONDecodeError(f"{name} is not allowed", text, 0)

    try:
        value = json.loads(text, parse_constant=no_constants)
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {MAX_JSON_DEPTH} levels", text, 0) from None
    if depth(value) > MAX_JSON_DEPTH:
        raise json.JSONDecodeError(f"nested deeper than {MAX_JSON_DEPTH} levels", text, 0)
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise json.JSONDecodeError("strings must be valid Unicode", text, 0) from None
    return value


def depth(value: Any) -> int:
    """How deeply `value` nests (iteratively: a deep value must not recurse here either)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                break
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def too_large(event: dict[str, Any]) -> bool:
    body = event.get("body") or ""
    size = len(body) * 3 // 4 if event.get("isBase64Encoded") else len(body.encode())
    return size > MAX_BODY_BYTES


def unsupported_media(event: dict[str, Any]) -> dict[str, Any] | None:
    """415 for a body not sent as JSON; None when the request is fine. Powertools parses a
    body with no Content-Type as JSON and a form's as a form (`curl -d` without a
    content-type header got `input: Field required`): a body must say `application/json`,
    which a web page can only send after a CORS preflight."""
    if event.get("httpMethod") not in {"POST", "PUT", "PATCH", "DELETE"} or not event.get("body"):
        return None
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    kind = headers.get("content-type")
    if kind is not None and kind.split(";", 1)[0].strip().lower() == "application/json":
        return None
    said = f"Content-Type {kind!r}" if kind else "no Content-Type"
    message = f"send the body as JSON with Content-Type: application/json (got {said})"
    return _refusal(415, "UNSUPPORTED_MEDIA_TYPE", message, "Content-Type")


def too_large_answer() -> dict[str, Any]:
    """The proxy response for a body over MAX_BODY_BYTES (no parsing was attempted)."""
    message = f"the request body must be at most {MAX_BODY_BYTES} bytes"
    return _refusal(413, "PAYLOAD_TOO_LARGE", message, "body")


def _refusal(status: int, code: str, message: str, field: str) -> dict[str, Any]:
    """A proxy response refusing the request before it is parsed, naming the field."""
    body = {"error_code": code, "error_message": message, "field": field}
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def openapi_document(app: Any) -> str:
    """The OpenAPI document, less Powertools' 422 validation answers (they are 400s here)."""
    document = json.loads(app.get_openapi_json_schema(title="agentfn", version="1"))
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") != "StartRun":
                operation.get("responses", {}).pop("422", None)
            for parameter in operation.get("parameters", []):
                parameter["name"] = _HEADERS.get(parameter["name"], parameter["name"])
    for unused in ("HTTPValidationError", "ValidationError"):  # only those 422s used them
        document.get("components", {}).get("schemas", {}).pop(unused, None)
    return json.dumps(document, separators=(",", ":"))


IDEMPOTENCY_TTL_SECONDS = 24 * 3600


def idempotent(layer: Any, start: Any, serializer: Any, key_prefix: str) -> tuple[Any, Any]:
    """(config, Powertools' idempotent_function around `start`): keyed by the payload's
    `key` ([caller, Idempotency-Key]); its `request` is what a retry must repeat (else 422);
    `serializer` stores the first answer's ids and rebuilds the answer from them."""
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

    config = IdempotencyConfig(
        event_key_jmespath="key",
        payload_validation_jmespath="request",
        expires_after_seconds=IDEMPOTENCY_TTL_SECONDS,
    )
    wrapped = idempotent_function(
        start,
        data_keyword_argument="request",
        persistence_store=layer,
        config=config,
        output_serializer=serializer,
        key_prefix=key_prefix,
    )
    return config, wrapped


def time_left(ctx: Any) -> float | None:
    """Seconds this invocation has left (None outside Lambda): bounds an inline advance."""
    if hasattr(ctx, "get_remaining_time_in_millis"):
        return float(ctx.get_remaining_time_in_millis()) / 1000
    return None
