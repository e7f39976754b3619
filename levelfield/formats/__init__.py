"""Outside formats, read and written: one module per format, behind ``load_dataset`` and
``load_traces``. Core never imports this package.

``adk`` (ADK eval sets), ``files`` (JSON Lines, JSON, CSV and Parquet datasets), ``databricks``
(the ``trace`` column of the agent-evaluation schema), ``spans`` / ``traces`` (the span model and
``load_traces``), ``mlflow`` (MLflow traces), ``otel`` (OTLP JSON and OpenTelemetry SDK spans by
the GenAI conventions; scores written back), ``openinference``, ``langsmith`` (run trees).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .adk import write_evalset as to_adk_evalset
    from .files import load_dataset
    from .otel import export_scores
    from .traces import load_traces

__all__ = ["load_dataset", "load_traces", "to_adk_evalset", "export_scores"]

# Each format loads when first used: reading saved rows (``formats.batches``) needs none of the others.
from .._lazy import lazy_members

_LAZY = {"load_dataset": (".files", "load_dataset"), "load_traces": (".traces", "load_traces"),
         "to_adk_evalset": (".adk", "write_evalset"), "export_scores": (".otel", "export_scores")}


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())

