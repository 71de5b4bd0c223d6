"""Build-time and local-only code: never shipped in a Lambda package.

Four rooms, each a package whose `__init__` says what it holds and what it may import:

    infra.sam     the compiler: template.yaml, the state machines, packaging, layers,
                  prices, resource names (lowest: imports only runtime and handlers)
    infra.checks  everything `agentfn validate` runs (may import infra.sam)
    infra.local   the embedded AWS and `agentfn dev` (may import infra.checks, infra.sam)
    infra.cli     the commands and the HTTP API client (top: may import every room)

The order is enforced by import-linter (pyproject.toml [tool.importlinter]); nothing in
runtime or handlers imports infra, and nothing deployed imports infra.local.
"""
