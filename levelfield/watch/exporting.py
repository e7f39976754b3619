"""Where the watcher's scores and alerts go besides the journal: an OTLP/HTTP endpoint.

Scores travel as ``lf.export_scores`` sends them (``gen_ai.evaluation.result`` events on a span
parented to the scored trace); a drift alert as a ``levelfield.drift_alert`` span with one
``levelfield.alert`` event per metric that dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core.errors import MissingExtraError

__all__ = ["otlp_exporter", "export_alert"]


def otlp_exporter(endpoint: str) -> Any:
    """An OTLP/HTTP span exporter for ``endpoint`` (a base URL gets ``/v1/traces``), kept open across
    ``export_scores`` calls (which shut down the exporter they are given)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    except ImportError:
        raise MissingExtraError("watch", "opentelemetry-exporter-otlp-proto-http", "levelfield watch --export-otlp") from None
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    inner = OTLPSpanExporter(endpoint=url, timeout=10)

    class KeepOpen(SpanExporter):
        """Passes spans on; shutting it down (each export_scores call does) leaves the connection open."""

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return inner.export(spans)

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

        def close(self) -> None:
            inner.shutdown()

    return KeepOpen()


def export_alert(exporter: Any, window: str, changes: Sequence[Any]) -> None:
    """Send one drift alert (the regressions of ``window``) through ``exporter``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from .._core.stats.change import describe_change

    provider = TracerProvider(resource=Resource.create({"service.name": "levelfield"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("levelfield")
    with tracer.start_as_current_span("levelfield.drift_alert", attributes={"levelfield.window": window}) as span:
        for c in changes:
            span.add_event("levelfield.alert", attributes={
                "gen_ai.evaluation.name": c.metric, "levelfield.window": window, "levelfield.difference": float(c.difference),
                "levelfield.p_holm": float(c.p_adjusted), "levelfield.test": c.test, "levelfield.words": describe_change(c),
            })
    provider.force_flush()
    provider.shutdown()
