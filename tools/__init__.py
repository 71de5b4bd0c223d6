"""The project's own Python tools. `type: python` tools may only point in here.

Each tool is a plain function (sync or async); its arguments are validated against the
tool's `input_schema` (or its type hints) before it is called.
"""
