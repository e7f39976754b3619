"""Scoring: matching tool calls, the metrics, one row at a time and whole batches of saved rows.

Imports ``core.errors`` and ``core.data``."""
