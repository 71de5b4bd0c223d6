"""Everything `agentfn validate` runs: the YAML reader with its source map and bounds
(yamlsrc, yamlbounds), the spec's located issues (issues), the environment overlay
(environments), the pydantic validation (validate) and every cross-section check beside
it (references, *_checks, run_limits, tool_imports, union_tags, deploy_warnings).

Division of labour with runtime.spec: runtime.spec holds the models (a key's type, default
and single-value rules — what a Lambda needs to load its compiled spec); this package holds
the checks that need the raw YAML, its line numbers, the file system or several sections
at once. A new key: its shape goes in runtime.spec, a rule spanning sections here.

May import: runtime, infra.sam (names, layers, prices). Must not import infra.local or
infra.cli (validation runs the same from every command and from `agentfn dev`'s reload).
"""
