"""The HTTP API's client for the terminal commands: requests (SigV4-signed with `--sigv4`),
answers checked into `ApiError`, and the `--edit` argument checked. Below the commands
(infra.cli.api_client, api_stream, api_workflow_start, local_runs), which all import it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import urlsplit

DEFAULT_URL = "http://127.0.0.1:8321"
EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
TERMINAL = {"succeeded", "failed", "cancelled"}


class ApiError(Exception):
    """The API answered with an error (its HTTP status), or could not be reached (None)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class UsageError(Exception):
    pass


class Client:
    def __init__(
        self, url: str, *, sigv4: bool = False, region: str | None = None, timeout: float = 60
    ):
        if urlsplit(url).scheme not in {"http", "https"} or not urlsplit(url).hostname:
            raise UsageError(f"--url must be an http(s) URL, not {url!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.signer: Any = None
        if sigv4:
            self.signer = _signer(self.url, region)

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, **query: Any
    ) -> tuple[int, dict[str, Any]]:
        import httpx

        params = {k: str(v) for k, v in query.items() if v is not None}
        url = str(httpx.URL(self.url + path, params=params or None))
        data = json.dumps(body).encode() if body is not None else b""
        headers = {"accept": "application/json"}
        if body is not None or method not in ("GET", "HEAD"):  # agentfn dev wants it (415)
            headers["content-type"] = "application/json"
        if self.signer is not None:
            headers = self.signer(method, url, data, headers)
        try:
            response = httpx.request(
                method,
                url,
                content=data or None,
                headers=headers,
                timeout=self.timeout,
                trust_env=not is_local(self.url),  # no proxy between us and loopback
            )
        except httpx.ConnectError as exc:
            local = is_local(self.url)
            hint = " (is `agentfn dev` running? or -f the spec `agentfn run` ran)" if local else ""
            raise ApiError(f"cannot reach {self.url}{hint}: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise ApiError(f"{method} {url}: no answer within {self.timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise ApiError(f"{method} {url}: {exc}") from exc
        return response.status_code, _checked(response, self.signer is not None)

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self.request("GET", path, **query)[1]

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return self.request("POST", path, body)


LONG_POLL_SECONDS = 20


def is_local(url: str) -> bool:
    return (urlsplit(url).hostname or "") in {"127.0.0.1", "localhost", "::1"}


def _checked(response: Any, signed: bool) -> dict[str, Any]:
    try:
        payload = response.json()
    except ValueError:
        payload = None
    status = response.status_code
    if status < 400:
        if not isinstance(payload, dict):
            raise ApiError(f"HTTP {status}: expected a JSON object, got: {response.text[:300]}")
        return payload
    if isinstance(payload, dict):
        code = payload.get("error_code") or payload.get("code") or "ERROR"
        message = payload.get("error_message") or payload.get("message") or ""
        extra = {
            k: v
            for k, v in payload.items()
            if k not in {"error_code", "error_message", "code", "message"}
        }
        detail = f"{code}: {message}" if message else str(code)
        if extra:
            detail += " " + json.dumps(extra, ensure_ascii=False, default=str)
    else:
        detail = response.text.strip()[:300] or response.reason_phrase
    hint = ""
    if status == 403 and not signed:
        hint = "\n(the API may use IAM auth: add --sigv4, with AWS credentials in the environment)"
    raise ApiError(f"HTTP {status} {detail}{hint}", status)


def _signer(url: str, region: str | None) -> Any:
    """SigV4 for an API Gateway stage (service execute-api)."""
    import botocore.session
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    session = botocore.session.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise UsageError("--sigv4 needs AWS credentials (environment, profile or role)")
    host = urlsplit(url).hostname or ""
    parts = host.split(".")
    guessed = parts[2] if len(parts) > 3 and parts[1] == "execute-api" else None
    region = region or guessed or session.get_config_variable("region")
    if not region:
        raise UsageError("--sigv4 needs a region: --region, AWS_REGION or an execute-api URL")
    frozen = credentials.get_frozen_credentials()

    def sign(method: str, target: str, data: bytes, headers: dict[str, str]) -> dict[str, str]:
        request = AWSRequest(method=method, url=target, data=data, headers=headers)
        SigV4Auth(frozen, "execute-api", region).add_auth(request)
        return dict(request.headers.items())

    return sign


def edited_inputs(args: argparse.Namespace) -> dict[str, Any] | None:
    """`--edit JSON` (the approver's inputs for the call), checked: None without --edit."""
    if args.edit is None:
        return None
    if args.deny:
        raise UsageError("--edit approves with changed inputs; it cannot go with --deny")
    try:
        edited = json.loads(args.edit)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--edit is not JSON: {exc}") from exc
    if not isinstance(edited, dict):
        raise UsageError("--edit must be a JSON object (the tool's inputs)")
    return edited
