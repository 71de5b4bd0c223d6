"""Hooks: automatic checks at fixed points of a run, declared at the top level (every
agent), in `defaults` (every agent) or per agent, and applied in that order.

| event             | can block                        | can modify            |
| ----------------- | -------------------------------- | --------------------- |
| `on_run_start`    | yes: the run fails (HOOK_DENIED) | no                    |
| `pre_tool_use`    | yes: the model reads the denial  | the arguments         |
| `post_tool_use`   | no                               | the result            |
| `pre_response`    | yes: a blocked message answers   | the final answer      |
| `on_run_complete` | no (fire and forget)             | no                    |

A `rule` hook is evaluated in process (no I/O); `http`, `python` and `lambda` hooks are
asked, with the same JSON payload, and answer `allow`, `deny` or `modify`
(runtime.engine.hook_kinds). What is checked here is the shape; cross-references (python
handlers inside the tools package, regexes safe to run) are checked by `agentfn validate`.
"""

import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from runtime.spec.models import SpecModel
from runtime.spec.shared import (
    BLOCKING_EVENTS,
    PYTHON_HANDLER_RE,
    SECRET_REF_RE,
    TOOL_EVENTS,
    HookEvent,
    compile_pattern,
)
from runtime.spec.types import Duration

RuleOp = Literal[
    "contains",
    "starts_with",
    "matches",
    "in",
    "equals",
    "not_contains",
    "not_starts_with",
    "not_matches",
    "not_in",
    "not_equals",
]
#: `order_id`, `order.id`, `items[0].sku`: keys separated by dots, list indexes in brackets.
ARG_PATH_PATTERN = r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+|\[[0-9]+\])*$"
LAMBDA_ARN_PATTERN = (
    r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?$"
)


class HookRule(SpecModel):
    """One condition on what the hook sees: the tool's arguments (`pre_tool_use`), the final
    answer (`pre_response`) or the caller's input (`on_run_start`). `then: deny` denies
    when the condition holds, `else: deny` when it does not. An
    `arg` that is not there is a failure of the hook (`on_error`)."""

    arg: str | None = Field(
        None,
        pattern=ARG_PATH_PATTERN,
        description="JSON path into the arguments or answer (`order.id`, `items[0].sku`); "
        "omitted: the whole value (as JSON text when it is not a string).",
    )
    op: RuleOp
    value: Any = Field(description="A list for `in`/`not_in`, a regex for `matches`.")
    then: Literal["deny"] | None = Field(None, description="Deny when the condition holds.")
    else_: Literal["deny"] | None = Field(
        None, alias="else", description="Deny when the condition does not hold."
    )
    reason: str | None = Field(None, description="What the denial says.")

    @field_validator("value")
    @classmethod
    def _value_fits_op(cls, value: Any, info: ValidationInfo) -> Any:
        op = str(info.data.get("op", "")).removeprefix("not_")
        if op == "in" and not isinstance(value, list):
            raise ValueError(f"`{info.data['op']}` needs a list of values")
        if op in {"starts_with", "matches"} and not isinstance(value, str):
            raise ValueError(f"`{info.data['op']}` needs a string")
        if op == "contains" and isinstance(value, dict | list):
            raise ValueError(f"`{info.data['op']}` needs a string, number or boolean")
        if op == "matches":
            try:
                compile_pattern(value)
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(f"{value!r} is not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_action(self) -> Self:
        if (self.then is None) == (self.else_ is None):
            raise ValueError(
                "a rule needs exactly one of `then: deny` (deny when the condition holds) "
                "and `else: deny` (deny when it does not)"
            )
        return self


def _selectors(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


_MATCH_SCHEMA = {
    "anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}},
    ],
    "description": "Tools the hook applies to, as approval rules name them (`refund`, "
    "`mcp:orders/*`, `builtin:http_request`; globs allowed); omitted: every tool.",
}
Selectors = Annotated[list[str], BeforeValidator(_selectors), WithJsonSchema(_MATCH_SCHEMA)]


class _HookBase(SpecModel):
    event: HookEvent
    match: Selectors | None = None

    @model_validator(mode="after")
    def _fits_event(self) -> Self:
        if self.match is not None and self.event not in TOOL_EVENTS:
            raise ValueError(
                f"`match` selects tools: it applies to pre_tool_use and post_tool_use hooks, "
                f"not to {self.event}"
            )
        return self


class RuleHook(_HookBase):
    """Conditions evaluated in process; the first rule that denies wins.

    A rule fails only when what it tests is not there (its `arg` is absent from the
    arguments or answer). Unlike an asked hook, which fails for reasons outside the spec
    (a network, a server), that is the policy not seeing its field, so a rule fails closed
    unless it says `on_error: allow` (e.g. for an optional argument)."""

    type: Literal["rule"]
    rules: list[HookRule] = Field(min_length=1)
    on_error: Literal["allow", "deny"] = Field(
        "deny",
        description="When a rule cannot be evaluated (its `arg` is not there): deny (the "
        "default: fail closed) or allow (fail open; the failure is still recorded).",
    )

    @model_validator(mode="after")
    def _rules_can_block(self) -> Self:
        if self.event not in BLOCKING_EVENTS:
            raise ValueError(
                f"a rule hook can only deny, and {self.event} hooks cannot block: use it on "
                "on_run_start, pre_tool_use or pre_response"
            )
        if self.event == "on_run_start" and any(r.arg is not None for r in self.rules):
            raise ValueError("on_run_start rules test the caller's input text: leave out `arg`")
        return self


class _AskedHook(_HookBase):
    timeout: Duration = Field(5.0, le=900, description="How long the hook may take (5s).")
    on_error: Literal["allow", "deny"] = Field(
        "allow",
        description="When the hook fails or answers something unusable: allow (fail open, "
        "the default) or deny (fail closed; blocking events only).",
    )

    @model_validator(mode="after")
    def _deny_needs_blocking(self) -> Self:
        if self.on_error == "deny" and self.event not in BLOCKING_EVENTS:
            raise ValueError(f"{self.event} hooks cannot block, so `on_error: deny` cannot apply")
        return self


class HttpHook(_AskedHook):
    """POSTs the event as JSON (SSRF-guarded like HTTP tools) and reads the answer."""

    type: Literal["http"]
    url: str = Field(min_length=1, examples=["https://policy.example.com/hook"])
    headers: dict[str, str] = Field(
        default_factory=dict, description="Values may use ${secret:NAME}."
    )
    allow_private: list[str] = Field(
        default_factory=list,
        description="Hosts or CIDRs exempt from the SSRF guard (e.g. 127.0.0.1 for a local test).",
    )

    @field_validator("url")
    @classmethod
    def _fixed_url(cls, url: str) -> str:
        if not re.match(r"^https?://[^/?#]+", url):
            raise ValueError(f"url must be an absolute http(s) URL, got {url!r}")
        probe = SECRET_REF_RE.sub("", url)  # `agentfn validate` says where secrets may go
        authority = re.split(r"[/?#]", probe.split("://", 1)[1], maxsplit=1)[0]
        if "{" in authority or "}" in authority:
            raise ValueError(
                f"url {url!r} has a placeholder in its host part; a hook's URL is fixed "
                "(there are no arguments to fill it from)"
            )
        if "{" in probe or "}" in probe:
            raise ValueError(f"url {url!r} has a placeholder; a hook's URL is fixed")
        return url


class PythonHook(_AskedHook):
    """A sync or async function of the project's tools package, called with the payload."""

    type: Literal["python"]
    handler: str = Field(pattern=PYTHON_HANDLER_RE.pattern, examples=["tools.policy:scrub"])


class LambdaHook(_AskedHook):
    """A Lambda function invoked synchronously with the payload; granted to the agents whose
    hooks name it, and to no other function."""

    type: Literal["lambda"]
    function_arn: str = Field(
        pattern=LAMBDA_ARN_PATTERN,
        examples=["arn:aws:lambda:us-east-1:123456789012:function:policy"],
    )


HookConfig = Annotated[RuleHook | HttpHook | PythonHook | LambdaHook, Field(discriminator="type")]
