"""agentfn's engine: ships inside every Lambda function.

Deliberately empty: importing `runtime` must cost nothing at cold start. Import the
submodule you need (`runtime.spec`, `runtime.errors`, ...); heavy dependencies are
imported inside the functions that use them.

The map, top to bottom (import-linter's contracts in pyproject.toml enforce the order):

    workflows/      workflow steps, their records and their service
    service.py      RunService: start, approve, reply, cancel, resume (with executions.py,
                    sweeper.py, teams.py, stack.py: the stack's names and clients)
    engine/         the agent loop: turns, the tool phase, hooks, approvals, compaction
    models/ store/ tools/   model providers, the run store, the tools; below the engine
                    and independent of each other
    observability/  logs, metrics and traces around the loop
    spec/           the spec's pydantic models
    safety/         regex and JSON Schema guards (imports no other layer of runtime)
    live/           live delivery of a run's events, WebSocket messages, watch tokens
    events.py messages.py errors.py clock.py naming.py routes.py secrets.py redaction.py
                    the shared vocabulary every layer uses

runtime never imports infra or handlers.
"""
