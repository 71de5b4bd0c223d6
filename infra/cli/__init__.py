"""The `agentfn` command line: the commands (commands.py, the console script's `main`),
`agentfn run` and `agentfn workflow` in process (run_cli, run_setup, run_workflow,
run_approvals, waterfall), the HTTP API client (api_*), runs answered from the local state
(local_runs), `agentfn init` (scaffold) and the spec as a command reads it (spec_files).

May import: every other room of infra, handlers and runtime. Nothing imports it (it is
the top layer). Deliberately empty: `python -m infra.cli` (__main__.py) and the console
script import infra.cli.commands themselves.
"""
