"""Scoring every batch of saved rows in order (:func:`score_batches`), in worker processes when
asked (a bounded number of batches in flight), with the checks over the whole input: unique case
ids, some rows to score."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ...errors import DatasetError
from ..metrics.base import Metric
from .rows import RowBatch
from .scorer import BatchScorer, ScoredBatch
from .summary import RunningSummary

__all__ = ["score_batches", "check_workers_can_score"]


class _UniqueIds:
    """Case ids seen so far; a repeated one is an error naming both rows."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._first: dict[str, int] = {}
        self._rows = 0

    def add(self, batch: ScoredBatch) -> None:
        first = self._first
        base = self._rows
        for i, case_id in enumerate(batch.columns["case_id"]):
            seen = first.setdefault(case_id, base + i)
            if seen != base + i:
                raise DatasetError(
                    f"{self.source}: case ids must be unique; {case_id!r} is at row {seen + 1} and again at row "
                    f"{base + i + 1}. Give each row its own id, or drop the id column to number the rows"
                )
        self._rows += len(batch)


_worker_scorer: BatchScorer | None = None


def _start_worker(scorer: BatchScorer) -> None:
    global _worker_scorer
    _worker_scorer = scorer


def _score_in_worker(batch: RowBatch) -> ScoredBatch:
    assert _worker_scorer is not None
    return _worker_scorer.score(batch)


def check_workers_can_score(metrics: Sequence[Metric]) -> None:
    """Raise if a metric cannot be sent to worker processes (``workers=`` > 1), naming it."""
    import pickle

    from ...errors import ConfigError

    for metric in metrics:
        try:
            pickle.dumps(metric)
        except Exception as exc:
            raise ConfigError(
                f"workers=... scores in other processes, and metric {metric.name!r} cannot be sent there "
                f"({type(exc).__name__}: {exc}); define it at module level (not a lambda or a local function), "
                "or score with workers=1"
            ) from None


def score_batches(
    batches: Iterable[RowBatch],
    metrics: Sequence[Metric],
    *,
    source: str = "dataset",
    workers: int = 1,
    on_batch: Callable[[ScoredBatch], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[RunningSummary, dict[str, str]]:
    """Score every batch, in order, handing each scored batch to ``on_batch`` (a table writer);
    returns the running summary and the skipped cases.

    ``workers`` > 1 scores batches in that many processes (readers yield batches that are cheap
    to send: a file's byte range or row group), with a bounded number in flight, so memory stays
    bounded however large the input. ``progress(rows)`` is called after each batch.
    """
    summary = RunningSummary([m.name for m in metrics])
    ids = _UniqueIds(source)
    skipped: dict[str, str] = {}

    def take(scored: ScoredBatch) -> None:
        ids.add(scored)
        summary.add(scored)
        skipped.update(scored.skipped)
        if on_batch is not None:
            on_batch(scored)
        if progress is not None:
            progress(len(scored))

    if workers <= 1:
        scorer = BatchScorer(metrics)
        for batch in batches:
            take(scorer.score(batch))
    else:
        check_workers_can_score(metrics)
        _score_in_pool(batches, BatchScorer(metrics), workers, take)
    if not summary.rows and not skipped:
        raise DatasetError(f"{source}: the dataset has no rows")
    if not summary.with_predictions and not skipped:
        raise DatasetError(
            f"{source}: no agent was given and no row has a 'response' or 'predicted_trajectory' "
            "to score; pass an agent, or a dataset with saved predictions"
        )
    return summary, skipped


def _score_in_pool(batches: Iterable[RowBatch], scorer: BatchScorer, workers: int, take: Callable[[ScoredBatch], None]) -> None:
    import multiprocessing
    import threading
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # fork starts workers at once and needs no importable __main__; only safe while this process
    # runs no other thread (a lock held by one would stay held in the child). Else forkserver.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        method = "fork"
    else:
        method = "forkserver" if "forkserver" in methods else "spawn"
    context = multiprocessing.get_context(method)
    pending: deque = deque()
    try:
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker, initargs=(scorer,)) as pool:
            try:
                for batch in batches:
                    pending.append(pool.submit(_score_in_worker, batch))
                    if len(pending) >= 2 * workers:
                        take(pending.popleft().result())
                while pending:
                    take(pending.popleft().result())
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
    except BrokenProcessPool as exc:
        from ...errors import ConfigError

        raise ConfigError(
            f"a scoring worker process ended abruptly ({exc}); with workers > 1 from a script, put the call under "
            "if __name__ == '__main__': (worker processes import the script), or score with workers=1"
        ) from None
