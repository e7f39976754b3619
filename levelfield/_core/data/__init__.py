"""The data model: tool calls, outputs, runs, cases and datasets, the runnable protocol, run options.

Imports only ``core.errors``."""
