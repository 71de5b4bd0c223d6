"""Fixtures for the model-provider tests."""

from __future__ import annotations

from tests.runtime.models.wire_server import wire_server

__all__ = ["wire_server"]
