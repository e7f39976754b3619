"""MLflow traces: ``Trace`` objects and their JSON (schema v3, and v2's ``request_id``/``context``) read as rows.

MLflow stores a span's type, inputs and outputs as JSON-encoded attributes (``mlflow.spanType``,
``mlflow.spanInputs``, ``mlflow.spanOutputs``); TOOL spans are the trajectory, RETRIEVER spans
the retrieved context, AGENT spans own the tool calls below them, LLM / CHAT_MODEL spans carry
token usage (``mlflow.chat.tokenUsage``). mlflow itself is never imported: a ``Trace`` is read
through its ``to_dict()``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._core.data.token_counts import counted_usage
from .spans import (
    AGENT,
    LLM,
    OTHER,
    RETRIEVER,
    TOOL,
    Span,
    TraceError,
    check_parents,
    count_of,
    documents_of,
    failed_row,
    hex_id,
    json_loads,
    row_from_spans,
)

__all__ = ["spans_from_trace", "row_from_trace", "trace_dict", "classify_attributes"]

_KINDS = {
    "TOOL": TOOL,
    "FUNCTION": TOOL,
    "AGENT": AGENT,
    "RETRIEVER": RETRIEVER,
    "LLM": LLM,
    "CHAT_MODEL": LLM,
}


def trace_dict(trace: Any) -> dict[str, Any]:
    """An MLflow trace as a dict: a ``Trace`` object, its JSON text, or the dict itself."""
    if hasattr(trace, "to_dict"):
        return trace.to_dict()
    if isinstance(trace, (str, bytes)):
        try:
            trace = json_loads(trace)
        except json.JSONDecodeError as exc:
            raise TraceError(f"MLflow trace: not valid JSON ({exc.msg}) at character {exc.pos}") from None
    if not isinstance(trace, Mapping):
        raise TraceError(f"MLflow trace: expected a Trace, its JSON or a dict, got {type(trace).__name__}")
    return dict(trace)


def _attr(attributes: Mapping[str, Any], key: str, where: str) -> Any:
    """An MLflow span attribute, stored JSON-encoded; text that is not JSON is an unreadable span."""
    value = attributes.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json_loads(value)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: attribute {key!r} is not valid JSON ({exc.msg}): {value[:60]!r}") from None


def _ns(value: Any, where: str, field: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {field} is not a time in nanoseconds: {value!r}") from None


def _error(raw: Mapping[str, Any]) -> str | None:
    status = raw.get("status") or {}
    code = status.get("code") if isinstance(status, Mapping) else raw.get("status_code")
    code = code or raw.get("status_code")
    for event in raw.get("events") or []:
        if isinstance(event, Mapping) and event.get("name") == "exception":
            attrs = event.get("attributes") or {}
            message = attrs.get("exception.message") or attrs.get("exception.type")
            if message:
                return str(message)
    if code in ("STATUS_CODE_ERROR", "ERROR", 2):
        message = status.get("message") if isinstance(status, Mapping) else raw.get("status_message")
        return str(message or "the span ended with status ERROR")
    return None


def classify_attributes(span: Span, attributes: Mapping[str, Any], where: str) -> Span:
    """Fill ``span``'s kind, inputs, outputs, tool, agent, documents and usage from MLflow's span
    attributes (JSON-encoded); an attribute that is not JSON raises :class:`TraceError` naming ``where``."""
    span_type = _attr(attributes, "mlflow.spanType", where)
    span.kind = _KINDS.get(str(span_type).upper(), OTHER) if span_type else OTHER
    span.inputs = _attr(attributes, "mlflow.spanInputs", where)
    span.outputs = _attr(attributes, "mlflow.spanOutputs", where)
    if span.kind == TOOL:
        span.tool_name = span.name
    elif span.kind == AGENT:
        span.agent_name = span.name
    elif span.kind == RETRIEVER:
        span.documents = documents_of(span.outputs) or []
    elif span.kind == LLM:
        usage = _attr(attributes, "mlflow.chat.tokenUsage", where)
        if isinstance(usage, Mapping):
            # MLflow's input_tokens counts cache reads and writes (its autologgers add Anthropic's back).
            span.usage = counted_usage(
                int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), int(usage.get("total_tokens") or 0),
                cache_read=count_of(usage, "cache_read_input_tokens"), cache_write=count_of(usage, "cache_creation_input_tokens"))
    return span


def spans_from_trace(trace: Any) -> tuple[str, list[Span]]:
    """The trace id and the spans of one MLflow trace; a span that cannot be read raises :class:`TraceError`."""
    data = trace_dict(trace)
    info = data.get("info") or {}
    trace_id = info.get("trace_id") or info.get("request_id") or "unknown"
    raw_spans = (data.get("data") or {}).get("spans")
    if not isinstance(raw_spans, list):
        raise TraceError(f"trace {trace_id}: no 'data.spans' list; is this an MLflow trace?")
    spans = []
    for i, raw in enumerate(raw_spans):
        if not isinstance(raw, Mapping):
            raise TraceError(f"trace {trace_id}, span {i}: expected an object, got {type(raw).__name__}")
        context = raw.get("context") or {}
        span_id = raw.get("span_id") or context.get("span_id")
        name = raw.get("name") or f"span {i}"
        where = f"trace {trace_id}, span {name!r} ({span_id or i})"
        if not span_id:
            raise TraceError(f"{where}: no span id")
        attributes = raw.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            raise TraceError(f"{where}: attributes are not an object")
        span = Span(
            trace_id=trace_id,
            span_id=hex_id(span_id, 16) or str(span_id),
            parent_id=hex_id(raw.get("parent_span_id", raw.get("parent_id")), 16),
            name=name,
            start=_ns(raw.get("start_time_unix_nano", raw.get("start_time")), where, "start time") or 0,
            end=_ns(raw.get("end_time_unix_nano", raw.get("end_time")), where, "end time"),
            error=_error(raw),
        )
        classify_attributes(span, attributes, where)
        spans.append(span)
    return trace_id, spans


def row_from_trace(trace: Any, index: int = 0) -> dict[str, Any]:
    """One MLflow trace as a dataset row; an unreadable trace is a failed row naming the trace and span."""
    trace_id = None
    try:
        trace_id, spans = spans_from_trace(trace)
        check_parents(trace_id, spans)  # MLflow stores whole traces: a missing parent is a lost span
        row = row_from_spans(trace_id, spans)
    except TraceError as exc:
        return failed_row(trace_id or _guess_id(trace), exc, index)
    return row


def _guess_id(trace: Any) -> str | None:
    try:
        info = trace_dict(trace).get("info") or {}
    except TraceError:
        return None
    return info.get("trace_id") or info.get("request_id")
