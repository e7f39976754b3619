"""Everything framework-independent, in rooms by job; core imports no adapter, format, executor or report.

Rooms, lowest first; each imports only ``core.errors`` and the rooms below it:

- ``data``: the data model (tool calls, outputs, runs, cases, datasets), the runnable protocol,
  run options (``RunConfig``) and JSON-safe conversion.
- ``score``: matching tool calls, the metrics, scoring one row and scoring batches of rows.
- ``results``: the run record on disk (journal, save, load), ``EvalResult`` and ADK criteria.
- ``stats``: intervals, paired tests, sample-size planning, change detection, judge correction.
- ``run``: the engine: runner, threads, process isolation, failures, simulated conversations.
"""
