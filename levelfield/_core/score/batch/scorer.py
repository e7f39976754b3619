"""Scoring a batch: :class:`BatchScorer` gives every metric's score of a batch of saved rows (or
of scoring contexts) at once, kernels on the batch's alignments where a metric allows it, each
metric's own ``score`` otherwise; :func:`explain_row` gives one row's explanations."""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.dataset import ALIASES
from ...data.rows import case_from_row
from ...errors import DatasetError, exception_text
from ..matching import ToolCallMatcher, align
from ..metrics.base import Metric, Score, ScoringContext
from ..scoring import context_for, order_like, score_sync
from .align import CallKeys, align_batch
from .rows import (
    _FAILED,
    _FIELD_AT,
    _FIELDS,
    _NOT_FLAT,
    _SCENARIO,
    RowBatch,
    _calls,
    _calls_absent,
    _Irregular,
    _Layout,
    _light_calls,
    _missing,
    _text,
)

__all__ = ["BatchScorer", "ScoredBatch", "FIXED_COLUMNS", "explain_row", "detail_columns", "scored_by_kernel"]

FIXED_COLUMNS = ("case_id", "failure", "latency_in_seconds")
"""The columns every scored batch has before the ``<metric>/score`` columns."""
_NAN = float("nan")
_UNSCORED = Score(_NAN)
"""The score of a metric that does not apply to a row (no reference, failed run)."""
_SMALL_BATCH = 32
"""Fewer finished runs than this are aligned one by one (numpy's per-call cost outweighs it)."""
_INF = (float("inf"), float("-inf"))


def _trusted_reads(metric: Metric) -> tuple[str, ...] | None:
    """``metric.reads``, when declared where its ``score`` is (a subclass that overrides ``score``
    without saying what it reads may read anything)."""
    reads = getattr(metric, "reads", None)
    if reads is None:
        return None
    mro = type(metric).__mro__
    declared = next(c for c in mro if "reads" in c.__dict__)
    scorer = next(c for c in mro if "score" in c.__dict__)
    return tuple(reads) if issubclass(declared, scorer) else None


def _plain_computable(metric: Metric) -> bool:
    return type(metric).computable is Metric.computable


def scored_by_kernel(metric: Metric) -> bool:
    """Whether :meth:`BatchScorer.score_contexts` scores ``metric`` for a whole batch at once, its
    Scores without explanation: the only metric whose explanation a run's recorded Score lacks
    (every other sync metric is its own ``score``, explanation and all)."""
    matcher = getattr(metric, "matcher", None)
    return (
        callable(getattr(metric, "value", None))
        and isinstance(matcher, ToolCallMatcher)
        and matcher.is_equivalence
        and _plain_computable(metric)
        and tuple(metric.requires) == ("reference_trajectory",)
        and not getattr(metric, "is_async", False)
        and getattr(metric, "agent", None) is None  # light calls carry no agent: one agent's calls take the row path
    )


@dataclass
class ScoredBatch:
    """One batch's results as columns: ``case_id``, ``failure``, ``latency_in_seconds`` and one
    ``<metric>/score`` array per metric; ``failed`` counts, per metric, rows where the metric raised."""

    columns: dict[str, Any]
    failed: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Rows left out, by case id, with the reason (conversation scenarios need a user simulator)."""
    with_predictions: int = 0
    """Rows that have a ``response`` or ``predicted_trajectory`` column (saved predictions to score)."""
    failed_applies: dict[str, int] = field(default_factory=dict)
    """Per metric, failed rows whose case the metric applies to: they count as 0 in ``mean_failed_as_zero``."""
    details: dict[str, dict[int, Score]] = field(default_factory=dict)
    """Per metric, the rows (by position in the batch) whose Score says more than its value: extra
    columns, an error, a failure of the metric. Kept as the Score; :func:`detail_columns` writes them."""

    def __len__(self) -> int:
        return len(self.columns["case_id"])


class BatchScorer:
    """Scores batches of saved rows with ``metrics``; picklable, so worker processes can use it."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = list(metrics)
        self._kernels: list[tuple[Metric, CallKeys]] = []
        self._light: list[tuple[Metric, tuple[str, ...]]] = []
        self._whole: list[Metric] = []
        keys: dict[int, CallKeys] = {}
        for m in self.metrics:
            if scored_by_kernel(m):
                self._kernels.append((m, keys.setdefault(id(m.matcher), CallKeys(m.matcher))))  # type: ignore[attr-defined]
                continue
            reads = _trusted_reads(m)
            if (
                reads is not None
                and set(reads) <= set(_FIELD_AT)
                and set(m.requires) <= set(_FIELD_AT)
                and _plain_computable(m)
                and not getattr(m, "is_async", False)
                and getattr(m, "agent", None) is None
            ):
                self._light.append((m, reads))
            else:
                self._whole.append(m)
        self._layouts: dict[tuple[str, ...], _Layout] = {}

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def score_contexts(self, contexts: Sequence[ScoringContext]) -> list[dict[str, Score]]:
        """Every sync metric's Score of each context (runs as they finish, cases loaded whole), by
        metric, in metric order. Trajectory metrics with a kernel are scored for the whole batch at
        once and say no explanation (``scoring.explain_scores`` gives it for the rows asked); every
        other metric is its own ``score``, row by row."""
        rows: list[dict[str, Score]] = [{} for _ in contexts]
        groups: dict[int, tuple[CallKeys, list[Metric]]] = {}
        for m, k in self._kernels:
            groups.setdefault(id(k), (k, []))[1].append(m)
        for keyer, group in groups.values():
            # ``computable`` of a kernel metric: the run did not fail and the row has a reference trajectory.
            at = [i for i, ctx in enumerate(contexts) if not ctx.failure and ctx.reference_trajectory is not None]
            for row in rows:
                row.update((m.name, _UNSCORED) for m in group)
            if len(at) < _SMALL_BATCH:
                # A few runs (one finished run, journaled at once): the same ``value`` on each row's
                # own alignment; arrays pay off only for more rows.
                for i in at:
                    one = align(contexts[i].predicted_trajectory, contexts[i].reference_trajectory or [], keyer.matcher)
                    for metric in group:
                        rows[i][metric.name] = Score(float(metric.value(one)))  # type: ignore[attr-defined]
                continue
            alignment = align_batch([keyer.of_calls(contexts[i].predicted_trajectory) for i in at],
                                    [keyer.of_calls(contexts[i].reference_trajectory or []) for i in at])
            for metric in group:
                for i, value in zip(at, metric.value(alignment).tolist()):  # type: ignore[attr-defined]
                    rows[i][metric.name] = Score(value)
        others = [m for m in self.metrics if not getattr(m, "is_async", False) and m.name not in rows[0]] if rows else []
        if others:
            for row, ctx in zip(rows, contexts):
                row.update(score_sync(ctx, others))
        sync = [m for m in self.metrics if not getattr(m, "is_async", False)]
        return [order_like(row, sync) for row in rows]

    def _layout(self, row: Mapping[str, Any]) -> _Layout:
        """Which column holds each field for rows with these columns, and whether such rows are flat."""
        names = tuple(row)
        layout = self._layouts.get(names)
        if layout is None:
            used: dict[str, str] = {}
            for name in names:
                f = _FIELDS.get(name)
                if f is not None and (f not in used or ALIASES[f].index(name) < ALIASES[f].index(used[f])):
                    used[f] = name
            flat = not any(n in _NOT_FLAT for n in names) and "history" not in used and "state" not in used
            layout = self._layouts[names] = _Layout(
                used.get("case_id"), used.get("prompt"), used.get("response"), used.get("reference"),
                used.get("predicted_trajectory"), used.get("reference_trajectory"), flat,
                "response" in used or "predicted_trajectory" in used or "turns" in names,
            )
        return layout

    def score(self, batch: RowBatch) -> ScoredBatch:
        """Every metric's score of every row of ``batch``."""
        # The batch's rows live until it is scored, so the cyclic collector would walk them again
        # and again as objects are made; JSON rows hold no cycles, and are freed by refcount.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._score(batch)
        finally:
            if collecting:
                gc.enable()

    def _score(self, batch: RowBatch) -> ScoredBatch:
        rows = batch.rows()
        n = len(rows)
        ids: list[str] = []
        failure: list[bool] = []
        latency = np.full(n, _NAN)
        values = {m.name: np.full(n, _NAN) for m in self.metrics}
        failed: dict[str, int] = {}
        failed_applies: dict[str, int] = {}
        details: dict[str, dict[int, Score]] = {}
        skipped: list[int] = []
        with_predictions = 0
        groups: dict[int, tuple[CallKeys, list[Metric]]] = {}
        for m, k in self._kernels:
            groups.setdefault(id(k), (k, []))[1].append(m)
        kernels: list[tuple[CallKeys, list[int], list[Any], list[Any]]] = [(keyer, [], [], []) for keyer, _ in groups.values()]  # keyer, rows, predicted keys, reference keys
        # One matcher (the usual case) is read without a loop over matchers.
        single = kernels[0] if len(kernels) == 1 else None
        light = [(values[m.name], m, tuple(_FIELD_AT[f] for f in m.requires)) for m, _ in self._light]
        light_reads = {f for _, r in self._light for f in r}
        light_calls = bool({"predicted_trajectory", "reference_trajectory"} & light_reads)
        read_prompt = "prompt" in light_reads
        ctx = ScoringContext(case_id="", prompt=None, response=None, predicted_trajectory=[])
        whole = self._whole
        start = batch.start
        prompt = predicted = reference_calls = None
        for i, row in enumerate(rows):
            if type(row) is not dict:
                raise DatasetError(f"{batch.where(i)}: expected an object with named fields, got {type(row).__name__}")
            layout = self._layout(row)
            fast = layout.flat
            get = row.get
            with_predictions += layout.has_predictions
            case_id = get(layout.case_id) if layout.case_id is not None else None
            ids.append(case_id if type(case_id) is str else str(start + i) if _missing(case_id) else str(case_id))
            flag = get("failure")
            is_failed = flag is not None and flag in _FAILED
            failure.append(is_failed)
            lat = get("latency_in_seconds")
            if lat is not None:
                try:
                    latency[i] = float(lat)
                except (TypeError, ValueError):
                    pass
            if fast:
                try:
                    response = get(layout.response) if layout.response is not None else None
                    if type(response) is not str and response is not None:
                        response = _text(response)
                    reference = get(layout.reference) if layout.reference is not None else None
                    if type(reference) is not str and reference is not None:
                        reference = _text(reference)
                    if read_prompt:
                        prompt = get(layout.prompt) if layout.prompt is not None else None
                        if type(prompt) is not str and prompt is not None:
                            if not _missing(prompt):
                                raise _Irregular  # a request given as messages: the row path reads it
                            prompt = None
                        if prompt is not None and prompt.lstrip().startswith("{"):
                            raise _Irregular  # may be {"messages": ...} as JSON
                    predicted_cell = get(layout.predicted_trajectory) if layout.predicted_trajectory is not None else None
                    reference_cell = get(layout.reference_trajectory) if layout.reference_trajectory is not None else None
                    # Reading the calls checks them, as the row path does, whether or not a metric needs them.
                    if single is not None:
                        keyer = single[0]
                        rk = keyer.keys(reference_cell)
                        pk = keyer.keys(predicted_cell) or []
                    elif kernels:
                        keyed = [k[0].keys(reference_cell) for k in kernels]
                        keyed_p = [k[0].keys(predicted_cell) or [] for k in kernels]
                    if light_calls or not kernels:
                        predicted, reference_calls = _calls(predicted_cell), _calls(reference_cell)
                except _Irregular:
                    fast = False
            if is_failed and not any(not _missing(get(c)) for c in _SCENARIO):
                self._count_applies(row, start + i, batch.where(i), failed_applies)
            if not fast:
                if any(not _missing(get(c)) for c in _SCENARIO):
                    skipped.append(i)  # needs a user simulator; the caller says so
                    continue
                self._score_row(row, start + i, i, batch.where(i), is_failed, values, failed, self.metrics, details)
                continue
            if is_failed:
                continue  # a failed run is not scored: NaN, as on the row path
            if single is not None:
                if rk is not None:
                    single[1].append(i)
                    single[2].append(pk)
                    single[3].append(rk)
            elif kernels and keyed[0] is not None:
                for (_, rows_of, p_of, r_of), pk_, rk_ in zip(kernels, keyed_p, keyed):
                    rows_of.append(i)
                    p_of.append(pk_)
                    r_of.append(rk_)
            if light:
                if light_calls:
                    predicted_light = _light_calls(predicted) or []
                    reference_light = _light_calls(reference_calls)
                else:
                    # Only for ``requires``: no light metric here reads the calls.
                    predicted_light, reference_light = [], (None if _calls_absent(reference_cell) else [])
                present = (prompt, response, reference, reference_light, predicted_light)
                ctx.case_id, ctx.prompt, ctx.response, ctx.reference = ids[i], prompt, response, reference
                ctx.predicted_trajectory, ctx.reference_trajectory = predicted_light, reference_light  # type: ignore[assignment]
                ctx._alignments.clear()
                for column, metric, needs in light:
                    if any(present[at] is None for at in needs):
                        continue  # not computable: NaN, as ``Metric.computable`` says
                    try:
                        got = metric.score(ctx)
                        if type(got) is float and got not in _INF:
                            column[i] = got
                        else:
                            scored = Score.of(got)
                            column[i] = scored.value
                            if _detailed(scored):
                                details.setdefault(metric.name, {})[i] = scored
                    except Exception as exc:  # a metric bug must not lose the row: NaN, counted as the metric's failure
                        failed[metric.name] = failed.get(metric.name, 0) + 1
                        details.setdefault(metric.name, {})[i] = Score(_NAN, failed=True, error=exception_text(exc))
            if whole:
                self._score_row(row, start + i, i, batch.where(i), is_failed, values, failed, whole, details)
        for (_keyer, rows_of, p_of, r_of), (_, group) in zip(kernels, groups.values()):
            if rows_of:
                a = align_batch(p_of, r_of)
                for metric in group:
                    values[metric.name][rows_of] = metric.value(a)  # type: ignore[attr-defined]
        columns: dict[str, Any] = {"case_id": ids, "failure": np.array(failure, dtype=np.int8), "latency_in_seconds": latency}
        for name, column in values.items():
            columns[f"{name}/score"] = column
        skipped_ids = {}
        if skipped:
            keep = np.ones(n, dtype=bool)
            keep[skipped] = False
            skipped_ids = {ids[i]: "a conversation_scenario case needs a user simulator" for i in skipped}
            columns = {k: (v[keep] if isinstance(v, np.ndarray) else [x for x, k_ in zip(v, keep) if k_]) for k, v in columns.items()}
            moved = np.cumsum(keep) - 1  # a kept row's place once the skipped ones are gone
            details = {name: {int(moved[i]): sc for i, sc in rows.items() if keep[i]} for name, rows in details.items()}
        return ScoredBatch(columns, failed, skipped_ids, with_predictions, failed_applies, details)

    def _count_applies(self, row: Any, index: int, where: str, counts: dict[str, int]) -> None:
        """Count a failed row for each metric that applies to its case (failed rows are few: read as the row path does)."""
        case = case_from_row(dict(row), index, where)
        for metric in self.metrics:
            if metric.applies_to(case):
                counts[metric.name] = counts.get(metric.name, 0) + 1

    def _score_row(
        self,
        row: Any,
        index: int,
        position: int,
        where: str,
        is_failed: bool,
        values: dict[str, np.ndarray],
        failed: dict[str, int],
        metrics: Sequence[Metric],
        details: dict[str, dict[int, Score]],
    ) -> None:
        """One row the way ``score_saved`` scores it (the row path), into ``values[...][position]``."""
        case = case_from_row(dict(row) if isinstance(row, Mapping) else row, index, where)
        ctx = context_for(case, None)
        ctx.failure = is_failed
        for name, scored in score_sync(ctx, metrics).items():
            values[name][position] = scored.value
            if scored.failed:
                failed[name] = failed.get(name, 0) + 1
            if _detailed(scored):
                details.setdefault(name, {})[position] = scored


def _detailed(score: Score) -> bool:
    """Whether a Score has table columns besides its value and explanation."""
    return bool(score.extra) or score.error is not None or score.failed or score.usage is not None


def detail_columns(batches: Sequence[ScoredBatch], metric_names: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """The columns the batches' detailed Scores add to the table (extras, ``/error``, ``/failed``,
    ``/total_tokens``: what ``Score.columns`` writes besides the score and the explanation), by
    metric, each a full column (None where a row has no such value)."""
    total = sum(len(b) for b in batches)
    out: dict[str, dict[str, list[Any]]] = {}
    offset = 0
    for batch in batches:
        for name, rows in batch.details.items():
            columns = out.setdefault(name, {})
            for i, score in rows.items():
                for key, value in score.columns(name).items():
                    if key not in (f"{name}/score", f"{name}/explanation"):
                        columns.setdefault(key, [None] * total)[offset + i] = value
        offset += len(batch)
    return {name: out[name] for name in metric_names if name in out}


def explain_row(row: Mapping[str, Any], index: int, where: str, metrics: Sequence[Metric]) -> dict[str, Score]:
    """One saved row scored through each sync metric's own ``score``: the per-row Scores, with
    explanations, that the batch scorer leaves out (it is asked for one row at a time)."""
    case = case_from_row(dict(row), index, where)
    ctx = context_for(case, None)
    ctx.failure = row.get("failure") in _FAILED
    return score_sync(ctx, [m for m in metrics if not getattr(m, "is_async", False)])
