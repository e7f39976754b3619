"""``load_traces``: traces of any supported kind (MLflow, OTLP JSON, OpenTelemetry SDK spans,
OpenInference, LangSmith run trees) as a dataset of saved answers, one case per trace.

A trace that cannot be read becomes a failed row naming the trace and the span, never a crash of
the whole load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core.data.dataset import EvalDataset
from .._core.data.rows import dataset_from_rows, too_deep_message
from .._core.errors import DatasetError, LevelfieldError
from . import langsmith, mlflow, otel
from .spans import TraceError, failed_row, json_loads, parse_json

__all__ = ["load_traces", "trace_rows"]


def _detect(item: Any) -> str:
    """Which reader a trace (or a file's parsed JSON) needs: ``mlflow``, ``otlp``, ``otel_sdk``, ``langsmith``."""
    if hasattr(item, "get_span_context") or (type(item).__name__ in ("ReadableSpan", "_Span", "Span") and hasattr(item, "context")):
        return "otel_sdk"
    if hasattr(item, "to_dict") and hasattr(item, "info") and hasattr(item, "data"):
        return "mlflow"
    if hasattr(item, "child_runs") and hasattr(item, "run_type"):
        return "langsmith"
    if isinstance(item, (str, bytes)):
        text = item.decode("utf-8", "replace") if isinstance(item, bytes) else item
        try:
            item = json_loads(text)
        except json.JSONDecodeError:
            return "broken"
    if isinstance(item, Mapping):
        if "resourceSpans" in item or "resource_spans" in item:
            return "otlp"
        if "info" in item and "data" in item:
            return "mlflow"
        if "run_type" in item:
            return "langsmith"
        if "traceId" in item and "spanId" in item:
            return "otlp_span"
    return "unknown"


def _unknown(item: Any) -> str:
    return (
        f"cannot tell what kind of trace this is ({type(item).__name__}: {str(item)[:80]!r}); "
        "expected an MLflow Trace (or its JSON), an OTLP JSON export ({\"resourceSpans\": ...}), "
        "OpenTelemetry SDK spans, or a LangSmith run tree"
    )


def trace_rows(traces: Any) -> list[dict[str, Any]]:
    """Rows (one per trace) from MLflow traces, OTLP JSON, OpenTelemetry SDK spans or LangSmith runs."""
    items = list(traces) if not isinstance(traces, (Mapping, str)) else [traces]
    if not items:
        return []
    kinds = [_detect(item) for item in items]
    if all(k == "unknown" for k in kinds):
        raise DatasetError(_unknown(items[0]))  # not traces at all: say what is expected
    rows: list[dict[str, Any]] = []
    if all(k in ("otel_sdk", "otlp_span") for k in kinds):
        return otel.rows_from_spans(items)
    if all(k == "langsmith" for k in kinds) and any(_flat_run(item) for item in items):
        return langsmith.rows_from_flat(items)
    for i, (item, kind) in enumerate(zip(items, kinds)):
        if kind == "unknown":
            rows.append(failed_row(None, TraceError(f"trace {i + 1}: {_unknown(item)}"), i))
        elif kind == "broken":
            text = item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item)  # a line: bytes or text
            try:
                json.loads(text)
            except json.JSONDecodeError as exc:
                tid = re.search(r'"(?:trace_id|request_id|traceId)"\s*:\s*"([^"]+)"', text)
                rows.append(failed_row(tid.group(1) if tid else None, TraceError(
                    f"trace {tid.group(1) if tid else i + 1}: not valid JSON ({exc.msg} at character {exc.pos}); "
                    "the trace may be cut short"), i))
        elif kind == "mlflow":
            rows.append(mlflow.row_from_trace(item, i))
        elif kind == "langsmith":
            rows.append(langsmith.row_from_run(item, i))
        elif kind == "otlp":
            rows.extend(otel.rows_from_otlp(parse_json(item)))
        else:
            rows.extend(otel.rows_from_spans([item]))
    return rows


def _flat_run(item: Any) -> bool:
    get = item.get if isinstance(item, Mapping) else lambda k: getattr(item, k, None)
    return bool(get("parent_run_id")) and not get("child_runs")


def _file_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a trace file: Parquet with a ``trace`` column, one JSON document (a trace, a list,
    an OTLP export), or JSON Lines read line by line so a large log never sits in memory whole."""
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pandas as pd

        return list(_frame_traces(pd.read_parquet(path), str(path)))
    if path.suffix != ".jsonl":
        text = path.read_text(encoding="utf-8")
        try:
            data = json_loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            _check_lines(path, text, exc)  # not one document: JSON Lines, unless the first line is no JSON either
            data = None
        if data is not None:
            return trace_rows(data if isinstance(data, list) else [data])
        del text
    rows: list[dict[str, Any]] = []
    loose_spans: list[Any] = []  # single spans per line: grouped by trace at the end
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json_loads(line)
            except json.JSONDecodeError as exc:
                rows.append(failed_row(None, TraceError(f"{path.name} line {n}: not valid JSON ({exc.msg}); expected one trace per line"), n))
                continue
            if isinstance(item, Mapping) and "traceId" in item and "spanId" in item:
                loose_spans.append(item)
            else:
                rows.extend(trace_rows([item]))
    if loose_spans:
        rows.extend(otel.rows_from_spans(loose_spans))
    return rows


def _check_lines(path: Path, text: str, error: Exception) -> None:
    """Raise a DatasetError naming the file when ``text`` is neither one JSON document nor JSON Lines:
    its first line is no JSON document of its own (a pretty-printed export cut short, most often)."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        json_loads(first)
        return
    except (json.JSONDecodeError, RecursionError):
        pass
    if isinstance(error, RecursionError) or "recursion" in str(error).lower():
        raise DatasetError(too_deep_message(str(path))) from None
    detail = getattr(error, "msg", None) or str(error)
    line = getattr(error, "lineno", None)
    at = f" at line {line}" if line else ""
    raise DatasetError(
        f"{path}: not valid JSON ({detail}{at}); the file may be cut short. Expected one JSON document "
        "(a trace, a list of traces, an OTLP export) or JSON Lines (one trace per line)"
    ) from None


class _Frame(list):
    """Rows already built from a DataFrame (``mlflow.search_traces`` output) by :func:`_frame_traces`."""


def _frame_traces(frame: Any, source: str) -> _Frame:
    if "trace" not in frame.columns:
        raise DatasetError(
            f"{source}: no 'trace' column; give mlflow.search_traces(...) output or a table with a 'trace' column"
        )
    from .databricks import fill_from_trace

    out = _Frame()
    for i, row in enumerate(frame.to_dict("records")):
        keep = {k: v for k, v in row.items() if k in ("request_id", "trace_id", "expected_response", "expected_facts",
                                                      "guidelines", "expected_retrieved_context", "trace")}
        out.append(fill_from_trace(keep, i, f"{source} row {i + 1}"))
    return out


def _rows(traces: Any, label: str) -> list[dict[str, Any]]:
    if isinstance(traces, (str, Path)):
        return _file_rows(Path(traces))
    if hasattr(traces, "columns") and hasattr(traces, "to_dict"):
        return list(_frame_traces(traces, label))
    return trace_rows(traces)


def _naming(label: str, message: str) -> str:
    """``message`` led by the file or source it is about, unless it names it already."""
    return message if message.startswith(label) or Path(label).name in message.split(":")[0] else f"{label}: {message}"


def load_traces(traces: Any, *, source: str | None = None) -> EvalDataset:
    """Load traces as a dataset of saved answers, ready to score without running any agent.

    ``traces`` may be a path (an OTLP JSON export, MLflow trace JSON, JSON Lines of either, a
    Parquet table with a ``trace`` column), ``mlflow.search_traces(...)`` output, a list of MLflow
    ``Trace`` objects, OpenTelemetry SDK spans (e.g. ``InMemorySpanExporter().get_finished_spans()``)
    or LangSmith run trees. One case per trace, its id the trace id.

    Args:
        traces: The traces, in any of the forms above.
        source: The name the dataset reports as its source (and errors name); default: the path, or ``"traces"``.

    Returns:
        An ``lf.EvalDataset`` of saved answers (``lf.evaluate(dataset, metrics=...)`` scores them).

    Raises:
        DatasetError: Traces that cannot be read, or none at all, naming the source.
    """
    label = source or (str(traces) if isinstance(traces, (str, Path)) else "traces")
    try:
        rows = _rows(traces, label)
    except DatasetError as exc:
        named = _naming(label, str(exc))
        if named == str(exc):
            raise
        raise type(exc)(named) from None
    except LevelfieldError:
        raise
    except (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        # A shape no reader foresaw: still an error naming the source, never a bare traceback.
        raise DatasetError(f"{label}: cannot be read as traces ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise DatasetError(f"{label}: holds no traces")
    seen: dict[str, int] = {}
    for row in rows:  # a trace logged twice stays two rows, told apart by a suffix
        rid = str(row.get("request_id"))
        seen[rid] = seen.get(rid, 0) + 1
        if seen[rid] > 1:
            row["request_id"] = f"{rid}#{seen[rid]}"
    return dataset_from_rows(rows, source=label)
