"""agentfn's engine: ships inside every Lambda function.

Deliberately empty: importing `runtime` must cost nothing at cold start. Import the
submodule you need (`runtime.spec`, `runtime.errors`, ...); heavy dependencies are
imported inside the functions that use them.
"""
