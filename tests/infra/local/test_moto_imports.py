"""moto's Batch package is deferred (infra.local.moto_imports) and still works when used."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    from infra.local import local_sfn

    local_sfn.install()  # imports moto's Step Functions interpreter, Batch integration included
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_batch,
    )
    print("ec2 imported:", "moto.ec2" in sys.modules)
    print("job status:", state_task_service_batch.JobStatus.SUCCEEDED.value)

    import boto3
    from moto import mock_aws

    with mock_aws():  # a Batch request loads the real package, backend and all
        batch = boto3.client("batch", region_name="us-east-1")
        print("environments:", batch.describe_compute_environments()["computeEnvironments"])
    import moto.batch

    print("backends:", type(moto.batch.batch_backends).__name__)
    """
)


def test_the_interpreter_does_not_load_ec2_and_batch_still_answers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={"AWS_DEFAULT_REGION": "us-east-1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "ec2 imported: False",
        "job status: SUCCEEDED",
        "environments: []",
        "backends: BackendDict",
    ]
