"""The resumable agent loop and what it is made of (prompt, output, history, result)."""
