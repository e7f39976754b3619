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
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import math
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np


from ..data.dataset import ALIASES, case_from_row
from ..errors import DatasetError, exception_text
from .matching import Alignment, ToolCallMatcher, align
from .metrics.base import FAILED_AS_ZERO, Metric, Score, ScoringContext
from ..data.cost_limit import CostLimit
from ..data.dataset import EvalCase
from ..data.types import AgentRun, ToolCall
from .scoring import context_for, order_like, score_async, score_sync, split_metrics

try:  # the fastest JSON we have; the standard library otherwise
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson ships with the 'parquet' and 'traces' extras
    _orjson = None

__all__ = [
    "RowBatch", "BatchScorer", "ScoredBatch", "RunningSummary", "score_batches", "batches_of",
    "check_workers_can_score", "FIXED_COLUMNS", "scored_rows", "explain_row", "detail_columns", "score_rows", "RunScorer",
]

FIXED_COLUMNS = ("case_id", "failure", "latency_in_seconds")
"""The columns every scored batch has before the ``<metric>/score`` columns."""

_NAN = float("nan")
_UNSCORED = Score(_NAN)
_SMALL_BATCH = 32
"""Fewer finished runs than this are aligned one by one (numpy's per-call cost outweighs it)."""
"""The score of a metric that does not apply to a row (no reference, failed run)."""
_FAILED = (True, 1, "1", "true", "True")
_NOT_FLAT = ("turns", "scenario", "conversation_scenario", "trace")
"""Columns that make a row more than one flat turn: such rows take the row path."""
_SCENARIO = ("scenario", "conversation_scenario")
_INF = (float("inf"), float("-inf"))
_FIELD_AT = {"prompt": 0, "response": 1, "reference": 2, "reference_trajectory": 3, "predicted_trajectory": 4}
"""Where a light context's fields sit in the tuple the batch path checks ``requires`` against."""
_FIELDS = {name: field for field, names in ALIASES.items() for name in names}


class RowBatch(Protocol):
    """A batch of saved rows as a reader yields them; cheap to pickle (worker processes read it)."""

    start: int
    """Index of the batch's first row in the whole dataset (rows without an id are numbered by it)."""

    def rows(self) -> list[Mapping[str, Any]]:
        """The rows (read from the file when first asked, in the process that scores them)."""
        ...

    def where(self, i: int) -> str:
        """Where row ``i`` of the batch comes from (``"file.jsonl line 7"``), for error messages."""
        ...


@dataclass
class _ListBatch:
    """Rows already in memory."""

    rows_: list[Mapping[str, Any]]
    start: int = 0
    label: str = "dataset"

    def rows(self) -> list[Mapping[str, Any]]:
        return self.rows_

    def where(self, i: int) -> str:
        return f"{self.label} row {self.start + i + 1}"


class _Call:
    """A tool call as the batch path holds it: the two fields matching reads, and no validation."""

    __slots__ = ("tool_name", "tool_input")

    def __init__(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input

    def to_vertex(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "tool_input": self.tool_input}


class _Irregular(Exception):
    """A cell the batch path does not read itself; the row path reads it (and names the problem)."""


def _missing(value: Any) -> bool:
    return value is None or (type(value) is float and math.isnan(value))


def _loads(text: str) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:
            pass  # NaN and Infinity: Python's json reads them, as the row path does
    return json.loads(text)


def _calls(value: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """A trajectory cell as ``(tool_name, tool_input)`` pairs, by ``ToolCall``'s rules; None when empty."""
    if _missing(value):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = _loads(value)
        except ValueError:
            raise _Irregular from None
    elif not isinstance(value, list):
        if hasattr(value, "tolist") and not isinstance(value, (tuple, dict)):
            value = value.tolist()  # Parquet and Arrow list cells
        elif not isinstance(value, tuple):
            raise _Irregular
    calls = []
    for item in value:
        if type(item) is not dict:
            raise _Irregular
        name = item.get("tool_name")
        if name is None:
            if "tool_name" in item or "name" not in item:
                raise _Irregular
            # ADK and OpenAI-style calls: {name, args} / {name, arguments} / {name, input}.
            name = item["name"]
            args = next((item[k] for k in ("tool_input", "args", "arguments", "input") if k in item), None)
        else:
            args = item.get("tool_input")
        if type(name) is not str:
            raise _Irregular
        if type(args) is not dict:
            if args is None:
                args = {}
            elif not isinstance(args, str):
                raise _Irregular
            else:
                try:
                    args = _loads(args) if args.strip() else {}
                except ValueError:
                    raise _Irregular from None
                if type(args) is not dict:
                    raise _Irregular
        calls.append((name, args))
    return calls


def _calls_absent(cell: Any) -> bool:
    return _missing(cell) or (isinstance(cell, str) and not cell.strip())


def _light_calls(calls: list[tuple[str, dict[str, Any]]] | None) -> list[_Call] | None:
    return None if calls is None else [_Call(name, args) for name, args in calls]


def _text(value: Any) -> str | None:
    if _missing(value):
        return None
    if type(value) is str:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _Irregular


class _CallKeys:
    """Each call's match key under one equivalence matcher, as a small int; keys are cached by
    the call's JSON text, so a call seen before costs one serialisation and one lookup."""

    _LIMIT = 1_000_000  # cached texts before the cache starts again: bounded memory on any data

    def __init__(self, matcher: ToolCallMatcher) -> None:
        self.matcher = matcher
        self._ids: dict[Hashable, int] = {}
        self._by_text: dict[bytes | str, int] = {}

    def _id(self, name: str, args: dict[str, Any]) -> int:
        key = self.matcher.key(_Call(name, args))  # type: ignore[arg-type]  # reads tool_name and tool_input only
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def keys(self, cell: Any) -> list[int] | None:
        """The match keys of a trajectory cell's calls (None for an empty cell).

        A call is keyed by its JSON text as given: the same text always reads as the same call,
        so only a call never seen before is read by ``ToolCall``'s rules (and checked)."""
        if _missing(cell):
            return None
        if not isinstance(cell, list) and hasattr(cell, "tolist") and not isinstance(cell, (str, dict)):
            cell = cell.tolist()  # a list cell of a DataFrame read from Parquet
        if not isinstance(cell, list):
            calls = _calls(cell)
            return None if calls is None else [self._id(*c) for c in calls]
        if _orjson is None:  # pragma: no cover - without orjson every call is read and keyed
            return [self._id(*c) for c in _calls(cell) or ()]
        get = self._by_text.get
        # The text as written (keys unsorted): a call whose keys come in another order is just
        # another entry, read once, with the same key.
        dumps = _orjson.dumps
        try:
            out = [get(dumps(item)) for item in cell]
        except TypeError:  # not JSON (an object from a DataFrame): each call read and keyed, not cached
            return [self._id(*c) for c in _calls(cell) or ()]
        if None in out:
            for j, found in enumerate(out):
                if found is None:
                    out[j] = self._miss(cell[j], dumps(cell[j]))
        return out

    def of_calls(self, calls: Sequence[ToolCall]) -> list[int]:
        """The match keys of tool calls already read (a run's output, a loaded case), cached by
        their JSON text as a saved call's are (a call seen before costs one serialisation)."""
        if _orjson is None:  # pragma: no cover - without orjson every call is keyed
            return [self._id(c.tool_name, c.tool_input) for c in calls]
        dumps, get, out = _orjson.dumps, self._by_text.get, []
        for call in calls:
            try:
                text = dumps((call.tool_name, call.tool_input))  # an array: never a saved call's text (an object)
            except TypeError:  # not JSON (an object an agent passed): keyed, not cached
                out.append(self._id(call.tool_name, call.tool_input))
                continue
            found = get(text)
            if found is None:
                found = self._id(call.tool_name, call.tool_input)
                if b"null" not in text:  # NaN and None write alike: keyed every time, never cached
                    if len(self._by_text) >= self._LIMIT:
                        self._by_text.clear()
                    self._by_text[text] = found
            out.append(found)
        return out

    def _miss(self, item: Any, text: bytes) -> int:
        """The key of a call whose text is not cached yet: read by ``ToolCall``'s rules, then cached."""
        (call,) = _calls([item]) or ()
        found = self._id(*call)
        # JSON writes NaN and None alike: such calls are read and keyed every time, never cached.
        if b"null" not in text:
            if len(self._by_text) >= self._LIMIT:
                self._by_text.clear()
            self._by_text[text] = found
        return found


class _Layout(NamedTuple):
    """Where one shape of row keeps each field (None: not there)."""

    case_id: str | None
    prompt: str | None
    response: str | None
    reference: str | None
    predicted_trajectory: str | None
    reference_trajectory: str | None
    flat: bool
    has_predictions: bool


def align_batch(predicted: Sequence[list[int]], reference: Sequence[list[int]]) -> Alignment:
    """The alignments of many rows at once, each field an array with one entry a row, from the
    rows' call keys (small ints): what ``align`` gives row by row, for an equivalence matcher."""
    m = len(reference)
    n_p = np.fromiter(map(len, predicted), dtype=np.int64, count=m)
    n_r = np.fromiter(map(len, reference), dtype=np.int64, count=m)
    exact = np.fromiter(map(operator.eq, predicted, reference), dtype=bool, count=m)
    # Matched calls: the size of the multiset intersection of each row's keys, for all rows
    # together: count each (row, key) on both sides, and add up the smaller counts by row.
    flat_p = np.fromiter(itertools.chain.from_iterable(predicted), dtype=np.int64, count=int(n_p.sum()))
    flat_r = np.fromiter(itertools.chain.from_iterable(reference), dtype=np.int64, count=int(n_r.sum()))
    width = int(max(flat_p.max(initial=0), flat_r.max(initial=0))) + 1
    codes_p = np.repeat(np.arange(m, dtype=np.int64), n_p) * width + flat_p
    codes_r = np.repeat(np.arange(m, dtype=np.int64), n_r) * width + flat_r
    keys_p, counts_p = np.unique(codes_p, return_counts=True)
    keys_r, counts_r = np.unique(codes_r, return_counts=True)
    common, at_p, at_r = np.intersect1d(keys_p, keys_r, assume_unique=True, return_indices=True)
    matched = np.bincount(common // width, weights=np.minimum(counts_p[at_p], counts_r[at_r]), minlength=m).astype(np.int64)
    # In order: the reference is a subsequence of the prediction. Only rows where every reference
    # call is matched but not one for one can go either way; the rest are decided already.
    in_order = exact | (n_r == 0)
    for i in np.flatnonzero(~in_order & (matched == n_r)).tolist():
        it = iter(predicted[i])
        in_order[i] = all(k in it for k in reference[i])
    return Alignment(n_p, n_r, matched, exact, in_order)


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
        self._kernels: list[tuple[Metric, _CallKeys]] = []
        self._light: list[tuple[Metric, tuple[str, ...]]] = []
        self._whole: list[Metric] = []
        keys: dict[int, _CallKeys] = {}
        for m in self.metrics:
            matcher = getattr(m, "matcher", None)
            value = getattr(m, "value", None)
            if (
                callable(value)
                and isinstance(matcher, ToolCallMatcher)
                and matcher.is_equivalence
                and _plain_computable(m)
                and tuple(m.requires) == ("reference_trajectory",)
                and not getattr(m, "is_async", False)
                and getattr(m, "agent", None) is None  # light calls carry no agent: one agent's calls take the row path
            ):
                self._kernels.append((m, keys.setdefault(id(matcher), _CallKeys(matcher))))
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
        groups: dict[int, tuple[_CallKeys, list[Metric]]] = {}
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
        groups: dict[int, tuple[_CallKeys, list[Metric]]] = {}
        for m, k in self._kernels:
            groups.setdefault(id(k), (k, []))[1].append(m)
        kernels = [(keyer, [], [], []) for keyer, _ in groups.values()]  # keyer, rows, predicted keys, reference keys
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
        for (keyer, rows_of, p_of, r_of), (_, group) in zip(kernels, groups.values()):
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


def _moments(x: np.ndarray) -> tuple[int, float, float]:
    """(count, mean, sum of squared deviations) of the non-NaN values of ``x``."""
    known = x[~np.isnan(x)]
    if not len(known):
        return 0, 0.0, 0.0
    mean = float(known.mean())
    return len(known), mean, float(((known - mean) ** 2).sum())


class _Moments:
    """Count, mean and variance of a stream of batches (Chan et al.'s pairwise update: stable)."""

    __slots__ = ("n", "mean", "m2", "nan")

    def __init__(self) -> None:
        self.n, self.mean, self.m2, self.nan = 0, 0.0, 0.0, 0

    def add(self, x: np.ndarray) -> None:
        n_b, mean_b, m2_b = _moments(x)
        self.nan += len(x) - n_b
        if not n_b:
            return
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / n
        self.m2 += m2_b + delta * delta * self.n * n_b / n
        self.n = n

    def mean_or_nan(self) -> float:
        return self.mean if self.n else _NAN

    def std(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else _NAN


class RunningSummary:
    """The summary of scored batches, kept as running aggregates: the same keys and numbers as
    ``EvalResult.summary_metrics`` of the row path (``row_count``, ``<metric>/mean|std|nan_count``,
    ``<metric>/failure_count`` when a metric failed on a row, latency and failure), without
    holding the table. Latency quantiles keep the latencies (8 bytes a row that has one)."""

    def __init__(self, metric_names: Sequence[str]) -> None:
        self.metric_names = list(metric_names)
        self.rows = 0
        self.with_predictions = 0
        self._scores = {name: _Moments() for name in self.metric_names}
        self._failed = {name: 0 for name in self.metric_names}
        self._failed_applies = {name: 0 for name in self.metric_names}
        self._latency = _Moments()
        self._latencies: list[np.ndarray] = []
        self._failure = _Moments()
        self._failures = 0

    def add(self, batch: ScoredBatch) -> None:
        cols = batch.columns
        self.rows += len(batch)
        self.with_predictions += batch.with_predictions
        for name, moments in self._scores.items():
            moments.add(np.asarray(cols[f"{name}/score"], dtype=float))
        for name, count in batch.failed.items():
            self._failed[name] = self._failed.get(name, 0) + count
        for name, count in batch.failed_applies.items():
            self._failed_applies[name] = self._failed_applies.get(name, 0) + count
        latency = np.asarray(cols["latency_in_seconds"], dtype=float)
        self._latency.add(latency)
        known = latency[~np.isnan(latency)]
        if len(known):
            self._latencies.append(known)
        failure = np.asarray(cols["failure"], dtype=float)
        self._failure.add(failure)
        self._failures += int(failure.sum())

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row_count": self.rows}
        for name, m in self._scores.items():
            out[f"{name}/mean"] = m.mean_or_nan()
            out[f"{name}/std"] = m.std()
            out[f"{name}/nan_count"] = m.nan
            if self._failed.get(name):
                out[f"{name}/failure_count"] = self._failed[name]
            # Failed rows add zeros: the mean over the scored rows and them.
            zeros = self._failed_applies.get(name, 0)
            out[f"{name}/{FAILED_AS_ZERO}"] = m.mean * m.n / (m.n + zeros) if m.n + zeros else _NAN
        out["latency_in_seconds/mean"] = self._latency.mean_or_nan()
        out["latency_in_seconds/std"] = self._latency.std()
        known = np.concatenate(self._latencies) if self._latencies else np.array([])
        out["latency_in_seconds/p50"] = float(np.quantile(known, 0.5)) if len(known) else _NAN
        out["latency_in_seconds/p95"] = float(np.quantile(known, 0.95)) if len(known) else _NAN
        out["failure/mean"] = self._failure.mean_or_nan()
        out["failure/std"] = self._failure.std()
        out["failure/count"] = self._failures
        return out


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

    from ..errors import ConfigError

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
        from ..errors import ConfigError

        raise ConfigError(
            f"a scoring worker process ended abruptly ({exc}); with workers > 1 from a script, put the call under "
            "if __name__ == '__main__': (worker processes import the script), or score with workers=1"
        ) from None


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


def is_trajectory_metric(metric: Metric) -> bool:
    """Whether ``metric`` scores the agent's tool calls (it needs or reads a trajectory)."""
    return "reference_trajectory" in getattr(metric, "requires", ()) or "predicted_trajectory" in (
        getattr(metric, "reads", None) or ())


def _any_calls(run: AgentRun) -> bool:
    outputs = [run.output, *run.turns] if run.output is not None else list(run.turns)
    return any(o is not None and o.trajectory for o in outputs)


class RunScorer:
    """Scores runs as they finish, by the engine: sync metrics in batches of the runs that finished
    together (while other runs are still in flight, so scoring costs no wall time), judged metrics
    together at the end.

    Pass it as ``run_agents(..., on_run=scorer)``, then ``await scorer.scores(runs)``.
    """

    def __init__(self, dataset: Iterable[EvalCase], metrics: Sequence[Metric], *, concurrency: int = 16,
                 budget: CostLimit | None = None) -> None:
        self.budget = budget
        """The judges' spending limit (``judge_max_cost_usd``), when one was set."""
        self._cases = {c.case_id: c for c in dataset}
        self._metrics = list(metrics)
        self._engine = BatchScorer(self._metrics)
        _, self._async = split_metrics(metrics)
        self._concurrency = concurrency
        self._done: dict[tuple[str, str, int], tuple[ScoringContext | None, dict[str, Score]]] = {}
        self._deferred: list[AgentRun] = []
        self.hidden_calls: dict[str, str] = {}
        """Agents known not to expose their tool calls (an A2A preflight found none), each with what to say:
        their successful runs without a call get NaN with that explanation on trajectory metrics, not 0."""
        self._trajectory = [m.name for m in self._metrics if is_trajectory_metric(m)]

    def _score(self, runs: Sequence[AgentRun]) -> list[tuple[ScoringContext, dict[str, Score]]]:
        contexts = [context_for(self._cases[run.case_id], run) for run in runs]
        rows = self._engine.score_contexts(contexts)
        if self.hidden_calls and self._trajectory:
            for run, row in zip(runs, rows):
                said = self.hidden_calls.get(run.agent_name)
                if said is not None and not run.failure and not _any_calls(run):
                    for name in self._trajectory:
                        if name in row:
                            row[name] = Score(math.nan, explanation=said)
        return list(zip(contexts, rows))

    def _keep(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        scored = self._score(runs)
        for run, (ctx, row) in zip(runs, scored):
            # The context is kept only for the judged metrics scored at the end: a run's context
            # kept for nothing is garbage the collector scans again and again while runs are in flight.
            self._done[(run.agent_name, run.case_id, run.trial)] = (ctx if self._async else None, row)
        return [row for _, row in scored]

    @property
    def judged(self) -> bool:
        """Whether some metric is judged (scored together at the end, in :meth:`scores`)."""
        return bool(self._async)

    def score_now(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """The sync metrics' scores of ``runs``, kept nowhere: for runs the caller journals and does not hold."""
        return [row for _, row in self._score(runs)] if runs else []

    def keep(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """Score ``runs``' sync metrics now, in one batch, keeping them for :meth:`scores`; returns them."""
        return self._keep(runs) if runs else []

    def __call__(self, run: AgentRun) -> dict[str, Score]:
        """Score ``run``'s sync metrics now (a batch of one); returns them (judged metrics come in :meth:`scores`)."""
        return self._keep([run])[0]

    def defer(self, run: AgentRun) -> None:
        """Score ``run`` once the event loop has run what is ready now (the next runs started),
        together with the other runs deferred meanwhile: scoring then fills the loop's idle time
        instead of delaying the runs that finished with it."""
        self._deferred.append(run)
        if len(self._deferred) == 1:
            try:
                asyncio.get_running_loop().call_soon(self._score_deferred)
            except RuntimeError:  # no loop: score now
                self._score_deferred()

    def _score_deferred(self) -> None:
        runs, self._deferred = self._deferred, []
        if runs:
            self._keep(runs)

    async def scores(self, runs: Sequence[AgentRun]) -> list[dict[str, Score]]:
        """Every metric's score of ``runs``, in their order."""
        self._score_deferred()
        keys = [(r.agent_name, r.case_id, r.trial) for r in runs]
        left = [r for r, key in zip(runs, keys) if key not in self._done]
        if left:
            self._keep(left)  # runs finished before this scorer saw them (a resumed journal's): one batch
        scored = [self._done.pop(key) for key in keys]
        rows = [row for _, row in scored]
        if self._async:
            contexts = [ctx if ctx is not None else context_for(self._cases[r.case_id], r) for r, (ctx, _) in zip(runs, scored)]
            await score_async(rows, contexts, self._async, self._concurrency, self.budget)
            rows = [order_like(row, self._metrics) for row in rows]
        return rows


def scored_rows(batches: Iterable[RowBatch]) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """The rows a scorer scores, in the order of its table, each with its index in the dataset and
    where it comes from (conversation-scenario rows, which it skips, left out)."""
    for batch in batches:
        for i, row in enumerate(batch.rows()):
            if isinstance(row, Mapping) and any(not _missing(row.get(c)) for c in _SCENARIO):
                continue
            yield batch.start + i, batch.where(i), row


def explain_row(row: Mapping[str, Any], index: int, where: str, metrics: Sequence[Metric]) -> dict[str, Score]:
    """One saved row scored through each sync metric's own ``score``: the per-row Scores, with
    explanations, that the batch scorer leaves out (it is asked for one row at a time)."""
    case = case_from_row(dict(row), index, where)
    ctx = context_for(case, None)
    ctx.failure = row.get("failure") in _FAILED
    return score_sync(ctx, [m for m in metrics if not getattr(m, "is_async", False)])


def batches_of(rows: Sequence[Mapping[str, Any]], size: int, label: str = "dataset") -> Iterator[RowBatch]:
    """In-memory rows as batches of ``size``; ``label`` names them in errors (``"<label> row 7"``)."""
    for start in range(0, len(rows), size):
        yield _ListBatch(list(rows[start : start + size]), start, label)
