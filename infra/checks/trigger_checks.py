"""Validation of `triggers:` lists that spans more than one key (the models check each
trigger's own fields: one source, AWS schedule syntax, time zone).

- trigger names are unique within their agent or workflow;
- the `input` and `session` templates reference only what the event kind provides
  (runtime.triggers.events.PROVIDES): `{body.issue.title}` for a webhook, `{bucket}` and
  `{key}` for an S3 upload, `{detail.order_id}` for an event, `{time}` for a schedule;
- an agent's input is text; a workflow's is text, or a mapping of templates when its
  input_schema is an object (each required property given);
- a queue given by `arn` is read by one trigger only;
- an agent and a workflow of the same name cannot both have triggers (their webhook routes,
  `/hooks/{name}/{trigger}`, would be the same).

A webhook's `secret` must be a declared `${secret:NAME}`: infra.references checks it, as
it checks every secret reference (triggers' webhook secrets are where one is resolved).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from infra.checks.issues import RefProblem, did_you_mean, mapping
from infra.checks.yamlsrc import Path_
from runtime.spec.shared import SOURCES
from runtime.triggers.events import PER_EVENT, PROVIDES
from runtime.workflows.template import REF_RE, references


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def check_triggers(data: Any) -> list[RefProblem]:
    root = mapping(data)
    problems: list[RefProblem] = []
    agents, workflows = mapping(root.get("agents")), mapping(root.get("workflows"))
    for section, owners in (("agents", agents), ("workflows", workflows)):
        for name, raw in owners.items():
            owner = mapping(raw)
            triggers = _list(owner.get("triggers"))
            base: Path_ = (section, name, "triggers")
            if (
                triggers
                and section == "workflows"
                and _list(mapping(agents.get(name)).get("triggers"))
            ):
                problems.append(
                    RefProblem(
                        base,
                        f"agent {name!r} has triggers too: their webhook routes "
                        f"(/hooks/{name}/…) would be the same; rename the workflow",
                        at_key=True,
                    )
                )
            problems += _check_list(triggers, base, section, owner)
    return problems + _shared_queues(agents, workflows)


def _shared_queues(agents: dict[str, Any], workflows: dict[str, Any]) -> list[RefProblem]:
    """One queue, one trigger: SQS hands each message to one reader, so a second trigger on
    the same queue would see only some of its messages."""
    seen: dict[str, str] = {}
    problems = []
    for section, owners in (("agents", agents), ("workflows", workflows)):
        for name, raw in owners.items():
            for i, trigger in enumerate(_list(mapping(raw).get("triggers"))):
                queue_arn = mapping(mapping(trigger).get("queue")).get("arn")
                if not isinstance(queue_arn, str):
                    continue
                where = f"{name}/{mapping(trigger).get('name')}"
                if queue_arn in seen:
                    message = (
                        f"trigger {seen[queue_arn]} reads this queue already; one queue, "
                        "one trigger"
                    )
                    problems.append(
                        RefProblem((section, name, "triggers", i, "queue", "arn"), message)
                    )
                seen.setdefault(queue_arn, where)
    return problems


def _check_list(
    triggers: list[Any], base: Path_, section: str, owner: dict[str, Any]
) -> list[RefProblem]:
    problems: list[RefProblem] = []
    seen: set[str] = set()
    for i, raw in enumerate(triggers):
        trigger = mapping(raw)
        name = trigger.get("name")
        if isinstance(name, str):
            if name in seen:
                message = f"trigger name {name!r} is used twice in this list"
                problems.append(RefProblem((*base, i, "name"), message))
            seen.add(name)
        kinds = [s for s in SOURCES if trigger.get(s) is not None]
        if len(kinds) != 1:
            continue  # the model explains it
        provides = PROVIDES[kinds[0]]
        path: Path_ = (*base, i)
        problems += _input_shape(trigger.get("input"), (*path, "input"), section, owner)
        value = trigger.get("input")
        texts = value.items() if isinstance(value, dict) else [(None, value)]
        for key, text in texts:
            where = (*path, "input") if key is None else (*path, "input", key)
            problems += _template(text, where, kinds[0], provides)
        session = trigger.get("session")
        if isinstance(session, str) and session != PER_EVENT:
            problems += _template(session, (*path, "session"), kinds[0], provides)
    return problems


def _template(text: Any, path: Path_, kind: str, provides: dict[str, str]) -> Iterator[RefProblem]:
    if not isinstance(text, str):
        return
    left = REF_RE.sub("", text.replace("{{", "").replace("}}", ""))
    if "{" in left or "}" in left:
        yield RefProblem(
            path,
            "a brace that is not a reference like {body.title}: write {{ and }} for literal braces",
        )
    for ref in references(text):
        head, *rest = ref.split(".")
        names = ", ".join("{" + n + "}" for n in provides)
        if head not in provides:
            hint = did_you_mean(head, provides)
            yield RefProblem(
                path,
                f"{{{ref}}}: the event of a {kind} trigger has no {head!r}{hint} (it provides "
                f"{names})",
            )
        elif rest and provides[head] == "leaf":
            yield RefProblem(
                path, f"{{{ref}}}: {{{head}}} of a {kind} trigger's event is a value, not an object"
            )


def _input_shape(
    value: Any, path: Path_, section: str, owner: dict[str, Any]
) -> Iterator[RefProblem]:
    schema = owner.get("input_schema") if section == "workflows" else None
    wants_object = isinstance(schema, dict) and schema.get("type") == "object"
    if isinstance(value, dict) and not wants_object:
        what = (
            "an agent's input is text"
            if section == "agents"
            else ("this workflow has no object input_schema: its input is text")
        )
        yield RefProblem(path, f"{what}; write one template string")
    elif isinstance(value, str) and wants_object:
        listed = ", ".join(mapping(mapping(schema).get("properties")))
        yield RefProblem(
            path,
            "this workflow's input_schema is an object: give `input` as a mapping of its "
            f"properties to templates ({listed})",
        )
    elif isinstance(value, dict) and wants_object:
        properties = mapping(mapping(schema).get("properties"))
        for key in value:
            if properties and key not in properties:
                hint = did_you_mean(key, properties)
                yield RefProblem((*path, key), f"{key!r} is not a property of input_schema{hint}")
        for required in _list(mapping(schema).get("required")):
            if required not in value:
                yield RefProblem(
                    path, f"the input_schema requires {required!r}; give it a template"
                )
