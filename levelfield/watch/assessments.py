"""Scores sent back to MLflow as assessments (feedback) on the traces they score.

Which traces: every trace that came from the MLflow source (``--mlflow-experiment``), and, with
``--export-mlflow``, every other trace MLflow also holds. MLflow names a trace after its
OpenTelemetry trace id (``tr-<32 hex>``, both for traces made by its own tracing and for spans
its server ingests over OTLP), so a trace that reached the watcher over OTLP is looked up by that
name; one MLflow does not hold is counted (``mlflow_missing_traces``) and nothing is sent for it.
A trace MLflow does not hold yet (an app exporting to both, MLflow a moment behind) is asked for
again with the same backoff as a failed call.

Each metric's score becomes one ``Feedback`` named after the metric, from source ``CODE``
(``LLM_JUDGE`` for a judged metric) with id ``levelfield/<metric>``, its explanation as the
rationale, and its evaluator's identity as metadata (``levelfield.evaluator.<metric>.fingerprint``,
``.judge_model``, ``.prompt_sha256``...). A score that is NaN (not computable, a failed run, a judge skipped for the hour's
budget) is sent as a feedback with an error saying why, as ``--export-otlp`` does, not dropped.

Sending runs in a thread of its own, so a slow or unreachable MLflow never holds up scoring; a
call that fails is retried with exponential backoff, and after the last try the trace is counted
as failed (``mlflow_failed_traces``) and logged. At most ``max_pending`` traces wait to be sent
(memory stays bounded when MLflow is down or slower than the traffic: each assessment is one call,
about 7 ms on a sqlite store); beyond that they are counted as failed. The journal holds every
score either way.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.errors import ConfigError, MissingExtraError, exception_text
from .._core.results.provenance import evaluator_of
from .._core.score.metrics.base import Metric, Score
from .budget import SKIPPED_FOR_BUDGET, skipped_for_budget

__all__ = ["MlflowAssessments", "mlflow_trace_id"]

log = logging.getLogger("levelfield.watch")


_HEX32 = re.compile(r"^[0-9a-f]{32}$")


def mlflow_trace_id(trace_id: str) -> str | None:
    """The id MLflow gives the trace with this id: an MLflow id as is, an OpenTelemetry one as
    ``tr-<hex>``; None for any other id (a dataset row's), which MLflow cannot hold."""
    if trace_id.startswith("tr-"):
        return trace_id
    tid = trace_id.lower()
    return f"tr-{tid}" if _HEX32.match(tid) else None


@dataclass(order=True)
class _Pending:
    due: float
    seq: int
    trace_id: str = field(compare=False)
    mlflow_id: str = field(compare=False)
    feedback: list[Any] = field(compare=False)
    """The assessments not sent yet (a retry sends only these)."""
    tries: int = field(default=0, compare=False)


class MlflowAssessments:
    """Logs scores as MLflow assessments from a thread of its own; see the module docs.

    ``stats``: an object whose ``mlflow_assessments``, ``mlflow_failed_traces`` and
    ``mlflow_missing_traces`` counters it adds to (the watcher's :class:`WatchStats`).
    """

    def __init__(
        self,
        tracking_uri: str | None,
        metrics: Sequence[Metric],
        stats: Any,
        *,
        every_trace: bool,
        tries: int = 6,
        backoff: float = 0.5,
        max_pending: int = 20_000,
    ) -> None:
        try:
            from mlflow.entities import AssessmentError, AssessmentSource, Feedback
            from mlflow.exceptions import MlflowException
            from mlflow.tracing.client import TracingClient
        except ImportError:
            raise MissingExtraError("mlflow", "mlflow-skinny", "levelfield watch --export-mlflow") from None
        self._Feedback, self._Source, self._Error, self._MlflowException = Feedback, AssessmentSource, AssessmentError, MlflowException
        self.client = _checked_client(TracingClient, tracking_uri)
        self.tracking_uri = self.client.tracking_uri
        self.every_trace = every_trace
        self.stats = stats
        self.tries, self.backoff, self.max_pending = tries, backoff, max_pending
        self._judged = {m.name for m in metrics if _is_judged(m)}
        self._provenance = {m.name: evaluator_of(m).attributes() for m in metrics}
        self._heap: list[_Pending] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopping = False
        self._behind = False
        self._thread = threading.Thread(target=self._run, name="levelfield-watch-mlflow", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wants(self, trace_id: str, mlflow_id: str | None) -> str | None:
        """The MLflow id to send the scores of ``trace_id`` to, or None when they go nowhere."""
        if mlflow_id is not None:
            return mlflow_id
        if not self.every_trace:
            return None
        found = mlflow_trace_id(trace_id)
        if found is None:
            self.stats.mlflow_missing_traces += 1
        return found

    def submit(self, trace_id: str, mlflow_id: str | None, scores: Mapping[str, Score]) -> None:
        """Queue one trace's scores (from the scoring thread, after they are journaled)."""
        target = self.wants(trace_id, mlflow_id)
        if target is None or not scores:
            return
        feedback = [self._feedback(name, score) for name, score in scores.items()]
        with self._cv:
            if len(self._heap) >= self.max_pending:
                # MLflow is down or slower than the traffic: keep memory bounded (the journal has the scores).
                if not self._behind:
                    self._behind = True
                    log.warning("levelfield watch: MLflow at %s is behind by %d traces; further traces' assessments are "
                                "not sent (counted in mlflow_failed_traces) until it catches up", self.tracking_uri,
                                len(self._heap))
                self.stats.mlflow_failed_traces += 1
                return
            self._behind = False
            heapq.heappush(self._heap, _Pending(0.0, next(self._seq), trace_id, target, feedback))
            self._cv.notify()

    @property
    def pending(self) -> int:
        return len(self._heap)

    def _feedback(self, name: str, score: Score) -> Any:
        source = self._Source(source_type="LLM_JUDGE" if name in self._judged else "CODE", source_id=f"levelfield/{name}")
        value = score.value
        if value is None or math.isnan(value):
            if skipped_for_budget(score):
                code = SKIPPED_FOR_BUDGET.upper()
            else:
                code = "JUDGE_FAILED" if score.failed else "NOT_SCORED"
            why = score.error or score.explanation or "not computable for this trace (no reference, or a failed run)"
            return self._Feedback(name=name, source=source, error=self._Error(error_code=code, error_message=why),
                                  metadata=self._provenance.get(name) or None)
        return self._Feedback(name=name, value=float(value), source=source, rationale=score.explanation,
                              metadata=self._provenance.get(name) or None)

    # -- the sending thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cv:
                while True:
                    if not self._heap:
                        if self._stopping:
                            return
                        self._cv.wait()
                        continue
                    wait = self._heap[0].due - time.monotonic()
                    if wait <= 0 or self._stopping:
                        item = heapq.heappop(self._heap)
                        break
                    self._cv.wait(wait)
            self._send(item)

    def _send(self, item: _Pending) -> None:
        while item.feedback:
            try:
                self.client.log_assessment(item.mlflow_id, item.feedback[0])
            except Exception as exc:  # any failure: retried, then counted; never raised into the watcher
                self._retry(item, exc)
                return
            item.feedback.pop(0)
            self.stats.mlflow_assessments += 1

    def _retry(self, item: _Pending, exc: Exception) -> None:
        missing = isinstance(exc, self._MlflowException) and getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST"
        item.tries += 1
        if item.tries >= self.tries or self._stopping:
            if missing:
                self.stats.mlflow_missing_traces += 1
                log.info("levelfield watch: trace %s is not in MLflow at %s; its scores are in the journal only",
                         item.mlflow_id, self.tracking_uri)
            else:
                self.stats.mlflow_failed_traces += 1
                log.warning("levelfield watch: cannot log %d assessment(s) on MLflow trace %s after %d tries: %s",
                            len(item.feedback), item.mlflow_id, item.tries, exception_text(exc))
            return
        item.due = time.monotonic() + self.backoff * 2 ** (item.tries - 1)
        item.seq = next(self._seq)
        with self._cv:
            heapq.heappush(self._heap, item)

    def stop(self, timeout: float = 30.0) -> None:
        """Send what is queued (retries due later are tried once more now), then end the thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("levelfield watch: MLflow still busy after %.0f s; %d trace(s) not sent (scores are journaled)",
                            timeout, len(self._heap))


def _is_judged(metric: Metric) -> bool:
    from ..judge.metrics import JudgedMetric

    return isinstance(metric, JudgedMetric)


def _checked_client(make: Any, tracking_uri: str | None) -> Any:
    """A tracking client for ``tracking_uri``, or a ConfigError saying why MLflow cannot be reached there."""
    try:
        client = make(tracking_uri)
        _ = client.store  # resolves the URI's scheme (and creates a new sqlite database)
    except Exception as exc:
        raise ConfigError(f"export_mlflow: cannot use the MLflow tracking URI {tracking_uri!r} ({exception_text(exc)}); "
                          "give a tracking server (http://host:5000), a database (sqlite:///mlflow.db) or "
                          "'databricks'") from None
    uri = str(client.tracking_uri)
    if uri.startswith(("http://", "https://")):
        import httpx

        # MLflow's own client retries an unreachable server for minutes: fail fast before starting.
        try:
            httpx.get(uri.rstrip("/") + "/health", timeout=5.0)
        except httpx.HTTPError as exc:
            raise ConfigError(f"export_mlflow: no MLflow tracking server answers at {uri} ({exc}); start it, or give "
                              "the right --export-mlflow / --mlflow-tracking-uri") from None
    return client
