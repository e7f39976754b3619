"""The Databricks agent-evaluation schema: rows whose ``trace`` column (an MLflow Trace, as JSON or
an object) supplies what the row leaves out.

The columns ``request_id``, ``request``, ``expected_response``, ``response``,
``retrieved_context`` / ``expected_retrieved_context``, ``expected_facts`` and ``guidelines`` are
read by the core data model (``request_id`` is the case id); this module derives a missing
``response``, trajectory and ``retrieved_context`` from ``trace`` (retrieved context = the output
of the last retrieval span in time, as Databricks does), plus the trace's latency and token usage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from . import mlflow
from .spans import TraceError, row_from_spans

__all__ = ["fill_from_trace", "fill_located", "traced_rows", "DERIVED"]

DERIVED = ("response", "predicted_trajectory", "retrieved_context", "latency_in_seconds", "usage", "trace_id", "span_id")
"""The fields a ``trace`` cell fills in when the row does not give them."""


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def fill_from_trace(row: Mapping[str, Any], index: int, where: str) -> dict[str, Any]:
    """``row`` with what its ``trace`` cell says filled in where the row is silent; ``trace`` itself dropped.

    A trace that cannot be read makes the row a failed run whose error names ``where``, the trace
    id and the span, so the other rows are still scored.
    """
    out = {k: v for k, v in row.items() if k != "trace"}
    trace = row.get("trace")
    if _missing(trace):
        return out
    try:
        trace_id, spans = mlflow.spans_from_trace(trace)
        derived = row_from_spans(trace_id, spans)
    except TraceError as exc:
        out["failure"] = True
        out["error"] = f"{where}, field 'trace': {exc}"
        return out
    for key in DERIVED:
        if key in derived and derived[key] is not None and _missing_in(out, key):
            out[key] = derived[key]
    if _missing_in(out, "request") and _missing_in(out, "prompt") and derived.get("request") is not None:
        out["request"] = derived["request"]
    if _missing_in(out, "request_id") and _missing_in(out, "case_id"):
        out["request_id"] = trace_id
    if derived.get("failure") and _missing_in(out, "failure"):
        out["failure"], out["error"] = True, f"{where}: {derived['error']}"
    return out


def _missing_in(row: Mapping[str, Any], key: str) -> bool:
    """True when the row does not give ``key``; a list given empty on purpose counts as given."""
    if key not in row:
        return True
    value = row[key]
    return not isinstance(value, (list, tuple, Mapping)) and not hasattr(value, "tolist") and _missing(value)


def fill_located(located: Sequence[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """``(row, location)`` pairs with every row that has a ``trace`` cell filled from it."""
    return [
        (fill_from_trace(row, i, where), where) if isinstance(row, Mapping) and "trace" in row else (row, where)
        for i, (row, where) in enumerate(located)
    ]


def traced_rows(data: Any, source: str | None) -> tuple[list[tuple[Any, str]], str] | None:
    """In-memory rows (a DataFrame or a list of dicts) with a ``trace`` column, located and filled; else None."""
    if hasattr(data, "columns") and hasattr(data, "to_dict"):
        if "trace" not in data.columns:
            return None
        rows, label = data.to_dict("records"), source or "DataFrame"
    elif isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        if not any(isinstance(r, Mapping) and "trace" in r for r in data):
            return None
        rows, label = list(data), source or "dataset"
    else:
        return None
    return fill_located([(r, f"{label} row {i + 1}") for i, r in enumerate(rows)]), label
