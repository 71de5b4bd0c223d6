"""Names that the deployed stack and the runtime must agree on, derived from an agent's name.

Why they exist:

- **Agent tag.** Eight hex digits derived from the agent's name. Every run id starts with its
  agent's tag, so the run's DynamoDB partitions (`RUN#{run_id}`) and S3 keys
  (`bodies/{run_id}/…`, `results/{run_id}…`) carry the agent in their first characters.
  IAM can then scope an agent's function to its own runs with `dynamodb:LeadingKeys` and
  S3 prefixes (`RUN#{tag}*`), and any process can tell which agent a run id belongs to
  without a read.
- **Resource name.** The per-agent part of the physical names of its Lambda function and
  state machine (`{prefix}{resource_name}`). Physical names are fixed so the API and the
  sweeper find every agent's function and state machine from two short prefixes in their
  environment, whatever the number of agents (Lambda environments stop at 4 KB), and so
  IAM can grant "this stack's agent functions" with one ARN pattern.
"""

from __future__ import annotations

import hashlib
import uuid

TAG_LENGTH = 8
#: Lambda function names stop at 64 characters; the stack prefix takes 17 (`agentfn-xxxxxxxx-`).
RESOURCE_NAME_LIMIT = 47


def agent_tag(agent: str) -> str:
    """Eight hex digits that identify the agent inside run ids and storage keys."""
    return hashlib.sha256(f"agentfn-agent:{agent}".encode()).hexdigest()[:TAG_LENGTH]


def new_run_id(agent: str) -> str:
    """32 hex digits: the agent's tag, then 96 random bits."""
    return agent_tag(agent) + uuid.uuid4().hex[: 32 - TAG_LENGTH]


def run_belongs_to(run_id: str, agent: str) -> bool:
    return run_id.startswith(agent_tag(agent))


def agent_resource_name(agent: str) -> str:
    """The agent's part of its function and state machine names (≤ 47 characters, unique
    per agent name: a long name is cut and ends in a hash of the whole name)."""
    if len(agent) <= RESOURCE_NAME_LIMIT:
        return agent
    digest = hashlib.sha256(agent.encode()).hexdigest()[:8]
    return f"{agent[: RESOURCE_NAME_LIMIT - 9]}-{digest}"


def workflow_resource_name(workflow: str) -> str:
    """A workflow's part of its function and state machine names: `_wf-{name}` (an agent's
    name starts with a letter, so the two can never be the same)."""
    return agent_resource_name(f"_wf-{workflow}")
