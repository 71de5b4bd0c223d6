"""Build-time and local-only code: spec validation, the SAM/ASL emitters, the CLI.

Never shipped in a Lambda package.
"""
