"""What a deployed stack costs: idle (nothing running) and per run, from what it really does.

Per run: the demo's runs are driven through the code path that deploys — the API's service
starts each one on its agent's state machine, which moto's Step Functions interpreter
executes, dispatching its Lambda tasks to the real step handler — and every AWS request the
stack makes is counted at botocore (`BaseClient._make_api_call`). DynamoDB capacity is
computed the way on-demand mode charges it (item sizes by the published sizing rules, the
larger of the before and after images for a write, x2 inside a transaction, index writes for
the sparse `sweep` index, 4 KB read units rounded up per request, halved for eventually
consistent reads); state transitions are the executions' `*StateEntered` history events.

Idle: read from the template `agentfn build` writes (alarms and the metrics each watches,
dashboards, the sweeper's schedule, point-in-time recovery, tracing) and from what one
sweeper pass does on an empty table (measured the same way).

Prices are us-east-1 list prices (USD), written below with the page they come from; check
them before you rely on a figure. Model tokens are priced separately (last column) since
they depend on the model, not on agentfn.

    .venv/bin/python bench/run_cost.py [--runs 20] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# us-east-1 list prices, USD (checked 2026-11; the pages named are the sources).
PRICES = {
    # aws.amazon.com/dynamodb/pricing/on-demand/
    "dynamodb_write_unit": 0.625 / 1e6,
    "dynamodb_read_unit": 0.125 / 1e6,
    "dynamodb_pitr_gb_month": 0.20,
    # aws.amazon.com/step-functions/pricing/ (Standard workflows)
    "sfn_transition": 0.025 / 1e3,
    # aws.amazon.com/lambda/pricing/ (arm64)
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_second_arm": 0.0000133334,
    # aws.amazon.com/s3/pricing/ (Standard)
    "s3_put": 0.005 / 1e3,
    "s3_get": 0.0004 / 1e3,
    # aws.amazon.com/eventbridge/pricing/ (custom events)
    "eventbridge_event": 1.00 / 1e6,
    # aws.amazon.com/api-gateway/pricing/ (REST APIs, first 333 M)
    "apigw_rest_request": 3.50 / 1e6,
    # aws.amazon.com/cloudwatch/pricing/
    "cw_custom_metric_month": 0.30,
    "cw_alarm_metric_month": 0.10,
    "cw_dashboard_month": 3.00,
    "xray_trace": 5.00 / 1e6,
    # aws.amazon.com/secrets-manager/pricing/
    "secret_month": 0.40,
    # Claude Sonnet 4 on Bedrock, per token (aws.amazon.com/bedrock/pricing/)
    "model_input_token": 3.00 / 1e6,
    "model_output_token": 15.00 / 1e6,
}
HOURS_PER_MONTH = 730
WRITE_UNIT, READ_UNIT, INDEX_OVERHEAD = 1024, 4096, 100


# --- DynamoDB sizing (docs: "Item sizes and formats") -----------------------------------


def value_size(value: dict[str, Any]) -> int:
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = len(str(inner).lstrip("-").replace(".", "").strip("0")) or 1
        return math.ceil(digits / 2) + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: v}) for v in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(kind)


def item_size(item: dict[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


class Ledger:
    """Every AWS request of the stack, and DynamoDB's capacity for it."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.write_units = 0.0
        self.read_units = 0.0
        self.index_units = 0.0
        self.bytes_written = 0
        self.lock = threading.Lock()

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


LEDGER = Ledger()
_QUIET = threading.local()


def _key_of(request: dict[str, Any]) -> dict[str, Any] | None:
    return request.get("Key") or (
        {k: request["Item"][k] for k in ("pk", "sk") if k in request.get("Item", {})}
        if "Item" in request
        else None
    )


def _index_writes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> int:
    """Writes to the KEYS_ONLY `sweep` index: a new or removed entry is one, a moved one two."""

    def entry(item: dict[str, Any] | None) -> tuple[Any, Any] | None:
        if not item or "sweep_pk" not in item or "sweep_at" not in item:
            return None
        return (json.dumps(item["sweep_pk"]), json.dumps(item["sweep_at"]))

    old, new = entry(before), entry(after)
    if old == new:
        return 0
    return (old is not None) + (new is not None)


def _get(client: Any, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    _QUIET.on = True
    try:
        return client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    finally:
        _QUIET.on = False


@contextmanager
def counting() -> Iterator[Ledger]:
    """Count every botocore request made while inside (any client, any thread)."""
    from botocore.client import BaseClient

    original: Callable[..., Any] = BaseClient._make_api_call

    def write(client: Any, table: str, key: dict[str, Any] | None, do: Callable[[], Any]) -> Any:
        before = _get(client, table, key) if key else None
        answer = do()
        after = _get(client, table, key) if key else None
        units = math.ceil(max(item_size(before), item_size(after), 1) / WRITE_UNIT)
        index = _index_writes(before, after)
        return answer, units, index, item_size(after)

    def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if getattr(_QUIET, "on", False):
            return original(self, operation, params)
        service = self.meta.service_model.service_name
        with LEDGER.lock:
            LEDGER.requests[(service, operation)] += 1
        if service != "dynamodb":
            return original(self, operation, params)
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            table = params["TableName"]
            answer, units, index, size = write(
                self, table, _key_of(params), lambda: original(self, operation, params)
            )
            with LEDGER.lock:
                LEDGER.write_units += units
                LEDGER.index_units += index
                LEDGER.bytes_written += size
            return answer
        if operation == "TransactWriteItems":
            parts = []
            for entry in params["TransactItems"]:
                ((kind, request),) = entry.items()
                parts.append((kind, request["TableName"], _key_of(request)))
            befores = [_get(self, t, k) if k else None for _, t, k in parts]
            answer = original(self, operation, params)
            for (_, table, key), before in zip(parts, befores, strict=True):
                after = _get(self, table, key) if key else None
                units = math.ceil(max(item_size(before), item_size(after), 1) / WRITE_UNIT)
                with LEDGER.lock:
                    LEDGER.write_units += 2 * units
                    LEDGER.index_units += _index_writes(before, after)
                    LEDGER.bytes_written += item_size(after)
            return answer
        answer = original(self, operation, params)
        factor = 1.0 if params.get("ConsistentRead") else 0.5
        if operation == "GetItem":
            units = math.ceil(max(item_size(answer.get("Item")), 1) / READ_UNIT) * factor
        elif operation in ("Query", "Scan"):
            total = sum(item_size(i) for i in answer.get("Items", []))
            units = math.ceil(max(total, 1) / READ_UNIT) * factor
        elif operation == "TransactGetItems":
            units = 2 * sum(
                math.ceil(max(item_size(r.get("Item")), 1) / READ_UNIT)
                for r in answer.get("Responses", [])
            )
        elif operation == "BatchGetItem":
            units = sum(
                math.ceil(max(item_size(i), 1) / READ_UNIT) * factor
                for items in answer.get("Responses", {}).values()
                for i in items
            )
        else:
            units = 0
        with LEDGER.lock:
            LEDGER.read_units += units
        return answer

    BaseClient._make_api_call = call  # type: ignore[method-assign]
    try:
        yield LEDGER
    finally:
        BaseClient._make_api_call = original  # type: ignore[method-assign]


# --- the runs ----------------------------------------------------------------------------


def _transitions(stack: Any) -> int:
    import boto3

    from infra.local.aws import LOCAL_REGION

    sfn = boto3.client("stepfunctions", region_name=LOCAL_REGION)
    with quiet():
        total = 0
        for machine in sfn.list_state_machines()["stateMachines"]:
            arn = machine["stateMachineArn"]
            for execution in sfn.list_executions(stateMachineArn=arn)["executions"]:
                history = sfn.get_execution_history(
                    executionArn=execution["executionArn"], maxResults=1000
                )["events"]
                total += sum(1 for e in history if e["type"].endswith("StateEntered"))
        return total


Scenario = tuple[str, str, str, Callable[[Any, str], None]]


@contextmanager
def quiet() -> Iterator[None]:
    """Requests of this thread not counted: the benchmark's own polling, not the stack's."""
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = False


def _status(stack: Any, run_id: str) -> Any:
    from tests.helpers import wait_for

    store = stack.service.engine.store
    with quiet():
        return wait_for(
            lambda: (
                (
                    (h := store.load_head(run_id)).status in ("succeeded", "failed", "cancelled")
                    or (h.status in ("awaiting_approval", "awaiting_input") and h.task_token)
                )
                and h
            ),
            what="a pause or the end",
        )


def _approve(stack: Any, run_id: str) -> None:
    """Approve every call the run asks about (one POST /runs/{id}/approval each)."""
    while _status(stack, run_id).status == "awaiting_approval":
        stack.service.approve(run_id, True)


def _nothing(stack: Any, run_id: str) -> None:
    _status(stack, run_id)


SCENARIOS: list[Scenario] = [
    ("orders: an intent, no model call", "orders", "ORD-1001", _nothing),
    (
        "analyst: one SQL query, then the answer",
        "analyst",
        "Which country brings in the most revenue?",
        _nothing,
    ),
    ("billing: a refund after an approval", "billing", "Refund ORD-1001, it broke", _approve),
    (
        "support: a team (ask, handoff, approval)",
        "support",
        "My order ORD-1001 arrived damaged. What can you do?",
        _approve,
    ),
]


def measure_runs(runs: int) -> list[dict[str, Any]]:
    from infra.checks.validate import validate_file
    from infra.local.aws import embedded_aws
    from infra.local.embedded_stack import EmbeddedStack

    class Events:  # EventBridge's PutEvents, counted like the rest
        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            with LEDGER.lock:
                LEDGER.requests[("events", "PutEvents")] += 1
                LEDGER.requests[("events", "entries")] += len(Entries)
            return {"FailedEntryCount": 0}

    spec = validate_file(ROOT / "agents.yaml").spec
    rows = []
    for label, agent, text, drive in SCENARIOS:
        with embedded_aws() as clients:
            stack = EmbeddedStack(spec, clients, template_path=ROOT / "template.yaml")
            stack.set_events(Events())
            tokens_in = tokens_out = turns = 0
            with counting() as ledger:
                ledger.reset()
                for _ in range(runs):
                    code, body = stack.service.start(agent, text, wait_seconds=0)
                    assert code == 202, body
                    drive(stack, body["run_id"])
                    result = stack.service.get(body["run_id"])
                    assert result["status"] == "succeeded", result
                    tokens_in += result.get("tokens_input", 0)
                    tokens_out += result.get("tokens_output", 0)
                    turns += result.get("turns_used", 0)
                transitions = _transitions(stack)
                snapshot = (
                    Counter(ledger.requests),
                    ledger.write_units,
                    ledger.read_units,
                    ledger.index_units,
                    ledger.bytes_written,
                )
        requests, wru, rru, index, written = snapshot
        rows.append(
            cost_row(
                label,
                runs,
                requests,
                wru + index,
                rru,
                transitions,
                turns,
                tokens_in,
                tokens_out,
                written,
            )
        )
    return rows


def cost_row(
    label: str,
    runs: int,
    requests: Counter[tuple[str, str]],
    wru: float,
    rru: float,
    transitions: int,
    turns: int,
    tokens_in: int,
    tokens_out: int,
    written: int,
) -> dict[str, Any]:
    per = 1 / runs
    invokes = requests[("lambda", "Invoke")]
    s3_put = sum(n for (s, op), n in requests.items() if s == "s3" and op.startswith("Put"))
    s3_get = sum(n for (s, op), n in requests.items() if s == "s3" and op.startswith("Get"))
    events = requests[("events", "entries")]
    approvals = requests[("stepfunctions", "SendTaskSuccess")]
    p = PRICES
    cost = {
        "dynamodb": (wru * p["dynamodb_write_unit"] + rru * p["dynamodb_read_unit"]) * per,
        "step_functions": transitions * p["sfn_transition"] * per,
        "lambda_requests": invokes * p["lambda_request"] * per,
        "s3": (s3_put * p["s3_put"] + s3_get * p["s3_get"]) * per,
        "eventbridge": events * p["eventbridge_event"] * per,
        # the POST that starts it, one GET of its result, a POST per decision
        "api_gateway": (2 * runs + approvals) * p["apigw_rest_request"] * per,
    }
    model = (tokens_in * p["model_input_token"] + tokens_out * p["model_output_token"]) * per
    return {
        "scenario": label,
        "turns": turns * per,
        "ddb_requests": sum(n for (s, _), n in requests.items() if s == "dynamodb") * per,
        "write_units": wru * per,
        "read_units": rru * per,
        "kb_written": written * per / 1024,
        "transitions": transitions * per,
        "lambda_invokes": invokes * per,
        "s3_requests": (s3_put + s3_get) * per,
        "events": events * per,
        "cost": cost,
        "total": sum(cost.values()),
        "model": model,
        "requests": {f"{s}:{op}": n * per for (s, op), n in sorted(requests.items())},
    }


# --- idle ---------------------------------------------------------------------------------


def _alarm_metrics(props: dict[str, Any]) -> int:
    metrics = props.get("Metrics")
    if not metrics:
        return 1
    return sum(1 for m in metrics if "MetricStat" in m) or 1


def idle_costs(template_path: Path) -> list[tuple[str, str, float]]:
    import yaml

    from infra.checks.validate import validate_file

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load(template_path.read_text(encoding="utf-8"), Loader=Loader)
    spec = validate_file(ROOT / "agents.yaml").spec
    resources = template["Resources"].values()
    p = PRICES
    alarms = [r for r in resources if r["Type"] == "AWS::CloudWatch::Alarm"]
    alarm_metrics = sum(_alarm_metrics(a["Properties"]) for a in alarms)
    dashboards = sum(1 for r in resources if r["Type"] == "AWS::CloudWatch::Dashboard")
    generated = sum(1 for r in resources if r["Type"] == "AWS::SecretsManager::Secret")
    sweeps = 30 * 86_400 / spec.deployment.sweep_interval
    rows = [
        (
            "CloudWatch alarms",
            f"{len(alarms)} alarms watching {alarm_metrics} metrics",
            alarm_metrics * p["cw_alarm_metric_month"],
        ),
        (
            "CloudWatch dashboard",
            f"{dashboards} (the first 3 of an account are free)",
            dashboards * p["cw_dashboard_month"],
        ),
        (
            "Sweeper's metrics",
            "5 stack-level metrics printed every pass (custom metrics bill per hour published)",
            5 * p["cw_custom_metric_month"],
        ),
        (
            "Sweeper runs",
            f"{sweeps:,.0f} invocations/month (every {spec.deployment.sweep_interval:.0f} s), "
            "512 MB, ~0.1 s each",
            sweeps * (p["lambda_request"] + 0.5 * 0.1 * p["lambda_gb_second_arm"]),
        ),
        (
            "X-Ray",
            "one trace per sweep when `deployment.tracing` (first 100,000 a month free)",
            max(0.0, sweeps - 100_000) * p["xray_trace"] if spec.deployment.tracing else 0.0,
        ),
        (
            "Secrets",
            f"{len(spec.secrets)} declared (Secrets Manager; SSM standard parameters are free), "
            f"and {generated} the stack generates (the live watch-token key)",
            (sum(1 for s in spec.secrets.values() if s.source == "secretsmanager") + generated)
            * p["secret_month"],
        ),
        (
            "DynamoDB point-in-time recovery, storage, S3",
            "per GB stored: an empty stack stores nothing",
            0.0,
        ),
        (
            "API Gateway, Step Functions, Lambda (agents), EventBridge, SNS",
            "billed per request only",
            0.0,
        ),
    ]
    return rows


# --- output ---------------------------------------------------------------------------------


def run_table(rows: list[dict[str, Any]], runs: int) -> str:
    lines = [
        f"Mean of {runs} runs each; USD, us-east-1.",
        "",
        "| run | turns | DynamoDB requests / write units / read units | state transitions "
        "| Lambda invocations | AWS per run | per 1,000 runs | model tokens as Claude Sonnet 4 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {r['turns']:.0f} | {r['ddb_requests']:.0f} / "
            f"{r['write_units']:.0f} / {r['read_units']:.1f} | {r['transitions']:.0f} | "
            f"{r['lambda_invokes']:.0f} | ${r['total']:.6f} | ${r['total'] * 1000:.2f} | "
            f"${r['model']:.4f} |"
        )
    services = list(rows[0]["cost"])
    lines += ["", "Per 1,000 runs, by service:", ""]
    lines.append("| run | " + " | ".join(s.replace("_", " ") for s in services) + " |")
    lines.append("| --- |" + " ---: |" * len(services))
    for r in rows:
        cells = " | ".join(f"${r['cost'][s] * 1000:.3f}" for s in services)
        lines.append(f"| {r['scenario']} | {cells} |")
    return "\n".join(lines)


def idle_table(idle: list[tuple[str, str, float]]) -> str:
    lines = ["| what | why | USD a month |", "| --- | --- | ---: |"]
    for what, why, usd in idle:
        lines.append(f"| {what} | {why} | ${usd:.2f} |")
    lines.append(f"| **total** | | **${sum(usd for _, _, usd in idle):.2f}** |")
    return "\n".join(lines)


def write_readme(readme: Path, tables: dict[str, str]) -> None:
    """Replace each `<!-- cost:NAME -->` … `<!-- /cost:NAME -->` block of the README."""
    text = readme.read_text(encoding="utf-8")
    for name, table in tables.items():
        start, end = f"<!-- cost:{name} -->", f"<!-- /cost:{name} -->"
        head, found, rest = text.partition(start)
        if not found:
            raise SystemExit(f"{readme}: no {start} marker")
        _, _, tail = rest.partition(end)
        text = f"{head}{start}\n{table}\n{end}{tail}"
    readme.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per scenario")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--write-readme", action="store_true", help="also put the tables in README.md"
    )
    args = parser.parse_args()
    rows = measure_runs(args.runs)
    idle = idle_costs(ROOT / "template.yaml")
    if args.json:
        print(json.dumps({"runs": rows, "idle": idle}, indent=2, default=str))
        return
    tables = {"per-run": run_table(rows, args.runs), "idle": idle_table(idle)}
    print("Per run\n\n" + tables["per-run"] + "\n\nIdle, per month\n\n" + tables["idle"])
    if args.write_readme:
        write_readme(ROOT / "README.md", tables)


if __name__ == "__main__":
    main()
