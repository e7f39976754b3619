"""Traces put together from spans that arrive in pieces.

Spans of one trace may come in several requests (each service exports its own, a batch
processor exports whatever has ended). Exporters send a span when it ends and the root ends last,
but "last to end" is not "last to arrive": a child exported by another service, or by a batch
processor whose batch left after the root's, can arrive after its root. So a trace whose root
span (the one with no parent) came is held ``grace`` seconds more for such late children, then
complete; no span names its children, so nothing short of the grace says that all have come
(``grace=0``: complete when the root comes). A trace whose root never comes (a crashed process, a
root in a service that does not export here) is complete ``timeout`` seconds after its last span
arrived. A span repeated by an exporter's retry is kept once. Spans that come after their trace
was complete are the watcher's to count (:mod:`levelfield.watch.service`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .._core.errors import ConfigError
from ..formats.spans import Span

__all__ = ["DEFAULT_GRACE", "MAX_GRACE", "Assembler", "Trace", "check_grace"]

DEFAULT_GRACE = 2.0
"""Seconds a trace is held after its root arrived, for children that come after it."""
MAX_GRACE = 300.0
"""The longest grace accepted: every trace is held that long, in memory and before it is scored."""


def check_grace(grace: object, timeout: float | None = None) -> float:
    """``grace`` as seconds, or a ConfigError saying what is allowed."""
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not 0 <= grace <= MAX_GRACE:
        raise ConfigError(f"late_grace={grace!r}: give the seconds a trace is held after its root span for late "
                          f"child spans, from 0 (score at once) to {MAX_GRACE:g} (default {DEFAULT_GRACE:g})")
    if timeout is not None and grace > timeout:
        raise ConfigError(f"late_grace={grace!r} is longer than trace_timeout={timeout!r}: a trace without a root "
                          "would be scored before one whose root came; give a grace up to the trace timeout")
    return float(grace)


@dataclass
class Trace:
    """A trace being put together (or complete): its spans by span id."""

    trace_id: str
    spans: dict[str, Span] = field(default_factory=dict)
    last_seen: float = 0.0
    has_root: bool = False
    timed_out: bool = False
    root_at: float | None = None
    """When its root span arrived (the grace runs from then)."""

    @property
    def end(self) -> float | None:
        """When the trace ended (seconds since the epoch): the latest span end, None when no span says."""
        ends = [s.end for s in self.spans.values() if s.end]
        return max(ends) / 1e9 if ends else None


class Assembler:
    """Open traces, oldest activity first; used from one event loop. ``grace``: see the module."""

    def __init__(self, timeout: float, grace: float = 0.0) -> None:
        self.timeout = timeout
        self.grace = check_grace(grace)
        self._open: OrderedDict[str, Trace] = OrderedDict()
        self._rooted: OrderedDict[str, float] = OrderedDict()  # trace id -> when its grace ends, in that order

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, trace_id: str) -> bool:
        return trace_id in self._open

    def add(self, spans: Iterable[Span], now: float) -> list[Trace]:
        """Add spans; returns the traces their arrival completed (a root span came, and no grace is given)."""
        touched: dict[str, Trace] = {}
        for span in spans:
            trace = self._open.get(span.trace_id)
            if trace is None:
                trace = self._open[span.trace_id] = Trace(span.trace_id)
            else:
                self._open.move_to_end(span.trace_id)
            trace.spans[span.span_id] = span
            trace.last_seen = now
            if not span.parent_id and not trace.has_root:
                trace.has_root = True
                trace.root_at = now
                if self.grace > 0:
                    self._rooted[trace.trace_id] = now + self.grace
            touched[span.trace_id] = trace
        if self.grace > 0:
            return []
        done = [t for t in touched.values() if t.has_root]
        for trace in done:
            del self._open[trace.trace_id]
        return done

    def expire(self, now: float) -> list[Trace]:
        """The traces complete by ``now``: rooted ones whose grace has passed, and those with no span
        for ``timeout`` seconds (timed out); taken out."""
        out = []
        while self._rooted:
            trace_id, until = next(iter(self._rooted.items()))
            if until > now:
                break
            del self._rooted[trace_id]
            out.append(self._open.pop(trace_id))
        while self._open:
            trace = next(iter(self._open.values()))
            if now - trace.last_seen < self.timeout:
                break
            del self._open[trace.trace_id]
            self._rooted.pop(trace.trace_id, None)
            trace.timed_out = not trace.has_root
            out.append(trace)
        return out
