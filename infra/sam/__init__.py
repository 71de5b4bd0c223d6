"""The compiler: the SAM template and the per-agent and per-workflow state machines
(ASL), the Lambda package and layers, model prices, resource names, database grants.

May import: runtime (the spec models, names shared with the runtime) and handlers (only
to copy the package into the build). Must not import infra.checks, infra.local or
infra.cli: validation and the commands sit above it, and this is what `agentfn build`
ships, so nothing local may leak into it.
"""
