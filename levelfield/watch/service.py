"""The watcher: receives traces, puts them together, samples, scores, journals, watches for drift.

One event loop runs the OTLP receiver, the sources and a ticker (trace timeouts, spool rotation,
drift checks, the status file); one thread scores (:mod:`levelfield.watch.scoring`). What was
acknowledged is in the spool until journaled, so a watcher killed at any moment and started again
with the same ``out`` scores every acknowledged trace exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._core.data.prices import price_table
from .._core.errors import ConfigError, TraceError
from .._core.results.provenance import evaluators_of
from .._core.results.writing import write_text
from .._core.score.metrics.base import Metric, Score
from .._core.score.metrics.registry import resolve_metrics
from ..formats.spans import Span
from .assembly import DEFAULT_GRACE, Assembler, Trace, check_grace
from .budget import HourlyBudget, skipped_for_budget
from .options import _check_options
from .receiver import decode, make_app
from .sampling import Sampler, SampleRule, span_attributes
from .scoring import Item, Scorer
from .spool import Spool
from .status import WatchStats
from .windows import Windows, journaled_ids

__all__ = ["Watcher", "watch"]

log = logging.getLogger("levelfield.watch")

STATUS_FILE = "status.json"
LATE_FILE = "late_spans.jsonl"
"""One line per request that brought spans of traces already scored: ``trace_id``, ``late_spans``, ``at``."""


class _Server:
    """uvicorn's server without its signal handlers (the watcher owns SIGINT/SIGTERM to drain first)."""

    def __new__(cls, config: Any) -> Any:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):
                yield

        return Server(config)


class Watcher:
    """Scores production traces as they arrive; see :func:`watch` for the options."""

    def __init__(
        self,
        metrics: Sequence[Metric | str],
        out: str | Path,
        *,
        otlp_port: int | None = 4318,
        host: str = "127.0.0.1",
        folder: str | Path | None = None,
        mlflow_experiment: str | None = None,
        mlflow_tracking_uri: str | None = None,
        sample: float = 1.0,
        sample_rules: Sequence[str | SampleRule] = (),
        trace_timeout: float = 30.0,
        late_grace: float | None = None,
        window: float = 3600.0,
        max_queue: int = 10_000,
        auth_token: str | None = None,
        baseline: str | Path | None = None,
        alert_if_worse: str | Sequence[str] = (),
        alpha: float = 0.05,
        margin: float = 0.0,
        min_window: int = 20,
        export_otlp: str | None = None,
        export_mlflow: bool | str | None = None,
        references: Any = None,
        judge: Any = None,
        max_cost: float | None = None,
        prices: Any = None,
        fsync: bool = True,
        poll: float = 1.0,
        settle: float | None = None,
        max_body: int = 16 << 20,
        retry_after: int = 1,
        quiet: bool = True,
        close_idle_after: float | None = None,
        allow_different_evaluators: bool = False,
    ) -> None:
        if not 0 <= sample <= 1:
            raise ConfigError(f"sample={sample!r}: give the share of traces to score, between 0 and 1 (0.1 = one in ten)")
        if close_idle_after is None:
            close_idle_after = max(60.0, 2 * trace_timeout) if isinstance(trace_timeout, (int, float)) else 60.0
        self.close_idle_after = close_idle_after
        for name, value in (("trace_timeout", trace_timeout), ("window", window), ("poll", poll),
                            ("close_idle_after", close_idle_after)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise ConfigError(f"{name}={value!r}: must be a positive number of seconds")
        self.late_grace = check_grace(min(DEFAULT_GRACE, trace_timeout) if late_grace is None else late_grace,
                                      trace_timeout)
        if not isinstance(max_queue, int) or max_queue < 1:
            raise ConfigError(f"max_queue={max_queue!r}: must be a whole number of traces >= 1")
        if otlp_port is None and folder is None and mlflow_experiment is None:
            raise ConfigError("nothing to watch: give an OTLP port, a folder or an MLflow experiment")
        _check_options(otlp_port=otlp_port, auth_token=auth_token, alpha=alpha, margin=margin, min_window=min_window,
                       export_otlp=export_otlp, prices=prices, max_body=max_body)
        self.metrics: list[Metric] = resolve_metrics(list(metrics), judge=judge)
        if not self.metrics:
            raise ConfigError("no metrics: give at least one metric to score the traces with")
        self.out = Path(out)
        self.otlp_port, self.host = otlp_port, host
        self.sample, self.trace_timeout, self.window = float(sample), float(trace_timeout), float(window)
        self.sampler = Sampler(self.sample, sample_rules)
        self.max_queue, self.auth_token = max_queue, auth_token
        self.max_body, self.retry_after, self.poll = max_body, retry_after, float(poll)
        self.settle = float(settle) if settle is not None else min(self.trace_timeout, 30.0)
        self.fsync, self.quiet = fsync, quiet
        self.export_otlp = export_otlp
        self.stats = WatchStats()
        self.assessments = _assessments(export_mlflow, mlflow_experiment, mlflow_tracking_uri, self.metrics, self.stats)
        self.port: int | None = None
        self._references = _references(references)
        self._folder_path = folder
        self._mlflow = (mlflow_experiment, mlflow_tracking_uri)
        self._drift_options = (baseline, alert_if_worse, alpha, margin, min_window)
        if allow_different_evaluators and baseline is None:
            raise ConfigError("allow_different_evaluators applies to drift against a baseline: give baseline= or leave it out")
        self.allow_different_evaluators = bool(allow_different_evaluators)
        if alert_if_worse and baseline is None:
            raise ConfigError("alert_if_worse needs a baseline: give baseline= a watch folder or a saved run")
        self.budget = (HourlyBudget(max_cost, price_table(prices), self.out / "state" / "judge_budget.json")
                       if max_cost is not None else None)
        try:
            self._check_out()
            self.spool = Spool(self.out / "spool", fsync=fsync)
        except OSError as exc:
            raise ConfigError(f"out={str(self.out)!r}: cannot write the watch folder there ({exc.strerror or exc})") from None
        self.assembler = Assembler(self.trace_timeout, self.late_grace)
        self._late_seen: set[str] = set()  # traces already counted in late_traces (bounded with _closed)
        self._closed: dict[str, float] = {}  # trace id -> when it was completed (queued or journaled)
        self._inflight: set[str] = set()
        self._reserved = 0
        self._remember = max(3600.0, 10 * self.trace_timeout)
        self._window_activity: dict[float, float] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.drift: Any = None
        self.sources: list[Any] = []

    # -- set-up --------------------------------------------------------------------------------

    def _check_out(self) -> None:
        if self.out.exists() and not self.out.is_dir():
            raise ConfigError(f"out={str(self.out)!r} is a file: give a folder for the watch windows")
        self.out.mkdir(parents=True, exist_ok=True)
        options: dict[str, Any] = {"sample": self.sample, "trace_timeout": self.trace_timeout, "window": self.window}
        if self.sampler.rules:
            options["sample_rules"] = self.sampler.describe()
        self.windows = Windows(self.out, self.metrics, self.window, options)

    def _exporter(self) -> Any:
        if not self.export_otlp:
            return None
        from .exporting import otlp_exporter

        return otlp_exporter(self.export_otlp)

    @property
    def pending(self) -> int:
        """Traces held in memory: being put together, queued or being scored."""
        return len(self.assembler) + len(self._inflight) + self._reserved

    # -- receiving -----------------------------------------------------------------------------

    def _filter(self, spans: Iterable[Span | TraceError]) -> tuple[list[Span], int, str]:
        keep: list[Span] = []
        rejected, why = 0, ""
        for span in spans:
            if isinstance(span, TraceError):
                rejected += 1
                why = why or str(span)
                continue
            if not self.sampler.may_keep(span.trace_id):
                if not span.parent_id:
                    self.stats.sampled_out_traces += 1
                continue
            if span.trace_id in self._closed:
                self._late([span])
                continue
            keep.append(span)
        return keep, rejected, why

    async def accept(self, kind: int, body: bytes, spans: list[Span | TraceError]) -> tuple[int | None, str]:
        """Spool and assemble one request's spans; (None, "") when the queue is full (shed)."""
        keep, rejected, why = self._filter(spans)
        self.stats.spans += len(spans)
        self.stats.rejected_spans += rejected
        if keep:
            ids = {s.trace_id for s in keep}
            new = sum(1 for t in ids if t not in self.assembler)
            if new and self.pending + new > self.max_queue:
                self.stats.shed_requests += 1
                self.stats.shed_traces += new
                return None, ""
            self._reserved += new
            try:
                await self.spool.append(kind, body, ids)
            finally:
                self._reserved -= new
            self._assemble(keep, ids)
        self.stats.accepted_requests += 1
        return rejected, why

    def _assemble(self, spans: list[Span], ids: set[str]) -> None:
        # A trace may have been completed (timed out) while this request was being spooled.
        late = {t for t in ids if t in self._closed}
        if late:
            self._late([s for s in spans if s.trace_id in late])
            spans = [s for s in spans if s.trace_id not in late]
            self.spool.release(t for t in late if t not in self._inflight)  # already journaled: hold nothing
        for trace in self.assembler.add(spans, time.time()):
            self._complete(trace)

    def _late(self, spans: list[Span]) -> None:
        """Count spans of traces already complete and mark them under their traces in ``late_spans.jsonl``."""
        by_trace: dict[str, int] = {}
        for span in spans:
            by_trace[span.trace_id] = by_trace.get(span.trace_id, 0) + 1
        self.stats.late_spans += len(spans)
        new = [t for t in by_trace if t not in self._late_seen]
        self.stats.late_traces += len(new)
        self._late_seen.update(new)
        now = time.time()
        lines = "".join(json.dumps({"trace_id": t, "late_spans": n, "at": round(now, 3)}) + "\n" for t, n in by_trace.items())
        try:
            with open(self.out / LATE_FILE, "a", encoding="utf-8") as f:
                f.write(lines)
        except OSError as exc:  # the count in status.json stands; the scoring goes on
            log.warning("levelfield watch: cannot mark late spans in %s: %s", self.out / LATE_FILE, exc)

    def _complete(self, trace: Trace) -> None:
        self._closed[trace.trace_id] = time.time()
        if self.sampler.deferred and not self.sampler.keep(trace.trace_id, span_attributes(trace.spans.values())):
            # Decided now that the trace is whole (a rule's attribute may be on the root, which comes last).
            self.stats.sampled_out_traces += 1
            self.spool.release([trace.trace_id])
            return
        self._inflight.add(trace.trace_id)
        if trace.timed_out:
            self.stats.timed_out_traces += 1
        end = trace.end
        self.scorer.submit(Item(trace.trace_id, at=end if end is not None else time.time(),
                                spans=list(trace.spans.values()), timed_out=trace.timed_out, ended=end))

    def submit_case(self, trace_id: str, case: Any, *, at: float | None = None, release: Any = None,
                    mlflow_id: str | None = None, attributes: Any = None) -> bool:
        """Queue a complete trace from a source (a file row, an MLflow trace); False when it was scored
        already or is sampled out. ``attributes``: what the sampling rules match (key -> values)."""
        if trace_id in self._closed or not self.sampler.keep(trace_id, attributes):
            if trace_id in self._closed:
                self.stats.duplicate_traces += 1
            else:
                self.stats.sampled_out_traces += 1
            return False
        self._closed[trace_id] = time.time()
        self._inflight.add(trace_id)
        self.scorer.submit(Item(trace_id, at=at or time.time(), case=case, release=release, mlflow_id=mlflow_id))
        return True

    # -- scored --------------------------------------------------------------------------------

    def _on_scored(self, items: list[Item], scores: list[dict[str, Score]], scored_at: float) -> None:
        """From the scoring thread: the items are journaled."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._scored, items, scores, scored_at)

    def _scored(self, items: list[Item], scores: list[dict[str, Score]], scored_at: float) -> None:
        released = []
        for item, row in zip(items, scores):
            self._inflight.discard(item.trace_id)
            self.stats.scored_traces += 1
            self.stats.judge_skipped_for_budget += sum(1 for s in row.values() if skipped_for_budget(s))
            if item.ended is not None:
                self.stats.time_to_score.append(max(0.0, scored_at - item.ended))
            if item.release is not None:
                item.release()
            else:
                released.append(item.trace_id)
            self._window_activity[self.windows.start_of(item.at)] = scored_at
        self.spool.release(released)

    # -- the loop ------------------------------------------------------------------------------

    def _replay(self) -> None:
        """Read back what a previous run spooled and did not journal; drop what it did journal."""
        self.spool.open()
        oldest = self.spool.oldest()
        if oldest is None:
            return
        done = journaled_ids(self.out, oldest - 1)
        now = time.time()
        for tid in done:
            self._closed[tid] = now
        for frame in self.spool.replay():
            try:
                spans = decode(frame.kind, frame.body, self.sampler.keys)
            except TraceError:
                continue
            keep, _, _ = self._filter(spans)
            if not keep:
                continue
            self.stats.replayed_requests += 1
            ids = {s.trace_id for s in keep}
            self.spool.hold(frame.segment, ids)
            for trace in self.assembler.add(keep, now):
                self._complete(trace)
        self.spool.settle()

    async def _tick(self) -> None:
        last_status = 0.0
        last_poll = 0.0
        while True:
            await asyncio.sleep(min(0.1, self.trace_timeout / 4))
            now = time.time()
            for trace in self.assembler.expire(now):
                self._complete(trace)
            self.spool.rotate_if_old()
            if self._closed and len(self._closed) > 1000:
                self._forget(now)
            if now - last_poll >= self.poll:
                last_poll = now
                for source in self.sources:
                    await source.poll()
                if self.drift is not None:
                    await self._check_drift(now)
            if now - last_status >= 2.0:
                last_status = now
                await asyncio.to_thread(self.write_status)

    def _forget(self, now: float) -> None:
        """Forget traces completed long ago (their late spans are unlikely; memory stays bounded)."""
        old = [t for t, at in self._closed.items() if now - at > self._remember and t not in self._inflight]
        for t in old:
            del self._closed[t]
            self._late_seen.discard(t)

    async def _check_drift(self, now: float) -> None:
        closed = [start for start, last in self._window_activity.items()
                  if now >= start + self.window + self.trace_timeout and now - last >= self.settle]
        for start in sorted(closed):
            del self._window_activity[start]
            alerts = await asyncio.to_thread(self.drift.check, self.windows.path_of(start))
            self.stats.alerts += len(alerts)

    def write_status(self) -> None:
        """Write ``out/status.json``: the counters, the queue, the time to score (the live summary's source)."""
        data = {"updated_at": time.time(), "port": self.port, "pending": self.pending, **self.stats.as_dict()}
        if self.budget is not None:
            data["judge_budget_per_hour"] = self.budget.usd_per_hour
            data["judge_spent_this_hour"] = self.budget.spent
        write_text(self.out / STATUS_FILE, json.dumps(data, indent=1))

    async def run(self) -> None:
        """Watch until :meth:`stop` (or SIGINT/SIGTERM when run in the main thread)."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        tasks: list[asyncio.Task] = []
        server = None
        self.scorer = Scorer(self.metrics, self.windows, self._on_scored, references=self._references,
                             exporter=self._exporter(), assessments=self.assessments, budget=self.budget,
                             idle_close=self.close_idle_after)
        sock = None
        try:
            if self.otlp_port is not None:
                sock = self._bind()  # first: a port in use or a bad host is refused before anything starts
            self._set_up_drift_and_sources()
            self.scorer.start()
            if self.assessments is not None:
                self.assessments.start()
            self._replay()
            if sock is not None:
                server = await self._serve(sock)
            tasks.append(asyncio.create_task(self._tick()))
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGINT, signal.SIGTERM):
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        self._loop.add_signal_handler(sig, self._stop.set)
            self._started.set()
            await self._stop.wait()
        finally:
            # start() hears of a failed start from its thread, once the error is stored (not from here).
            if server is not None:
                server.should_exit = True
                await self._server_task
            if sock is not None:
                sock.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.to_thread(self.scorer.stop)  # scores what is queued; open traces stay spooled
            if self.assessments is not None:
                await asyncio.to_thread(self.assessments.stop)
            await asyncio.sleep(0)  # let the last "journaled" callbacks run
            for source in self.sources:
                source.close()
            await self.spool.drain()  # requests taken before the stop reach the disk
            self.spool.close()
            self.write_status()

    def _bind(self) -> Any:
        from .._serving import bind

        try:
            return bind(self.host, int(self.otlp_port or 0))
        except OSError as exc:
            raise ConfigError(f"{exc} (otlp_port / --otlp-port: give a free port, or 0 for any; host / --host: an "
                              "address of this machine, e.g. 127.0.0.1 or 0.0.0.0)") from None

    async def _serve(self, sock: Any) -> Any:
        import uvicorn

        config = uvicorn.Config(make_app(self), log_level="warning", lifespan="off", access_log=False,
                                timeout_graceful_shutdown=5)
        server = _Server(config)
        self._server_task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self._server_task.done():
                exc = self._server_task.exception()
                raise ConfigError(f"cannot listen on {self.host}:{self.otlp_port} ({exc or 'the port is taken'})")
            await asyncio.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        return server

    def _set_up_drift_and_sources(self) -> None:
        baseline, alert_if_worse, alpha, margin, min_window = self._drift_options
        if baseline is not None:
            from .drift import Drift

            self.drift = Drift(baseline, alert_if_worse or [m.name for m in self.metrics], self.out, alpha=alpha,
                               margin=margin, min_window=min_window, exporter=self.scorer.exporter,
                               metrics=[m.name for m in self.metrics], evaluators=evaluators_of(self.metrics),
                               allow_different_evaluators=self.allow_different_evaluators)
        if self._folder_path is not None:
            from .sources import FolderSource

            self.sources.append(FolderSource(self, self._folder_path))
        if self._mlflow[0] is not None:
            from .sources import MlflowSource

            self.sources.append(MlflowSource(self, self._mlflow[0], self._mlflow[1]))

    # -- running in a thread (Python API, tests) ------------------------------------------------

    def start(self) -> Watcher:
        """Run in a background thread; returns once the receiver listens (``.port``)."""
        def main() -> None:
            try:
                asyncio.run(self.run())
            except BaseException as exc:  # reported by start()/stop()
                self._error = exc
                self._started.set()

        self._thread = threading.Thread(target=main, name="levelfield-watch", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        """Stop: no new requests, score what is complete, leave open traces spooled for the next start."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _assessments(export_mlflow: bool | str | None, experiment: str | None, tracking_uri: str | None,
                 metrics: Sequence[Metric], stats: WatchStats) -> Any:
    """Where scores go back to MLflow: None (off); MLflow-sourced traces only by default; every trace
    MLflow holds with ``export_mlflow`` True or a tracking URI."""
    if export_mlflow is False or (export_mlflow is None and experiment is None):
        return None
    if not isinstance(export_mlflow, (bool, str, type(None))):
        raise ConfigError(f"export_mlflow={export_mlflow!r}: give True, False or an MLflow tracking URI")
    from .assessments import MlflowAssessments

    uri = export_mlflow if isinstance(export_mlflow, str) and export_mlflow else tracking_uri
    return MlflowAssessments(uri, metrics, stats, every_trace=export_mlflow is not None)


def _references(references: Any) -> dict[str, Any]:
    """Prompt -> case of a reference dataset: production requests that match get its references."""
    if references is None:
        return {}
    from ..formats.files import load_dataset

    dataset = load_dataset(references)
    return {c.prompt: c for c in dataset if isinstance(c.prompt, str)}


def watch(metrics: Sequence[Metric | str], out: str | Path, **options: Any) -> None:
    """Score production traces as they arrive, until interrupted (Ctrl-C or SIGTERM).

    Traces come from an OTLP/HTTP receiver on ``host:otlp_port`` (``POST /v1/traces``, protobuf or
    JSON; point an OpenTelemetry exporter at ``http://host:port``), a ``folder`` of JSON Lines /
    Parquet trace files, and/or an MLflow experiment (``mlflow_experiment``). Each trace is put
    together from its spans (complete when its root ends, or ``trace_timeout`` seconds after its
    last span; a trace whose root came is held ``late_grace`` seconds, default 2 or the trace timeout when
    shorter, for child spans that come after their root; spans that come later still are counted and
    marked under their trace in ``out/late_spans.jsonl``), sampled (``sample``; ``sample_rules`` such as ``"route=/checkout:1.0"`` give the
    traces they match a rate of their own, see :mod:`levelfield.watch.sampling`), scored with
    ``metrics`` and journaled to ``out/windows/`` in
    windows of ``window`` seconds (a window's file is closed once no trace was written to it for
    ``close_idle_after`` seconds, default twice the trace timeout and at least 60; a late trace opens it
    again); ``out/status.json`` holds the live counters. A restart with the
    same ``out`` loses and repeats nothing. ``baseline`` + ``alert_if_worse``: alert when a window
    is significantly worse than the baseline (``out/drift.jsonl``); a baseline scored by other evaluators
    (judge, prompt, rubrics, metric version) is refused naming what differs, unless
    ``allow_different_evaluators=True`` (then each check is labelled). ``export_otlp``: an OTLP/HTTP
    endpoint the scores are sent to as ``gen_ai.evaluation.result`` events. ``export_mlflow``: scores
    go back to MLflow as assessments on their traces (traces from ``mlflow_experiment`` always,
    unless False; every trace MLflow holds with True or a tracking URI). ``max_cost``: dollars the
    judged metrics may spend per clock hour (priced by ``prices`` or genai-prices); once spent, the
    hour's traces get their unjudged metrics and the judged ones are skipped for the budget
    (``<metric>/skipped_for_budget``). Every option:
    :class:`Watcher`.
    """
    watcher = Watcher(metrics, out, **options)
    asyncio.run(watcher.run())
