"""Guards on what a spec or a caller hands the runtime: is a regular expression safe to run
on untrusted text (regex_parse, regex_charsets, regex_safety: a work budget instead of
catastrophic backtracking), is a JSON Schema safe to compile (schema_safety), does a value
match one (schema_check).

May import: the standard library and fastjsonschema, nothing else of runtime (every layer
uses them: spec checks, tools, the engine, workflows). Must not import infra or handlers.
"""
