"""OTLP protobuf: an ``ExportTraceServiceRequest`` (what OpenTelemetry's OTLP/HTTP exporters and the
Collector POST to ``/v1/traces``) read into the common span model, and the reply such a request expects.

The message types come from ``opentelemetry-proto`` (imported when first used); spans are read
straight from the decoded message, without a detour through JSON, and classified by the same
GenAI / OpenInference rules as OTLP JSON (:func:`levelfield.formats.otel.classify`).
"""

from __future__ import annotations

from typing import Any

from .._core.errors import MissingExtraError, TraceError
from .otel import classify, error_of, keep_attributes
from .spans import Span

__all__ = ["spans_from_protobuf", "export_response"]


def _messages() -> Any:
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise MissingExtraError("watch", "opentelemetry-proto", "reading OTLP protobuf") from None
    return trace_service_pb2


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as Python: scalars as they are, arrays as lists, kvlists as dicts, bytes as hex."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind)


def _span(raw: Any, index: int, keep: frozenset[str] = frozenset(), resource: dict[str, Any] | None = None) -> Span:
    trace_id, span_id = raw.trace_id.hex(), raw.span_id.hex()
    if len(trace_id) != 32 or len(span_id) != 16:
        what = "traceId" if len(trace_id) != 32 else "spanId"
        raise TraceError(f"OTLP span {raw.name!r} (#{index + 1}): {what} of the wrong length ({len(trace_id if what == 'traceId' else span_id) // 2} bytes)")
    attrs = {kv.key: _value(kv.value) for kv in raw.attributes}
    events = (
        (e.name, {kv.key: _value(kv.value) for kv in e.attributes}) for e in raw.events if e.name == "exception"
    )
    span = Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=raw.parent_span_id.hex() or None,
        name=raw.name or f"span {index}",
        start=int(raw.start_time_unix_nano),
        end=int(raw.end_time_unix_nano) or None,
        error=error_of(int(raw.status.code), raw.status.message, events),
    )
    if keep:
        keep_attributes(span, attrs, keep, resource)
    return classify(span, attrs)


def spans_from_protobuf(body: bytes, *, keep: frozenset[str] = frozenset()) -> list[Span | TraceError]:
    """Every span of a protobuf ``ExportTraceServiceRequest``; a span that cannot be read is the
    :class:`TraceError` saying why (with its ``trace_id``), so the rest are kept. ``keep``: span or
    resource attribute keys kept as they are in ``span.extra["attributes"]``.

    A body that is no such message at all raises :class:`TraceError`.
    """
    from google.protobuf.message import DecodeError

    request = _messages().ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise TraceError(f"not an OTLP ExportTraceServiceRequest in protobuf ({exc})") from None
    out: list[Span | TraceError] = []
    index = 0
    for resource in request.resource_spans:
        shared = {kv.key: _value(kv.value) for kv in resource.resource.attributes if kv.key in keep} if keep else None
        for scope in resource.scope_spans:
            for raw in scope.spans:
                try:
                    out.append(_span(raw, index, keep, shared))
                except TraceError as exc:
                    exc.trace_id = raw.trace_id.hex() or None  # type: ignore[attr-defined]
                    out.append(exc)
                except Exception as exc:  # a span of an unforeseen shape must not lose the others
                    err = TraceError(f"OTLP span #{index + 1}: cannot be read ({type(exc).__name__}: {exc})")
                    err.trace_id = raw.trace_id.hex() or None  # type: ignore[attr-defined]
                    out.append(err)
                index += 1
    return out


def export_response(rejected: int = 0, message: str = "", *, json: bool = False) -> bytes:
    """The body of a successful ``/v1/traces`` reply: an ``ExportTraceServiceResponse``, with
    ``partial_success`` when some spans were rejected, as protobuf or (``json=True``) OTLP JSON."""
    if json:
        import json as _json

        body: dict[str, Any] = {}
        if rejected:
            body["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
        return _json.dumps(body).encode()
    response = _messages().ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return response.SerializeToString()
