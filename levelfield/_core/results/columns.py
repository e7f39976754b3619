"""What an evaluation keeps in memory of runs that went to the journal: a few numbers a run.

When runs stream back from a cluster by the million, each finished run is scored and journaled
(``runs.jsonl``) as it arrives; the driver keeps only what the summary and the statistics read —
the case and trial, failure, latency, what the agent's tokens cost, each metric's value — in
typed arrays (about 40 bytes a run and 9 a metric), and where the run's line starts in the journal,
so the run itself (answer, trajectory, explanations) is read back when someone asks for it.

:func:`cost_items` is the one computation of what runs cost (latency, failures, tokens,
dollars), for runs held in memory and for these columns alike.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..data.prices import Cost, PriceTable, agent_usage, cost_note, usage_cost
from ..data.types import AgentRun
from ..score.metrics.base import Score

__all__ = ["RunColumns", "CostColumns", "cost_items", "as_array", "COST_KEYS", "score_cost", "mean", "std",
           "FAILURE_CLASSES"]

_TOKENS = ("input_tokens", "output_tokens", "total_tokens")
FAILURE_CLASSES = ("protocol", "transport", "agent")
"""Whose fault a failed run was (``AgentRun.failure_class``), in the order counts are shown."""
_PARTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""Token counts a run may leave unreported (kept as columns from the first run that reports one)."""


class CostColumns:
    """Latency, failure and the agent's tokens and dollars of each run, as columns (NaN: not reported)."""

    def __init__(self, prices: PriceTable | None = None) -> None:
        self.prices = prices or {}
        self.latency = array("d")
        self.failure = array("b")
        self.tokens: dict[str, array[float]] | None = None
        """``input_tokens``... per run; None until a run reports usage (then NaN for runs that did not).
        ``cache_read_tokens`` and the other parts join from the first run that reports them."""
        self.usd = array("d")
        self.reported = array("b")
        self.unpriced: set[str] = set()
        self.unnamed = False
        self.failure_classes: dict[str, int] = {}
        """Failed runs by whose fault they were (``AgentRun.failure_class``), for the runs that say."""

    @classmethod
    def of(cls, runs: Sequence[AgentRun], prices: PriceTable | None = None) -> CostColumns:
        columns = cls(prices)
        for run in runs:
            columns.add(run)
        return columns

    def __len__(self) -> int:
        return len(self.latency)

    def add(self, run: AgentRun) -> None:
        """One more run's latency, failure and (when reported) tokens and cost."""
        self.latency.append(run.latency_in_seconds)
        self.failure.append(1 if run.failure else 0)
        if run.failure and run.failure_class:
            self.failure_classes[run.failure_class] = self.failure_classes.get(run.failure_class, 0) + 1
        usage = agent_usage(run)
        if usage is None:
            if self.tokens is not None:
                for column in self.tokens.values():
                    column.append(math.nan)
                self.usd.append(math.nan)
                self.reported.append(0)
            return
        if self.tokens is None:  # the first run that reported usage: the runs before it reported none
            before = len(self.latency) - 1
            self.tokens = {key: array("d", [math.nan]) * before for key in _TOKENS}
            self.usd = array("d", [math.nan]) * before
            self.reported = array("b", [0]) * before
        for key in _TOKENS:
            self.tokens[key].append(float(getattr(usage, key)))
        for key in _PARTS:
            value = getattr(usage, key)
            if value is not None and key not in self.tokens:
                self.tokens[key] = array("d", [math.nan]) * (len(self.latency) - 1)
            if key in self.tokens:
                self.tokens[key].append(math.nan if value is None else float(value))
        cost = usage_cost(usage, self.prices)
        self.usd.append(cost.usd)
        self.reported.append(1)
        self.unpriced.update(cost.unpriced)
        self.unnamed = self.unnamed or cost.unnamed

    def run_cost(self, i: int) -> float:
        """Run ``i``'s cost in dollars (NaN: unknown, or no usage reported)."""
        return self.usd[i] if self.tokens is not None else math.nan


def cost_items(columns: CostColumns) -> dict[str, Any]:
    """What the runs cost: latency (mean, std, p50, p95), failures (mean, std, count) and, when the
    adapter reported usage, tokens (mean, sum over the runs that reported it; a failed run's partial
    usage counts, since those tokens were spent) and dollars (``cost_usd/mean``, ``/sum``: NaN when a
    model has no known price, ``cost_usd/note`` says which)."""
    out: dict[str, Any] = {}
    lat = as_array(columns.latency, float)
    out["latency_in_seconds/mean"] = mean(lat)
    out["latency_in_seconds/std"] = std(lat)
    known = lat[~np.isnan(lat)]
    out["latency_in_seconds/p50"] = float(np.quantile(known, 0.5)) if len(known) else float("nan")
    out["latency_in_seconds/p95"] = float(np.quantile(known, 0.95)) if len(known) else float("nan")
    fail = as_array(columns.failure, np.int8).astype(float)
    out["failure/mean"] = mean(fail)
    out["failure/std"] = std(fail)
    out["failure/count"] = int(fail.sum())
    classes = getattr(columns, "failure_classes", None)
    if classes:
        # Whose fault the failures were (A2A agents): all three said, so a zero is a zero, not unknown.
        for kind in FAILURE_CLASSES:
            out[f"failure/{kind}"] = int(classes.get(kind, 0))
    if columns.tokens is not None:
        for key in _TOKENS + tuple(k for k in _PARTS if k in columns.tokens):
            tokens = as_array(columns.tokens[key], float)
            out[f"{key}/mean"] = mean(tokens)
            out[f"{key}/sum"] = float(np.nansum(tokens))
        if "cache_read_tokens" in columns.tokens:
            # Over the runs that said how much of their prompt came from cache.
            read = as_array(columns.tokens["cache_read_tokens"], float)
            prompt = as_array(columns.tokens["input_tokens"], float)[~np.isnan(read)]
            out["cache_share"] = float(np.nansum(read) / prompt.sum()) if prompt.sum() else math.nan
        reported = as_array(columns.reported, np.int8).astype(bool)
        usd = as_array(columns.usd, float)[reported]
        # A partial sum would understate what was spent: one unknown price makes the sum unknown.
        total = math.nan if not len(usd) or np.isnan(usd).any() else math.fsum(usd.tolist())
        out["cost_usd/mean"] = total / len(usd) if len(usd) and not math.isnan(total) else math.nan
        out["cost_usd/sum"] = total
        note = cost_note([Cost(math.nan, tuple(sorted(columns.unpriced)), columns.unnamed)])
        if note is not None:
            out["cost_usd/note"] = note
    return out


class RunColumns(CostColumns):
    """One agent's runs as the driver keeps them once they are journaled: per run its case (position
    in the dataset) and trial, cost columns, each metric's value and whether the metric failed, and
    its journal line; whole Scores only for the rare rows that carry more (extras, a judge's usage)."""

    def __init__(self, metric_names: Sequence[str], prices: PriceTable | None = None) -> None:
        super().__init__(prices)
        self.names = list(metric_names)
        self.case = array("i")
        self.trial = array("i")
        self.line = array("q")
        """The journal line of each run: its byte offset (``>= 0``) once known, else ``-1 - k`` for
        the ``k``-th run the journal wrote in this evaluation (see :meth:`place`)."""
        self.values = {name: array("d") for name in self.names}
        self.metric_failed = {name: array("b") for name in self.names}
        self.rich: dict[int, dict[str, Score]] = {}
        self.successful = 0
        """Runs that did not fail, and of them, runs that made a tool call (the no-tool-call warning)."""
        self.with_calls = 0
        self.rate_limited = 0
        """Rate-limited answers the runs met, and the seconds they waited on limits, in all."""
        self.waited_seconds = 0.0

    def add_run(self, run: AgentRun, scores: Mapping[str, Score], case: int, line: int) -> None:
        """One more journaled run: its ``case`` position in the dataset, its scores and its journal ``line``."""
        i = len(self.case)
        self.add(run)
        self.case.append(case)
        self.trial.append(run.trial)
        self.line.append(line)
        rich = False
        for name in self.names:
            score = scores.get(name)
            self.values[name].append(math.nan if score is None else float(score.value))
            self.metric_failed[name].append(1 if score is not None and score.failed else 0)
            rich = rich or (score is not None and (bool(score.extra) or score.usage is not None))
        if rich:
            self.rich[i] = dict(scores)
        self.rate_limited += run.rate_limited
        self.waited_seconds += run.waited_seconds
        if not run.failure:
            self.successful += 1
            outputs = [run.output, *run.turns] if run.output is not None else list(run.turns)
            if any(o is not None and o.trajectory for o in outputs):
                self.with_calls += 1

    def place(self, offsets: Sequence[int]) -> None:
        """Turn the runs' journal write numbers into byte offsets, once the journal is closed."""
        for i, line in enumerate(self.line):
            if line < 0:
                self.line[i] = offsets[-1 - line]

    def shift(self, by: int) -> None:
        """The journal's lines moved ``by`` bytes (its header was rewritten)."""
        if by:
            for i in range(len(self.line)):
                self.line[i] += by

    def order(self, cases: int) -> np.ndarray:
        """The runs' positions in table order: dataset order, then trial order."""
        return np.lexsort((as_array(self.trial, np.int32), as_array(self.case, np.int32)))

    def value_array(self, name: str) -> np.ndarray:
        return as_array(self.values[name], float).copy()

    def summary_columns(self, order: np.ndarray) -> dict[str, Any]:
        """The columns ``summarize`` reads, in table order (``order``): ``/score``, ``/failed`` and,
        for the rows that carry them, a judge's costs."""
        out: dict[str, Any] = {}
        position = {int(i): k for k, i in enumerate(order)} if self.rich else {}
        for name in self.names:
            out[f"{name}/score"] = self.value_array(name)[order]
            failed = as_array(self.metric_failed[name], np.int8)[order]
            if failed.any():
                out[f"{name}/failed"] = [True if f else None for f in failed]
            rows = {position[i]: scores.get(name) for i, scores in self.rich.items()}
            for key in COST_KEYS:
                cells: list[Any] = [None] * len(order)
                for k, score in rows.items():
                    cells[k] = score_cost(score, key)
                if any(cell is not None for cell in cells):
                    out[f"{name}/{key}"] = cells
        return out


def as_array(values: array[Any], dtype: Any) -> np.ndarray:
    """A typed array's values as a NumPy array (a view, no copy; an empty one when there are none)."""
    return np.frombuffer(values, dtype=dtype) if len(values) else np.array([], dtype=dtype)


COST_KEYS = ("total_tokens", "input_tokens", "output_tokens", "judge_calls", "judge_latency", "agreement")
"""Per-row columns besides the score that the summary reads: the judge's cost and its samples' agreement."""


def score_cost(score: Score | None, key: str) -> Any:
    """One of :data:`COST_KEYS` of a Score, as ``Score.columns`` writes it (None when it has none)."""
    if score is None:
        return None
    if key == "total_tokens" and score.usage is not None:
        return score.usage.total_tokens  # Score.columns writes usage after the extras
    return score.extra.get(key) if score.extra else None


def mean(x: np.ndarray) -> float:
    """The mean of the values that are not NaN (NaN when none is)."""
    return float(np.nanmean(x)) if np.any(~np.isnan(x)) else float("nan")


def std(x: np.ndarray) -> float:
    """The sample standard deviation of the values that are not NaN (NaN below two)."""
    x = x[~np.isnan(x)]
    return float(np.std(x, ddof=1)) if len(x) > 1 else float("nan")
