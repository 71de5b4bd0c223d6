"""The local stack: the embedded AWS on moto (aws, local_dynamodb, local_lambda,
local_state, local_snapshot, embedded_stack), `agentfn dev` (dev_*: the HTTP server, its
API Gateway events, the event stream, reload, origin checks, the console and its static
files in console/), the live hub, and how a run's events print on a terminal (progress).

May import: runtime, handlers (it runs them as Lambda would), infra.checks (reload
validates), infra.sam (it builds the same resources as the template). Must not import
infra.cli. Never imported by runtime, handlers, tools, infra.sam or infra.checks: nothing
deployed depends on the local stack (import-linter's forbidden contract).
"""
