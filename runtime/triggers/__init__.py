"""Triggers: schedules, webhooks, queues, S3 uploads and events that start runs (issue #28)."""
