"""Outside formats, read and written: one module per format, behind ``load_dataset`` and
``load_traces``. Core never imports this package.

``adk`` (ADK eval sets), ``files`` (JSON Lines, JSON, CSV and Parquet datasets), ``databricks``
(the ``trace`` column of the agent-evaluation schema), ``spans`` / ``traces`` (the span model and
``load_traces``), ``mlflow`` (MLflow traces), ``otel`` (OTLP JSON and OpenTelemetry SDK spans by
the GenAI conventions; scores written back), ``openinference``, ``langsmith`` (run trees).
"""

from __future__ import annotations

# Their public home is the package: ``lf.load_dataset``, ``lf.load_traces``, ``lf.to_adk_evalset`` and
# ``lf.export_scores``. Nothing loads here, so reading saved rows (``formats.batches``) needs no other format.
__all__: list[str] = []

