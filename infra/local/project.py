"""What a local run prepares from the project beside its spec — `agentfn run`, the local
answers of `agentfn approve|reply…`, and `agentfn dev` alike: the spec's tools on sys.path,
the git-ignored `.env` beside the spec, and AWS_REGION as boto3's region too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def load_dotenv(path: Path) -> list[str]:
    """`KEY=VALUE` lines of a `.env` file (git-ignored; e.g. AGENTFN_SECRET_OPENAI=…) into
    the environment, never over a variable already set. The names set."""
    if not path.is_file():
        return []
    loaded = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key and key not in os.environ:
            os.environ[key] = value
            loaded.append(key)
    return loaded


def prepare_project(spec_file: str) -> None:
    """The spec's own tools package on sys.path; its `.env` in the environment; AWS_REGION
    (what the AWS CLI and the other SDKs read) as the region of boto3's clients too (boto3
    reads only AWS_DEFAULT_REGION)."""
    project = Path(spec_file).resolve().parent
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    load_dotenv(project / ".env")
    if os.environ.get("AWS_REGION") and not os.environ.get("AWS_DEFAULT_REGION"):
        os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"]
