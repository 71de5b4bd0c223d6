"""`agentfn eval` (issue #30): eval files, their runs on the embedded stack, assertions,
cassettes, the judge and the reports. May import infra.local, infra.checks and infra.sam;
the command itself is infra.cli.eval_command."""
