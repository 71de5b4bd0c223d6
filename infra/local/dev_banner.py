"""What `agentfn dev` prints when it is ready: where everything listens, and what to try."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.local.dev_aws import HOST
from infra.local.dev_gateway import STAGE


def banner(spec: Any, spec_path: Path, port: int, aws_url: str) -> str:
    from infra.local.aws import LOCAL_BUCKET, LOCAL_REGION, LOCAL_TABLE

    region = LOCAL_REGION
    api = f"http://{HOST}:{port}"
    agent = next(iter(spec.agents))
    about = " ".join(spec.agents[agent].description.split())[:100]
    body = json.dumps({"input": "Hello! What can you do for me?", "wait_seconds": 5})
    return "\n".join(
        [
            f"agentfn dev · {spec_path.name}: {len(spec.agents)} agents ({', '.join(spec.agents)})",
            f"  console       {api}/   (open it in a browser: start, watch, approve)",
            f"  API           {api}   (stage {STAGE!r}; GET {api}/openapi.json)",
            f"  AWS endpoint  {aws_url}   (moto: DynamoDB, S3, Step Functions, Lambda, Events)",
            f"  table         {LOCAL_TABLE}",
            f"  bucket        {LOCAL_BUCKET}",
            f"try ({agent}: {about}):",
            f"  curl -s -X POST {api}/agents/{agent}/runs -H 'content-type: application/json' \\",
            f"       -d '{body}'",
            f"  AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing aws --region {region} \\",
            f"    --endpoint-url {aws_url} dynamodb scan --table-name {LOCAL_TABLE}",
            f"  agentfn status RUN_ID --url {api}",
            f"  curl -N {api}/runs/RUN_ID/stream      (the run live, as server-sent events)",
            "State lives in memory until this stops (Ctrl-C).",
        ]
    )
