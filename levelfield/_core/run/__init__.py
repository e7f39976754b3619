"""The engine: running agents on cases (slots, timeouts, retries, trials), the one retry loop,
threads, process isolation, failure descriptions, simulated conversations, and scoring runs as
they finish.

Imports every room below it: ``core.errors``, ``data``, ``score``, ``results``."""
