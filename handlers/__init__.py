"""Thin Lambda entry points: parse the event, call the runtime, shape the answer."""
