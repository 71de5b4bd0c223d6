"""`deployment.telemetry`: where the traces of every run go (runtime.observability).

Absent means off, and off costs nothing: no OpenTelemetry SDK in the functions' layers, no
import, one `None` check per traced point of the loop. Present, every run is one trace in
the OpenTelemetry GenAI conventions, exported over OTLP/HTTP to `otlp_endpoint`, and, with
`xray: true`, to AWS X-Ray's own OTLP endpoint from the deployed functions.
"""

import re
from typing import Self

from pydantic import Field, HttpUrl, field_validator, model_validator

from runtime.spec.methods import TelemetryMethods
from runtime.spec.models import SpecModel
from runtime.spec.shared import SECRET_REF_RE

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
#: Header names that carry a credential: their value must come from `${secret:NAME}`.
_CREDENTIAL_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie", re.I)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110)


class TelemetrySettings(TelemetryMethods, SpecModel):
    """Traces of every run: spans `invoke_agent`, `chat` and `execute_tool` in the
    OpenTelemetry GenAI semantic conventions, one trace per run however often it pauses."""

    otlp_endpoint: HttpUrl | None = Field(
        None,
        description="OTLP/HTTP traces endpoint (protobuf), https (http only on loopback). A "
        "URL without a path gets /v1/traces.",
        examples=["https://otlp.example.com/v1/traces"],
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Sent with every export; values may use ${secret:NAME} (resolved at run "
        "time, like HTTP tool headers).",
    )
    capture_content: bool = Field(
        False,
        description="Record prompts, completions, tool arguments and results on the spans "
        "(every resolved secret redacted). Off: sizes and names only.",
    )
    xray: bool = Field(
        False,
        description="Deployed functions also send their spans to AWS X-Ray's OTLP endpoint "
        "(SigV4; needs CloudWatch Transaction Search enabled in the account).",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _private_channel(cls, url: HttpUrl | None) -> HttpUrl | None:
        """Spans carry prompts (with capture_content) and the headers carry credentials:
        both travel encrypted unless they never leave the machine."""
        if url is not None and url.scheme != "https" and url.host not in _LOOPBACK_HOSTS:
            raise ValueError("otlp_endpoint must use https (http is accepted only on loopback)")
        return url

    @field_validator("headers")
    @classmethod
    def _no_plaintext_credentials(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid HTTP header name")
            if _CREDENTIAL_HEADER.search(name) and not SECRET_REF_RE.search(value):
                raise ValueError(
                    f"header {name!r} looks like a credential written in plaintext; declare "
                    "it under `secrets` and write ${secret:NAME}"
                )
        return headers

    @model_validator(mode="after")
    def _somewhere_to_send(self) -> Self:
        if self.otlp_endpoint is None and not self.xray:
            raise ValueError("set otlp_endpoint, xray: true, or both")
        if self.headers and self.otlp_endpoint is None:
            raise ValueError("headers are sent to otlp_endpoint, which is not set")
        return self
