"""CloudFormation intrinsics in long form, so templates stay plain data."""

from __future__ import annotations

from typing import Any

ACCOUNT = "${AWS::AccountId}"
REGION = "${AWS::Region}"

#: The first eight hex digits of the stack's UUID (`arn:…:stack/NAME/UUID`): short, fixed
#: per stack, different between stacks. It prefixes every physical name agentfn fixes, so
#: two stacks in one account never collide and IAM can say "this stack's agents" with one
#: ARN pattern. Use it as `${Stack8}` inside any text given to `sub`.
STACK8: dict[str, Any] = {
    "Fn::Select": [
        0,
        {
            "Fn::Split": [
                "-",
                {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]},
            ]
        },
    ]
}
STACK8_VAR = "${Stack8}"


def ref(name: str) -> dict[str, str]:
    return {"Ref": name}


def get_arn(name: str) -> dict[str, list[str]]:
    return {"Fn::GetAtt": [name, "Arn"]}


def sub(text: str) -> dict[str, Any]:
    """`Fn::Sub` of `text`; the list form with the `Stack8` variable when the text uses it."""
    if STACK8_VAR in text:
        return {"Fn::Sub": [text, {"Stack8": STACK8}]}
    return {"Fn::Sub": text}


def arn(
    service: str, resource: str, *, region: str = REGION, account: str = ACCOUNT
) -> dict[str, Any]:
    """`arn:${AWS::Partition}:service:region:account:resource` as an Fn::Sub."""
    return sub(f"arn:${{AWS::Partition}}:{service}:{region}:{account}:{resource}")
