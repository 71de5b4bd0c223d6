"""CloudFormation intrinsics in long form, so templates stay plain data."""

from __future__ import annotations

ACCOUNT = "${AWS::AccountId}"
REGION = "${AWS::Region}"


def ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def get_arn(name: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [name, "Arn"]}


def sub(text: str) -> dict[str, str]:
    return {"Fn::Sub": text}


def arn(
    service: str, resource: str, *, region: str = REGION, account: str = ACCOUNT
) -> dict[str, str]:
    """`arn:${AWS::Partition}:service:region:account:resource` as an Fn::Sub."""
    return sub(f"arn:${{AWS::Partition}}:{service}:{region}:{account}:{resource}")
