"""The scoring thread: complete traces in, scores journaled to their windows (and sent on) out.

Scoring is CPU work; it runs in a thread of its own so the receiver keeps answering while a batch
is scored. Traces queued together are scored together (one dataset, one pass of each metric), and
their scores are journaled and flushed before the watcher is told, which is when their spans may
leave the spool.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.data.dataset import EvalCase
from .._core.data.rows import dataset_from_rows
from .._core.data.types import AgentRun
from .._core.errors import LevelfieldError, exception_text
from .._core.results.result import EvalResult
from .._core.results.saved_run import SAVED_AGENT
from .._core.run.engine import saved_runs
from .._core.score.batch import score_rows
from .._core.score.metrics.base import Metric, Score
from .._core.score.scoring import context_for
from ..formats.spans import Span, TraceError, failed_row, row_from_spans
from .budget import HourlyBudget
from .windows import Windows

__all__ = ["Item", "Scorer"]

log = logging.getLogger("levelfield.watch")


@dataclass
class Item:
    """One complete trace waiting to be scored: spans from the receiver, or a row/case from a source."""

    trace_id: str
    at: float
    """Its event time (when it ended), seconds since the epoch: picks its window."""
    spans: list[Span] | None = None
    case: EvalCase | dict[str, Any] | None = None
    timed_out: bool = False
    """Completed by the trace timeout (its root never came)."""
    ended: float | None = None
    """When the trace ended, for the time-to-score figure (None when unknown)."""
    release: Callable[[], None] | None = field(default=None, repr=False)
    """Called (on the watcher's loop) once the trace is journaled: frees what held it for a restart."""
    mlflow_id: str | None = None
    """The trace's id in MLflow, when it came from there (its scores go back to it as assessments)."""

    def row(self) -> EvalCase | dict[str, Any]:
        if self.case is not None:
            return self.case
        try:
            row = row_from_spans(self.trace_id, self.spans or [])
        except TraceError as exc:
            return failed_row(self.trace_id, exc, 0)
        if self.timed_out and not any(not s.parent_id for s in self.spans or []):
            row["trace_incomplete"] = True  # no root came within the trace timeout: scored from what came
        return row


class Scorer:
    """Scores queued traces in a thread; calls ``on_scored(items, scores, scored_at)`` from that thread
    after they are journaled. ``exporter``: an OpenTelemetry ``SpanExporter`` the scores are sent to;
    ``assessments``: a :class:`~levelfield.watch.assessments.MlflowAssessments` they are logged to;
    ``budget``: the judges' :class:`~levelfield.watch.budget.HourlyBudget`."""

    def __init__(
        self,
        metrics: Sequence[Metric],
        windows: Windows,
        on_scored: Callable[[list[Item], list[dict[str, Score]], float], None],
        *,
        references: Mapping[str, EvalCase] | None = None,
        exporter: Any = None,
        assessments: Any = None,
        budget: HourlyBudget | None = None,
        batch: int = 512,
        idle_close: float = 300.0,
    ) -> None:
        self.metrics = list(metrics)
        self.idle_close = idle_close
        """Seconds without a write after which a window's file is closed (reopened if a late trace comes)."""
        self.windows = windows
        self.on_scored = on_scored
        self.references = dict(references or {})
        self.exporter = exporter
        self.assessments = assessments
        self.budget = budget
        self.batch = batch
        self.queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="levelfield-watch-scorer", daemon=True)
        self.failed: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def submit(self, item: Item) -> None:
        self.queue.put(item)

    def stop(self) -> None:
        """Score what is queued, then end the thread (blocks until it has)."""
        if not self._thread.is_alive():  # never started (the watcher failed to start) or already ended
            return
        self.queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        check = min(30.0, self.idle_close / 2)
        checked = time.monotonic()
        try:
            while True:
                if time.monotonic() - checked >= check:  # windows no trace was written to lately: close their files
                    checked = time.monotonic()
                    self.windows.close_idle(self.idle_close)
                try:
                    first = self.queue.get(timeout=check)
                except queue.Empty:
                    continue
                if first is None:
                    return
                batch, last = [first], False
                while len(batch) < self.batch:
                    try:
                        item = self.queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        last = True
                        break
                    batch.append(item)
                try:
                    self._score(batch, loop)
                except Exception as exc:  # a disk that fills: say so loudly; the traces stay in the spool
                    self.failed = exc
                    log.error("levelfield watch: cannot journal %d trace(s): %s", len(batch), exception_text(exc))
                if last:
                    return
        finally:
            loop.close()
            self.windows.close()

    def _cases(self, batch: Sequence[Item]) -> list[EvalCase]:
        rows = [item.row() for item in batch]
        try:
            cases = list(dataset_from_rows(rows, source="levelfield watch"))
        except LevelfieldError:  # one unreadable row must not lose the others: read them one by one
            cases = []
            for item, row in zip(batch, rows):
                try:
                    cases.append(dataset_from_rows([row], source="levelfield watch")[0])
                except LevelfieldError as exc:
                    cases.append(dataset_from_rows([failed_row(item.trace_id, exc, 0)], source="levelfield watch")[0])
        for case in cases:
            ref = self.references.get(case.prompt) if isinstance(case.prompt, str) else None
            if ref is not None and case.reference is None and case.reference_trajectory is None:
                case.reference = ref.reference
                case.reference_trajectory = ref.reference_trajectory
                case.expected_retrieved_context = case.expected_retrieved_context or ref.expected_retrieved_context
        return cases

    def _score(self, batch: list[Item], loop: asyncio.AbstractEventLoop) -> None:
        cases = self._cases(batch)
        from .._core.data.dataset import EvalDataset

        dataset = EvalDataset(cases, source="levelfield watch")
        try:
            runs = saved_runs(dataset)
        except LevelfieldError:  # nothing in the batch has an answer (every trace failed)
            runs = [AgentRun(case_id=c.case_id, agent_name=SAVED_AGENT, output=None, latency_in_seconds=float("nan"),
                             failure=True, error=str(c.metadata.get("error") or "the trace holds no answer"))
                    for c in cases]
        contexts = [context_for(case, None) for case in cases]
        for ctx, run in zip(contexts, runs):
            ctx.failure = run.failure
        if self.budget is None:
            scores = loop.run_until_complete(score_rows(contexts, self.metrics))
        else:
            limit = self.budget.current()
            scores = loop.run_until_complete(score_rows(contexts, self.metrics, budget=limit, refused=self.budget.refused))
            self.budget.save()
        self.windows.write((case, run, row, item.at) for case, run, row, item in zip(cases, runs, scores, batch))
        self.on_scored(batch, scores, time.time())
        if self.assessments is not None:
            for item, row in zip(batch, scores):
                self.assessments.submit(item.trace_id, item.mlflow_id, row)
        if self.exporter is not None:
            self._export(dataset, runs, scores)

    def _export(self, dataset: Any, runs: list[AgentRun], scores: list[dict[str, Score]]) -> None:
        from ..formats.otel import export_scores

        result = EvalResult(dataset, runs, scores, self.metrics, agent_name=None, scored_saved_predictions=True)
        if getattr(self, "_evaluators", None) is None:
            self._evaluators = result.evaluators  # the metrics' provenance, described once for every batch
        result._evaluators = self._evaluators
        try:
            export_scores(result, self.exporter)
        except Exception as exc:  # an endpoint that is down must not stop scoring: the journal has the scores
            log.warning("levelfield watch: cannot send scores over OTLP: %s", exception_text(exc))
