"""Resolve `${secret:NAME}` references at run time; values are cached per warm container
and never logged.

Order: an environment override `AGENTFN_SECRET_<NAME>` (NAME upper-cased, non-alphanumerics
as `_`; for local runs and tests), then Secrets Manager or SSM Parameter Store as the spec
declares (through Powertools Parameters, imported only when a secret is first needed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from runtime.errors import AgentfnError
from runtime.spec import AgentfnSpec
from runtime.spec.types import SECRET_REF_RE

CACHE_SECONDS = 300


class SecretUnavailable(AgentfnError):
    error_code = "SECRET_UNAVAILABLE"


def env_name(name: str) -> str:
    return "AGENTFN_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _fetch_from_aws(source: str, target: str) -> str:
    if source == "ssm":
        from aws_lambda_powertools.utilities import parameters

        return str(parameters.get_parameter(target, decrypt=True, max_age=CACHE_SECONDS))
    from aws_lambda_powertools.utilities import parameters

    return str(parameters.get_secret(target, max_age=CACHE_SECONDS))


class SecretResolver:
    def __init__(self, spec: AgentfnSpec, fetch: Callable[[str, str], str] = _fetch_from_aws):
        self._spec = spec
        self._fetch = fetch

    def value(self, name: str) -> str:
        override = os.environ.get(env_name(name))
        if override is not None:
            return override
        config = self._spec.secrets.get(name)
        if config is None:
            raise SecretUnavailable(f"secret {name!r} is not declared")
        try:
            return self._fetch(config.source, config.name or name)
        except Exception as exc:  # never include the value; the name is fine
            raise SecretUnavailable(
                f"secret {name!r} could not be read from {config.source} "
                f"(set {env_name(name)} to provide it locally): {type(exc).__name__}"
            ) from None

    def __call__(self, text: str) -> str:
        return SECRET_REF_RE.sub(lambda m: self.value(m.group(1)), text)
