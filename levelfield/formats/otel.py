"""OpenTelemetry traces: OTLP JSON exports and SDK spans read as rows, and scores written back as spans.

Spans are read by the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name`` =
``execute_tool`` / ``invoke_agent`` / ``chat``, ``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``
and ``.result``, ``gen_ai.usage.*``), or by OpenInference's when a span carries
``openinference.span.kind`` (see :mod:`levelfield.formats.openinference`). Spans are grouped by
trace id: one row per trace.

:func:`export_scores` sends one ``gen_ai.evaluation.result`` event per metric and case to any
OpenTelemetry ``SpanExporter``, on a span parented to the trace and span the case came from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._core.data.token_counts import counted_usage
from . import openinference
from .spans import (
    AGENT,
    LLM,
    OTHER,
    RETRIEVER,
    TOOL,
    Span,
    TraceError,
    count_of,
    documents_of,
    failed_row,
    hex_id,
    parse_json,
    row_from_spans,
)

__all__ = ["rows_from_otlp", "rows_from_spans", "span_from_sdk", "spans_from_otlp", "export_scores", "hex_id", "classify", "error_of"]

_LLM_OPERATIONS = {"chat", "text_completion", "generate_content", "completion"}
_RETRIEVAL_OPERATIONS = {"retrieval", "retrieve", "search"}


_SCALARS = {
    "stringValue": str, "string_value": str, "intValue": int, "int_value": int,
    "doubleValue": float, "double_value": float, "boolValue": bool, "bool_value": bool,
}


def _any_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` ({"stringValue": ...}, {"intValue": "3"}, arrays, kvlists) as Python."""
    if type(value) is not dict or len(value) != 1:
        return value if not isinstance(value, Mapping) else None
    ((key, inner),) = value.items()
    cast = _SCALARS.get(key)
    if cast is not None:
        return cast(inner)
    if key in ("arrayValue", "array_value"):
        return [_any_value(v) for v in (inner or {}).get("values", [])]
    if key in ("kvlistValue", "kvlist_value"):
        return _attributes((inner or {}).get("values", []))
    if key in ("bytesValue", "bytes_value"):
        return inner
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if isinstance(items, Mapping):
        return dict(items)
    out = {}
    for item in items or ():
        if type(item) is dict and "key" in item:
            out[item["key"]] = _any_value(item.get("value"))
    return out


def _first(attrs: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None:
            return value
    return None


def classify(span: Span, attrs: Mapping[str, Any]) -> Span:
    """Fill ``span``'s kind, inputs, outputs, tool and usage fields from its attributes."""
    if openinference.SPAN_KIND in attrs:
        return openinference.classify(span, attrs)
    op = attrs.get("gen_ai.operation.name")
    if op is None and "gen_ai.tool.name" not in attrs and _MLFLOW_TYPE in attrs:
        return _mlflow_classify(span, attrs)
    _genai_classify(span, attrs, op)
    if _MLFLOW_INPUTS in attrs or _MLFLOW_OUTPUTS in attrs:
        # MLflow's OTLP export (dual export, GenAI conventions on) names the operation but keeps
        # what went in and out in its own attributes: read them where the GenAI ones are missing.
        if span.inputs is None:
            span.inputs = parse_json(attrs.get(_MLFLOW_INPUTS))
        if span.outputs is None:
            span.outputs = parse_json(attrs.get(_MLFLOW_OUTPUTS))
    return span


_MLFLOW_TYPE, _MLFLOW_INPUTS, _MLFLOW_OUTPUTS = "mlflow.spanType", "mlflow.spanInputs", "mlflow.spanOutputs"


def _mlflow_classify(span: Span, attrs: Mapping[str, Any]) -> Span:
    """A span MLflow tracing exported over OTLP as it stores it (``mlflow.spanType`` and JSON inputs/outputs)."""
    from .mlflow import classify_attributes

    return classify_attributes(span, {k: v for k, v in attrs.items() if k.startswith("mlflow.")},
                               f"OTLP span {span.name!r} ({span.span_id})")


def _genai_classify(span: Span, attrs: Mapping[str, Any], op: Any) -> Span:
    """The GenAI semantic conventions' reading of a span."""
    if op == "execute_tool" or (op is None and "gen_ai.tool.name" in attrs):
        span.kind = TOOL
        span.tool_name = attrs.get("gen_ai.tool.name") or span.name
        span.tool_call_id = attrs.get("gen_ai.tool.call.id")
        span.inputs = _first(attrs, "gen_ai.tool.call.arguments", "tool_arguments")
        span.outputs = _first(attrs, "gen_ai.tool.call.result", "tool_response")
    elif op in ("invoke_agent", "create_agent"):
        span.kind = AGENT
        span.agent_name = attrs.get("gen_ai.agent.name") or attrs.get("agent_name") or span.name
        span.inputs = _first(attrs, "gen_ai.input.messages", "pydantic_ai.all_messages", "all_messages_events")
        span.outputs = _first(attrs, "gen_ai.output.messages", "final_result")
    elif op in _LLM_OPERATIONS:
        span.kind = LLM
        span.inputs = attrs.get("gen_ai.input.messages")
        span.outputs = attrs.get("gen_ai.output.messages")
        # The GenAI conventions' parts, each included in its total (older spellings after the current one).
        span.usage = counted_usage(
            int(attrs.get("gen_ai.usage.input_tokens") or 0), int(attrs.get("gen_ai.usage.output_tokens") or 0),
            cache_read=count_of(attrs, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"),
            cache_write=count_of(attrs, "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens"),
            reasoning=count_of(attrs, "gen_ai.usage.reasoning.output_tokens"),
            model=attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"))
        span.extra["requested"] = _requested_calls(span.outputs)
    elif op in _RETRIEVAL_OPERATIONS:
        span.kind = RETRIEVER
        span.inputs = _first(attrs, "gen_ai.retrieval.query.text", "gen_ai.input.messages")
        span.outputs = _first(attrs, "gen_ai.retrieval.documents", "gen_ai.output.messages")
        span.documents = documents_of(span.outputs) or []
    else:
        span.kind = OTHER
        span.agent_name = attrs.get("gen_ai.agent.name")
    return span


def _requested_calls(messages: Any) -> dict[str, Any]:
    """Call id -> arguments of the ``tool_call`` parts of a model span's GenAI output messages."""
    out: dict[str, Any] = {}
    messages = parse_json(messages)
    for message in messages if isinstance(messages, list) else []:
        for part in (message.get("parts") or []) if isinstance(message, Mapping) else []:
            if isinstance(part, Mapping) and part.get("type") == "tool_call" and part.get("id"):
                out[str(part["id"])] = parse_json(part.get("arguments"))
    return out


def error_of(status_code: Any, description: Any, events: Iterable[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The error a span recorded: the message of its first exception event, else its ERROR status."""
    for name, attrs in events:
        if name == "exception":
            message = attrs.get("exception.message") or attrs.get("exception.type")
            if message:
                return str(message)
    if status_code in (2, "STATUS_CODE_ERROR", "ERROR", "StatusCode.ERROR"):
        return str(description or "the span ended with status ERROR")
    return None


def span_from_sdk(sdk_span: Any) -> Span:
    """An OpenTelemetry SDK span (``ReadableSpan``) as a :class:`Span`."""
    ctx = sdk_span.context
    parent = getattr(sdk_span, "parent", None)
    status = getattr(sdk_span, "status", None)
    code = getattr(getattr(status, "status_code", None), "name", None)
    attrs = dict(sdk_span.attributes or {})
    span = Span(
        trace_id=hex_id(ctx.trace_id, 32) or "",
        span_id=hex_id(ctx.span_id, 16) or "",
        parent_id=hex_id(parent.span_id, 16) if parent is not None else None,
        name=sdk_span.name,
        start=int(sdk_span.start_time or 0),
        end=None if sdk_span.end_time is None else int(sdk_span.end_time),
        error=error_of(code, getattr(status, "description", None), ((e.name, e.attributes or {}) for e in sdk_span.events)),
    )
    return classify(span, attrs)


def _span_from_json(raw: Mapping[str, Any], index: int, keep: frozenset[str] = frozenset(),
                    resource: Mapping[str, Any] | None = None) -> Span:
    trace_id = hex_id(raw.get("traceId", raw.get("trace_id")), 32)
    span_id = hex_id(raw.get("spanId", raw.get("span_id")), 16)
    name = raw.get("name") or f"span {index}"
    if not trace_id or not span_id:
        raise TraceError(f"OTLP span {name!r} (#{index + 1}): no {'traceId' if not trace_id else 'spanId'}")
    where = f"trace {trace_id}, span {name!r} ({span_id})"

    def ns(key: str, alt: str) -> int | None:
        value = raw.get(key, raw.get(alt))
        if value in (None, "", "0", 0):
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            raise TraceError(f"{where}: {key} is not a time in nanoseconds: {value!r}") from None

    attrs = _attributes(raw.get("attributes"))
    status = raw.get("status") or {}
    events = [(str(e.get("name")), _attributes(e.get("attributes"))) for e in raw.get("events") or [] if isinstance(e, Mapping)]
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=hex_id(raw.get("parentSpanId", raw.get("parent_span_id")), 16),
        name=name,
        start=ns("startTimeUnixNano", "start_time_unix_nano") or 0,
        end=ns("endTimeUnixNano", "end_time_unix_nano"),
        error=error_of(status.get("code"), status.get("message"), events),
    )
    if keep:
        keep_attributes(span, attrs, keep, resource)
    return classify(span, attrs)


def keep_attributes(span: Span, attrs: Mapping[str, Any], keep: frozenset[str], resource: Mapping[str, Any] | None) -> None:
    """Keep the ``keep`` keys of the span's attributes (else of its resource's) in ``span.extra["attributes"]``."""
    kept = {k: v for k, v in (resource or {}).items() if k in keep}
    kept.update((k, attrs[k]) for k in keep if k in attrs)
    if kept:
        span.extra["attributes"] = kept


def spans_from_otlp(data: Mapping[str, Any], *, keep: frozenset[str] = frozenset()) -> Iterable[Span | TraceError]:
    """Every span of an OTLP JSON export (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``).

    A span that cannot be read is yielded as the :class:`TraceError` saying why, so the rest load.
    ``keep``: span or resource attribute keys kept as they are in ``span.extra["attributes"]``.
    """
    index = 0
    for r, resource in enumerate(_items(data, ("resourceSpans", "resource_spans"), "OTLP export")):
        where = f"resourceSpans[{r}]"
        shared = None
        if keep:
            res = resource.get("resource") if isinstance(resource, Mapping) else None
            shared = {k: v for k, v in _attributes(res.get("attributes") if isinstance(res, Mapping) else None).items()
                      if k in keep}
        for s, scope in enumerate(_items(resource, ("scopeSpans", "scope_spans"), where)):
            for raw in _items(scope, ("spans",), f"{where}.scopeSpans[{s}]"):
                try:
                    yield _span_from_json(raw, index, keep, shared)
                except TraceError as exc:
                    exc.trace_id = hex_id(  # type: ignore[attr-defined]  # the trace it spoils, read by _group
raw.get("traceId", raw.get("trace_id")), 32) if isinstance(raw, Mapping) else None
                    yield exc
                except Exception as exc:  # a span of the wrong shape must not lose the other traces
                    err = TraceError(f"OTLP span #{index + 1}: cannot be read ({type(exc).__name__}: {exc})")
                    err.trace_id = hex_id(raw.get("traceId"), 32) if isinstance(raw, Mapping) else None  # type: ignore[attr-defined]
                    yield err
                index += 1


def _items(data: Any, keys: Sequence[str], where: str) -> list[Any]:
    """The list under the first of ``keys`` in an OTLP JSON object; a TraceError naming the field
    when ``data`` is not an object or the field is not a list."""
    if not isinstance(data, Mapping):
        raise TraceError(f"{where}: expected an object, got {type(data).__name__} {str(data)[:40]!r}")
    for key in keys:
        if key in data:
            value = data[key]
            if value is None:
                return []
            if not isinstance(value, list):
                raise TraceError(f"{where}, field '{key}': expected a list, got {type(value).__name__} {str(value)[:40]!r}")
            return value
    return []


def _group(spans: Iterable[Span | TraceError]) -> list[dict[str, Any]]:
    traces: dict[str, list[Span]] = {}
    broken: dict[str, TraceError] = {}
    unknown: list[TraceError] = []
    for span in spans:
        if isinstance(span, TraceError):
            tid = getattr(span, "trace_id", None)
            if tid:
                broken.setdefault(tid, span)
                traces.setdefault(tid, [])
            else:
                unknown.append(span)
            continue
        traces.setdefault(span.trace_id, []).append(span)
    rows = []
    for i, (trace_id, members) in enumerate(traces.items()):
        if trace_id in broken:
            rows.append(failed_row(trace_id, broken[trace_id], i))
            continue
        try:
            rows.append(row_from_spans(trace_id, members))
        except TraceError as exc:
            rows.append(failed_row(trace_id, exc, i))
    for j, unread in enumerate(unknown):
        rows.append(failed_row(None, unread, len(traces) + j))
    return rows


def rows_from_otlp(data: Any) -> list[dict[str, Any]]:
    """One row per trace of an OTLP JSON export; unreadable spans make their trace a failed row."""
    if isinstance(data, Mapping):
        return _group(spans_from_otlp(data))
    if isinstance(data, Sequence) and not isinstance(data, str):
        def every() -> Iterable[Span | TraceError]:
            for item in data:
                yield from spans_from_otlp(item)

        return _group(every())
    raise TraceError(f"OTLP export: expected an object with 'resourceSpans', got {type(data).__name__}")


def rows_from_spans(spans: Iterable[Any]) -> list[dict[str, Any]]:
    """One row per trace of OpenTelemetry SDK spans (or single OTLP JSON spans), in first-seen order."""

    def convert() -> Iterable[Span | TraceError]:
        for i, item in enumerate(spans):
            try:
                yield _span_from_json(item, i) if isinstance(item, Mapping) else span_from_sdk(item)
            except TraceError as exc:
                yield exc

    return _group(convert())


# --- writing scores back -------------------------------------------------------------------------


def _ids_of(case: Any, run: Any) -> tuple[str | None, str | None]:
    meta = getattr(case, "metadata", {}) or {}
    trace_id, span_id = meta.get("trace_id"), meta.get("span_id")
    raw = getattr(getattr(run, "output", None), "raw", None)
    if (not trace_id) and isinstance(raw, Mapping):
        trace_id, span_id = raw.get("trace_id"), raw.get("span_id")
    return (str(trace_id) if trace_id else None), (str(span_id) if span_id else None)


def export_scores(result: Any, exporter: Any, *, service_name: str = "levelfield") -> int:
    """Send every score of ``result`` to an OpenTelemetry ``SpanExporter``; returns the number of events.

    Per case and trial one ``gen_ai.evaluation`` span is emitted, parented to the case's source
    trace and span when the case came from a trace (``trace_id``/``span_id``), with one
    ``gen_ai.evaluation.result`` event per metric carrying ``gen_ai.evaluation.name``,
    ``gen_ai.evaluation.score.value`` and, when the metric explains, ``gen_ai.evaluation.explanation``.
    A NaN score (not computable, failed run) is sent with ``error.type`` saying so, not dropped.
    Each event carries its evaluator's identity when the result knows it (``result.evaluators``):
    ``levelfield.evaluator.<metric>.fingerprint``, ``.version``, ``.judge_model``, ``.judge_settings``,
    ``.prompt_sha256``, ``.rubrics_sha256``... (see ``Evaluator.attributes``).
    """
    try:
        from opentelemetry import trace as otel_trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    except ImportError:
        from .._core.errors import MissingExtraError

        raise MissingExtraError("traces", "opentelemetry-sdk", "lf.export_scores") from None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("levelfield")
    cases = {c.case_id: c for c in result.dataset}
    names = [m.name for m in result.metrics]
    known = getattr(result, "evaluators", None) or {}
    provenance = {name: known[name].attributes() for name in names if name in known}
    events = 0
    for run, scores in zip(result.runs, result.row_scores):
        case = cases.get(run.case_id)
        trace_id, span_id = _ids_of(case, run)
        context = None
        otel_trace_id = trace_id[3:] if trace_id and trace_id.startswith("tr-") else trace_id  # MLflow's "tr-<hex>"
        if otel_trace_id and span_id:
            try:
                parent = otel_trace.SpanContext(
                    trace_id=int(otel_trace_id, 16), span_id=int(span_id, 16), is_remote=True,
                    trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED),
                )
                context = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(parent))
            except ValueError:
                context = None  # ids that are not OpenTelemetry hex (an MLflow "tr-..." id): keep them as attributes
        attributes = {"gen_ai.operation.name": "evaluation", "levelfield.case_id": run.case_id, "levelfield.trial": run.trial}
        if trace_id:
            attributes["levelfield.source.trace_id"] = trace_id
        with tracer.start_as_current_span("gen_ai.evaluation", context=context, attributes=attributes) as span:
            for name in names:
                score = scores.get(name) if isinstance(scores, Mapping) else None
                value = getattr(score, "value", math.nan)
                event = {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": float(value)}
                if explanation := getattr(score, "explanation", None):
                    event["gen_ai.evaluation.explanation"] = str(explanation)
                if math.isnan(float(value)):
                    event["error.type"] = "run_failed" if run.failure else "not_computable"
                if span_id:
                    event["gen_ai.evaluation.source.span_id"] = span_id
                event.update(provenance.get(name, {}))
                span.add_event("gen_ai.evaluation.result", attributes=event)
                events += 1
    provider.force_flush()
    provider.shutdown()
    return events
