"""`code_execute`'s sandbox: its limits, and (deployed) the VPC without egress it runs in, or
AgentCore Code Interpreter in its place."""

from typing import Literal

from pydantic import Field

from runtime.spec.models import SpecModel
from runtime.spec.types import Duration


class CodeExecuteSettings(SpecModel):
    backend: Literal["sandbox", "agentcore"] = Field(
        "sandbox",
        description="Deployed: the stack's own sandbox function, or Amazon Bedrock AgentCore "
        "Code Interpreter. agentfn run/dev always use the local runner.",
    )
    code_interpreter_id: str = Field(
        "aws.codeinterpreter.v1",
        pattern=r"^(aws\.codeinterpreter\.v1|[a-zA-Z][a-zA-Z0-9_]{0,47}-[a-zA-Z0-9]{10})$",
        description="backend agentcore: the AWS-managed interpreter, or one of yours (its id).",
    )
    timeout: Duration = Field(30.0, ge=1, le=300, description="Default and largest run time.")
    memory_mb: int = Field(
        256, ge=64, le=3008, description="The code's memory (and the function's)."
    )
    subnet_ids: list[str] = Field(
        default_factory=list,
        description="Deployed: private subnets with no route out (no NAT, no internet gateway).",
    )
    security_group_ids: list[str] = Field(
        default_factory=list, description="Deployed: a security group with no outbound rule."
    )
