"""Lambda SnapStart (`deployment.snapstart`): which functions get it, and how every invoker
reaches them.

SnapStart applies to published versions only, never to `$LATEST`. A function that has it
is published on each deploy (`AutoPublishAlias`; SAM names a new version whenever the code
or configuration changes) behind the alias `live`, and everything that invokes it must name
that alias, or it would keep starting cold from `$LATEST`:

- the state machines: their substitution (`${AgentFunctionArn}`, `${WorkflowFunctionArn}`)
  and their role's grant are the alias's ARN (`Ref: {Function}.Alias`);
- a handoff names the next agent's function by name plus qualifier: the functions read the
  alias from `AGENTFN_FUNCTION_ALIAS` (runtime.stack), and a task's `$.function` is the ARN
  the task was invoked by, the alias's;
- the REST API's events: SAM points their integration and permission at the alias itself;
- the WebSocket API's integration and its permission: the alias's ARN (infra.sam.live).

Which functions: those a caller waits on (agents, workflows, the API, live runs). Not the
sweeper, which runs on a schedule nobody waits for, nor the code_execute sandbox, which runs
each call in a fresh process and so has nothing a snapshot would keep.
"""

from __future__ import annotations

from typing import Any

from runtime.spec import AgentfnSpec

ALIAS = "live"
#: python3.11 has no SnapStart (runtime.spec.root checks the spec's own runtime; this, the
#: one `agentfn build --runtime` may put in its place).
RUNTIMES_WITHOUT = ("python3.11",)


def enabled(spec: AgentfnSpec, runtime: str | None = None) -> bool:
    """Whether the template publishes SnapStart versions; a runtime without it is refused
    rather than silently built without (ValueError: `agentfn build` prints it)."""
    if not spec.deployment.snapstart:
        return False
    runtime = runtime or spec.deployment.runtime
    if runtime in RUNTIMES_WITHOUT:
        raise ValueError(
            f"deployment.snapstart needs runtime python3.12 or later (building for {runtime}): "
            "build for a later runtime, or set deployment.snapstart: false"
        )
    return True


def apply(function: dict[str, Any]) -> dict[str, Any]:
    """`function` (an AWS::Serverless::Function) published with SnapStart behind ALIAS."""
    function["Properties"]["AutoPublishAlias"] = ALIAS
    function["Properties"]["SnapStart"] = {"ApplyOn": "PublishedVersions"}
    return function


def invoke_arn(spec: AgentfnSpec, function_id: str) -> dict[str, Any]:
    """What an invoker names: the alias's ARN when SnapStart is on, else the function's."""
    if spec.deployment.snapstart:
        return {"Ref": f"{function_id}.Alias"}
    return {"Fn::GetAtt": [function_id, "Arn"]}


def invoke_sub(spec: AgentfnSpec, function_id: str) -> str:
    """The same, as a `${…}` of an Fn::Sub text. SAM resolves `${F.Alias}` there but cfn-lint
    does not, so this names the alias SAM makes by its logical id (`{F}Alias{ALIAS}`)."""
    if spec.deployment.snapstart:
        return f"${{{function_id}Alias{ALIAS}}}"
    return f"${{{function_id}.Arn}}"


def environment(spec: AgentfnSpec) -> dict[str, str]:
    """What the functions read to name other agents' functions with the alias."""
    return {"AGENTFN_FUNCTION_ALIAS": ALIAS} if spec.deployment.snapstart else {}
