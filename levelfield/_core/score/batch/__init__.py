"""The scoring engine: every score, a batch at a time.

Saved rows of any count (as a reader yields them), finished runs (the runs that finished
together; :class:`RunScorer`) and loaded cases (:func:`score_rows`) are all scored here. The
per-metric ``score()`` is the API a metric author writes; the engine calls it row by row for
metrics that declare nothing better, and computes the rest for a whole batch at once. What the
engine leaves out, the per-row explanations, is computed for the rows asked for
(``scoring.explain_scores``, :func:`explain_row`).

Production evaluation scores logs: millions of saved ``response`` / ``predicted_trajectory``
rows. Building an ``EvalCase`` with validated ``ToolCall``s for each row costs far more than the
metrics themselves, so here a batch of raw rows (dicts, as a file reader yields them) is scored
directly:

* trajectory metrics with an equivalence matcher get the row's :class:`~.matching.Alignment`
  from call keys cached by the call's JSON text, and give ``metric.value(alignment)``, the same
  code their ``score`` uses;
* metrics that name the fields they read (``Metric.reads``: exact match, BLEU, ROUGE, single tool
  use) get a context holding just those, tool calls as light objects;
* any other metric, and any row that is not flat (turns, a scenario, a request given as
  messages, an odd cell), goes through each metric's own ``score``: ``case_from_row`` →
  ``context_for`` → ``score_sync``.

Finished runs and loaded cases come as scoring contexts (:meth:`BatchScorer.score_contexts`):
the same kernels on the batch's alignments, the other metrics' own ``score``. Tests check every
entry point against each metric's own ``score`` on random cases. The summary of saved rows comes
from running aggregates (:class:`RunningSummary`), so no table needs to be held to compute it.

The engine's parts, one job a module: :mod:`.rows` reads saved rows (batches, cells, where each
field is), :mod:`.align` keys tool calls and aligns many rows at once, :mod:`.scorer` scores a
batch (:class:`~.scorer.BatchScorer`), :mod:`.summary` keeps the running summary, :mod:`.pool`
scores batches in order, in worker processes when asked, and :mod:`.runs` scores runs as they
finish (:class:`~.runs.RunScorer`). :func:`score_rows`, here, scores loaded cases or finished runs
in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...data.cost_limit import CostLimit
from ..metrics.base import Metric, Score, ScoringContext
from ..scoring import order_like, score_async, split_metrics
from .scorer import BatchScorer

__all__ = ["score_rows"]


async def score_rows(
    contexts: Sequence[ScoringContext], metrics: Sequence[Metric], *, concurrency: int = 16, budget: CostLimit | None = None,
    refused: Callable[[], Score] | None = None,
) -> list[dict[str, Score]]:
    """One dict of metric name -> Score per context, in order, by the engine (sync metrics for the
    whole batch at once, judged ones ``concurrency`` calls at a time); ``budget`` limits the judges'
    spend (a row refused scores ``refused()``, by default NaN as a failure of that metric)."""
    rows = BatchScorer(metrics).score_contexts(contexts)
    _, judged = split_metrics(metrics)
    if judged:
        await score_async(rows, contexts, judged, concurrency, budget, refused)
        rows = [order_like(row, metrics) for row in rows]
    return rows
