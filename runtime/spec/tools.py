"""Tool and MCP server configurations.

Every tool states its `effect`, because crash recovery depends on it: a `read_only` call
may run concurrently and be repeated freely, an `idempotent` one may be repeated with the
same idempotency key, and an `at_most_once` one whose outcome is unknown after a crash is
reported as such instead of being run again. The default is the safe one, `at_most_once`.
"""

import re
from typing import Annotated, Any, Literal, Self

from pydantic import Field, HttpUrl, field_validator, model_validator

from runtime.spec.methods import HttpToolMethods, McpMethods
from runtime.spec.models import SpecModel
from runtime.spec.shared import PYTHON_HANDLER_RE, URL_PARAM_RE, Effect
from runtime.spec.types import Duration, SecretRef


class _ToolBase(SpecModel):
    description: str = Field(min_length=1, description="What the model reads to decide to call it.")
    effect: Effect = "at_most_once"
    input_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema of the arguments (type: object)."
    )
    timeout: Duration | None = Field(None, description="Overrides defaults.tool_timeout.")
    max_chars: int | None = Field(
        None, ge=100, description="Characters of output put in context; the rest is cached."
    )
    cache_reuse: bool = Field(
        False,
        description=(
            "read_only tools: answer a call identical to an earlier successful one of the "
            "same session from the tool-output cache instead of calling again."
        ),
    )
    return_direct: bool = Field(
        False,
        description="Its output is the run's final answer, without another model call.",
    )
    on_failure: Literal["continue", "fail_run"] | None = Field(
        None,
        description="`fail_run`: its failure ends the run (TOOL_FAILED) after "
        "max_consecutive_failures in a row; `continue`: the model is told. Default: the "
        "agent's tool_failures.",
    )
    max_consecutive_failures: int | None = Field(
        None, ge=1, le=100, description="Failures in a row that end the run (fail_run; 1)."
    )


class HttpTool(HttpToolMethods, _ToolBase):
    """An HTTP endpoint. `{param}` placeholders in `url` are filled from the arguments; the
    remaining arguments go to the query string (`args_in: query`) or a JSON body (`body`)."""

    type: Literal["http"]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
    url: str = Field(min_length=1, examples=["https://crm.example.com/accounts/{customer_id}"])
    headers: dict[str, str] = Field(default_factory=dict)
    args_in: Literal["query", "body"] | None = Field(
        None, description="Default: query for GET/HEAD/DELETE, body otherwise."
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Hosts or CIDRs exempt from the SSRF guard (e.g. 127.0.0.1 for a local test).",
    )

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, url: str) -> str:
        probe = URL_PARAM_RE.sub("x", url)
        if not re.match(r"^https?://[^/{}]+", probe):
            raise ValueError(f"url must be an absolute http(s) URL, got {url!r}")
        # Arguments come from the model: in the host part they would choose the server
        # (`https://{host}/x`, or `https://api.example.com{path}` → `…com.evil.net/`).
        authority = re.split(r"[/?#]", url.split("://", 1)[1], maxsplit=1)[0]
        if "{" in authority or "}" in authority:
            raise ValueError(
                f"url {url!r} has a placeholder in its host part; placeholders may fill "
                "only the path (after the first '/' that follows the host) or the query"
            )
        return url


class PythonTool(_ToolBase):
    """A sync or async callable inside the project's tools package: `tools.module:function`."""

    type: Literal["python"]
    handler: str = Field(pattern=PYTHON_HANDLER_RE.pattern, examples=["tools.billing:refund"])


class LambdaTool(_ToolBase):
    """A Lambda function invoked synchronously with {tool, arguments, idempotency_key, run_id}."""

    type: Literal["lambda"]
    function_arn: str = Field(
        pattern=r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?$",
        examples=["arn:aws:lambda:us-east-1:123456789012:function:charge"],
    )


ToolConfig = Annotated[HttpTool | PythonTool | LambdaTool, Field(discriminator="type")]


class _McpBase(McpMethods, SpecModel):
    enabled: bool = True
    required: bool = Field(
        False,
        description=(
            "A server that cannot be started, reached or listed fails the run "
            "(MCP_UNAVAILABLE). Off: the run goes on without its tools, with a warning."
        ),
    )
    timeout: Duration | None = Field(
        None,
        description=(
            "Connect, list and call timeout. Unset: 30s to connect and list, and each call is "
            "bounded by the agent's tool_timeout."
        ),
    )
    cache_ttl: Duration = Field(300.0, description="How long a warm container reuses tools/list.")
    effect: Effect = Field(
        "at_most_once", description="Effect of tools without a readOnlyHint annotation."
    )
    cache_reuse: bool = Field(
        False, description="Answer identical calls of read-only tools from the session cache."
    )


class StdioMcpServer(_McpBase):
    transport: Literal["stdio"]
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


class McpOAuth(SpecModel):
    """OAuth 2 client credentials (machine to machine): a bearer token from `token_url`, kept
    per warm container until it expires or the server answers 401. Interactive (browser)
    flows have no place in a serverless agent and are not supported."""

    token_url: HttpUrl = Field(description="The token endpoint (https; http only on loopback).")
    client_id: str = Field(min_length=1)
    client_secret: SecretRef
    scopes: list[str] = Field(default_factory=list)
    auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    resource: str | None = Field(
        None, description="RFC 8707 resource sent with the token request; default: the url."
    )

    @field_validator("token_url")
    @classmethod
    def _private_channel(cls, url: HttpUrl) -> HttpUrl:
        if url.scheme != "https" and url.host not in _LOOPBACK_HOSTS:
            raise ValueError("token_url must use https (http is accepted only on loopback)")
        return url


class HttpMcpServer(_McpBase):
    """Streamable HTTP transport."""

    transport: Literal["http"]
    url: HttpUrl
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: McpOAuth | None = Field(None, description="OAuth 2 client credentials.")

    @model_validator(mode="after")
    def _one_authorization(self) -> Self:
        if self.oauth is not None and any(h.lower() == "authorization" for h in self.headers):
            raise ValueError("set either oauth or an Authorization header, not both")
        return self


McpServerConfig = Annotated[StdioMcpServer | HttpMcpServer, Field(discriminator="transport")]

#: Built-in tools an agent may list as `builtin:NAME`. `agent_clarify` is always offered;
#: the session cache tools are offered automatically when a run has a session.
BUILTIN_TOOLS = (
    "agent_clarify",
    "get_time_date",
    "list_tools_available",
    "session_cache_list",
    "session_cache_get",
    "http_request",
    "storage_read",
    "storage_write",
    "database_query",
    "database_write",
    "knowledge_search",
    "web_search",
    "web_scrape",
    "code_execute",
)


class ToolFailures(SpecModel):
    """What a failed tool call does, for an agent's tools that do not say."""

    on_failure: Literal["continue", "fail_run"] = Field(
        "continue", description="`fail_run`: end the run with TOOL_FAILED and the tool's error."
    )
    max_consecutive_failures: int = Field(1, ge=1, le=100)
