"""What the watcher has seen and done since it started: its counters and the time to score (``out/status.json``)."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["WatchStats"]


@dataclass
class WatchStats:
    """What the watcher has seen and done since it started (also written to ``out/status.json``)."""

    requests: int = 0
    accepted_requests: int = 0
    bad_requests: int = 0
    """Malformed requests answered 400 (or 413/415)."""
    unauthorized: int = 0
    shed_requests: int = 0
    """Requests answered 503 because the queue was full (exporters send them again)."""
    shed_traces: int = 0
    """Traces in the shed requests."""
    spans: int = 0
    rejected_spans: int = 0
    """Spans that could not be read (reported back as OTLP partial success)."""
    sampled_out_traces: int = 0
    late_spans: int = 0
    """Spans of a trace already scored (after its grace or its trace timeout), dropped; each is marked in
    ``late_spans.jsonl`` under its trace."""
    late_traces: int = 0
    """Traces scored without spans that came later (the first time each was seen late)."""
    duplicate_traces: int = 0
    replayed_requests: int = 0
    """Spooled requests read back at start (left by a previous run)."""
    timed_out_traces: int = 0
    scored_traces: int = 0
    failed_traces: int = 0
    alerts: int = 0
    judge_skipped_for_budget: int = 0
    """Judged scores not asked for because the hour's judge budget (``max_cost``) was spent."""
    mlflow_assessments: int = 0
    """Scores logged to MLflow as assessments on their traces."""
    mlflow_failed_traces: int = 0
    """Traces whose assessments MLflow refused after every retry (their scores are journaled)."""
    mlflow_missing_traces: int = 0
    """Traces sent to MLflow that MLflow does not hold (nothing logged for them)."""
    time_to_score: deque = field(default_factory=lambda: deque(maxlen=100_000), repr=False)
    """Seconds from a trace's end to its score being journaled (the latest 100,000)."""

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile of :attr:`time_to_score` (NaN before any)."""
        return _percentiles(list(self.time_to_score), q)[0]

    def as_dict(self) -> dict[str, Any]:
        """The counters and the time to score's p50 and p99 (None before any). Safe from another thread
        while the loop scores: the times are copied in one step (``list`` of a deque holds the GIL
        throughout), where ``asdict`` or iterating them in Python could meet an append half way
        ("deque mutated during iteration")."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "time_to_score"}
        out["time_to_score_p50"], out["time_to_score_p99"] = _percentiles(list(self.time_to_score), 50, 99)
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def _percentiles(times: list[float], *qs: float) -> list[float]:
    if not times:
        return [math.nan] * len(qs)
    import numpy as np

    return [float(v) for v in np.percentile(np.asarray(times, dtype=float), qs)]
