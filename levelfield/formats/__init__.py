"""Outside formats, read and written: one module per format, behind ``load_dataset`` and
``load_traces``. Core never imports this package.

``adk`` (ADK eval sets), ``files`` (JSON Lines, JSON, CSV and Parquet datasets), ``databricks``
(the ``trace`` column of the agent-evaluation schema), ``spans`` / ``traces`` (the span model and
``load_traces``), ``mlflow`` (MLflow traces), ``otel`` (OTLP JSON and OpenTelemetry SDK spans by
the GenAI conventions; scores written back), ``openinference``, ``langsmith`` (run trees).
"""

from .adk import write_evalset as to_adk_evalset
from .files import load_dataset
from .otel import export_scores
from .traces import load_traces

__all__ = ["load_dataset", "load_traces", "to_adk_evalset", "export_scores"]
