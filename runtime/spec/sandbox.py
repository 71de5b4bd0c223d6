"""`code_execute`'s sandbox: its limits, and (deployed) the VPC without egress it runs in."""

from __future__ import annotations

from pydantic import Field

from runtime.spec.models import SpecModel
from runtime.spec.types import Duration


class CodeExecuteSettings(SpecModel):
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
