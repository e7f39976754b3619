"""Traces put together from spans that arrive in pieces.

Spans of one trace may come in several requests (each service exports its own, a batch
processor exports whatever has ended). A trace is complete when its root span (the one with no
parent) arrives, since exporters send a span when it ends and the root ends last; a trace whose
root never comes (a crashed process, a root in a service that does not export here) is complete
``timeout`` seconds after its last span arrived. A span repeated by an exporter's retry is kept once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..formats.spans import Span

__all__ = ["Assembler", "Trace"]


@dataclass
class Trace:
    """A trace being put together (or complete): its spans by span id."""

    trace_id: str
    spans: dict[str, Span] = field(default_factory=dict)
    last_seen: float = 0.0
    has_root: bool = False
    timed_out: bool = False

    @property
    def end(self) -> float | None:
        """When the trace ended (seconds since the epoch): the latest span end, None when no span says."""
        ends = [s.end for s in self.spans.values() if s.end]
        return max(ends) / 1e9 if ends else None


class Assembler:
    """Open traces, oldest activity first; used from one event loop."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._open: OrderedDict[str, Trace] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, trace_id: str) -> bool:
        return trace_id in self._open

    def add(self, spans: Iterable[Span], now: float) -> list[Trace]:
        """Add spans; returns the traces their arrival completed (a root span came)."""
        touched: dict[str, Trace] = {}
        for span in spans:
            trace = self._open.get(span.trace_id)
            if trace is None:
                trace = self._open[span.trace_id] = Trace(span.trace_id)
            else:
                self._open.move_to_end(span.trace_id)
            trace.spans[span.span_id] = span
            trace.last_seen = now
            if not span.parent_id:
                trace.has_root = True
            touched[span.trace_id] = trace
        done = [t for t in touched.values() if t.has_root]
        for trace in done:
            del self._open[trace.trace_id]
        return done

    def expire(self, now: float) -> list[Trace]:
        """The traces with no span for ``timeout`` seconds, taken out as complete."""
        out = []
        while self._open:
            trace = next(iter(self._open.values()))
            if now - trace.last_seen < self.timeout:
                break
            del self._open[trace.trace_id]
            trace.timed_out = True
            out.append(trace)
        return out
