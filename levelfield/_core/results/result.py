"""Results of an evaluation: the per-row table, the summary, the runs, and their export."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data.config import RunConfig
from ..data.cost_limit import BudgetReport
from ..data.dataset import EvalCase, EvalDataset, case_from_row
from ..errors import MissingExtraError, RecordError
from ..data.jsonsafe import dumps, to_jsonable
from ..data.prices import Cost, PriceTable, cost_note, total_cost, usage_cost
from ..score.batch.rows import scored_rows
from ..score.batch.scorer import explain_row
from ..score.scoring import context_for, explain_scores
from ..score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT, Metric, Score, score_columns
from .columns import COST_KEYS as _COST_KEYS, CostColumns, as_array, RunColumns, cost_items, mean as _mean, score_cost as _cost, std as _std
from .provenance import Evaluator, evaluators_from_header, evaluators_of
from .record import (RUNS_FILE, Record, finish_journal, fingerprints_of, make_header, metrics_from_specs, read_record,
                     read_runs_at, write_record)
from ..data.types import AgentOutput, AgentRun, Usage
from .writing import replacing, write_text

__all__ = ["EvalResult", "write_tables_in_pages", "TABLE_PAGE", "summarize", "FAILED_AS_ZERO", "FAILED_LEFT_OUT", "run_costs", "record_status", "BUDGET_EXHAUSTED", "judge_costs", "results_from_record", "table_to_csv", "write_table_files", "spreadsheet_safe", "CSV_OPTIONS", "table_to_parquet", "parquet_available", "write_summary", "SAVED_AGENT", "read_table", "saved_run"]

_CASE_FIELDS = ("prompt", "reference", "reference_trajectory")



def _trajectory(calls) -> list[dict[str, Any]] | None:
    return None if calls is None else [c.to_vertex() for c in calls]


def _floats(values: Any) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


def summarize(table: Mapping[str, Any], metric_names: Sequence[str]) -> dict[str, Any]:
    """Vertex-style metric summary: ``row_count``, ``<metric>/mean|std|nan_count``, judge costs.

    ``table`` maps column names to columns: a DataFrame, or a dict of lists. What the runs cost
    (latency, failures, tokens) comes from :func:`run_costs`.
    """
    summary: dict[str, Any] = {"row_count": len(next(iter(table.values()), [])) if not isinstance(table, pd.DataFrame) else len(table)}
    for name in metric_names:
        if f"{name}/score" not in table:
            continue
        col = _floats(table[f"{name}/score"])
        summary[f"{name}/mean"] = _mean(col)
        summary[f"{name}/std"] = _std(col)
        summary[f"{name}/nan_count"] = int(np.isnan(col).sum())
        if f"{name}/failed" in table:
            summary[f"{name}/failure_count"] = int(sum(v is True or v == 1 for v in table[f"{name}/failed"]))
        if f"{name}/agreement" in table:
            # The judge's consistency: how often its samples agreed, over the rows it was asked several times.
            agreement = _floats(table[f"{name}/agreement"])
            summary[f"{name}/agreement/mean"] = _mean(agreement)
        # Judged metrics: the judge's own cost, kept apart from the agent's tokens and latency.
        for key in ("total_tokens", "input_tokens", "output_tokens", "judge_calls", "judge_latency"):
            if f"{name}/{key}" in table:
                cost = _floats(table[f"{name}/{key}"])
                if np.any(~np.isnan(cost)):
                    summary[f"{name}/{key}/sum"] = float(np.nansum(cost))
        if f"{name}/cost_usd" in table:
            # Rows the judge spent tokens on whose price is unknown make the sum unknown, never zero.
            dollars = _floats(table[f"{name}/cost_usd"])
            spent = _floats(table[f"{name}/total_tokens"]) if f"{name}/total_tokens" in table else dollars
            unknown = np.isnan(dollars) & ~np.isnan(spent)
            summary[f"{name}/cost_usd/sum"] = float("nan") if unknown.any() else float(np.nansum(dollars))
    return summary


def run_costs(runs: Sequence[AgentRun], prices: PriceTable | None = None) -> dict[str, Any]:
    """What runs cost, the one place it is computed (see :func:`levelfield._core.results.columns.cost_items`):
    latency, failures, the agent's tokens and dollars; and for simulated conversations the simulated
    user's failures and cost, counted apart."""
    out = cost_items(CostColumns.of(runs, prices))
    conversations = [r.conversation for r in runs if r.conversation is not None]
    if conversations:
        # Simulator faults are not agent failures: counted apart, their runs left out of the scores.
        out["simulator_failure/count"] = sum(c.simulator_failure for c in conversations)
        sim = [c.simulator_usage.total_tokens for c in conversations if c.simulator_usage is not None]
        if sim:
            out["simulator_total_tokens/sum"] = float(sum(sim))
            costs = [usage_cost(c.simulator_usage, prices or {}) for c in conversations]
            out.update({k: v for k, v in _cost_items("simulator_cost_usd", costs).items() if not k.endswith("/mean")})
    return out


def _cost_items(key: str, costs: Sequence[Cost]) -> dict[str, Any]:
    """``<key>/mean`` and ``/sum`` of the reported costs, and ``<key>/note`` when some are unknown."""
    total, mean, _ = total_cost(costs)
    out: dict[str, Any] = {f"{key}/mean": mean, f"{key}/sum": total}
    note = cost_note(costs)
    if note is not None:
        out[f"{key}/note"] = note
    return out


def _summary_columns(rows: Sequence[Mapping[str, Score]], names: Sequence[str],
                     prices: PriceTable | None = None) -> dict[str, list[Any]]:
    """The columns :func:`summarize` reads (``/score``, ``/failed``, judge costs), straight from the
    Score objects: the same values ``Score.columns`` writes, without building every row's columns."""
    out: dict[str, list[Any]] = {}
    for name in names:
        scores = [row.get(name) for row in rows]
        if all(score is None for score in scores):
            continue
        out[f"{name}/score"] = [None if score is None else score.value for score in scores]
        if any(score is not None and score.failed for score in scores):
            out[f"{name}/failed"] = [True if score is not None and score.failed else None for score in scores]
        if not any(score is not None and (score.extra or score.usage is not None) for score in scores):
            continue  # no judge costs (the common case): nothing more to read
        for key in _COST_KEYS:
            costs = [_cost(score, key) for score in scores]
            if any(cost is not None for cost in costs):
                out[f"{name}/{key}"] = costs
        if any(score is not None and score.usage is not None for score in scores):
            out[f"{name}/cost_usd"] = judge_costs([s.usage if s is not None else None for s in scores], prices)
    return out


def judge_costs(usages: Sequence[Any], prices: PriceTable | None) -> list[float]:
    """Each row's judge cost in dollars (NaN: unknown, or no usage reported)."""
    return [usage_cost(u, prices or {}).usd if u is not None else math.nan for u in usages]


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


class EvalResult:
    """The outcome of ``evaluate``: one row per case and trial, in dataset order.

    ``scores[i]`` holds run ``i``'s scores as ``<metric>/...`` columns; the ``Score`` objects
    behind them are ``row_scores[i]`` (metric name -> Score). ``save(dir)`` writes the run record
    and tables, ``EvalResult.load(dir)`` reads them back with the same summary.

    One type for every result. Runs scored as they finish hold their runs and Scores. Saved
    predictions scored batch by batch (:meth:`from_batches`) hold a table of scores (in memory or
    in a file) and the summary of running aggregates; what the batch scorer leaves out is computed
    when first asked, from the saved rows read again: per-row explanations (:meth:`explain`,
    :meth:`with_explanations`, ``row_scores``), the cases and runs with the saved answers
    (``dataset``, ``runs``). Without the rows (a table read back alone), ``runs`` and ``row_scores``
    come from the table: no answers, no explanations.
    """

    def __init__(
        self,
        dataset: EvalDataset,
        runs: Sequence[AgentRun],
        scores: Sequence[Mapping[str, Score]],
        metrics: Sequence[Metric],
        *,
        agent_name: str | None = None,
        scored_saved_predictions: bool = False,
        config: RunConfig | None = None,
    ) -> None:
        self._start(metrics, agent_name, scored_saved_predictions, config, dataset.source)
        self._dataset = dataset
        self._runs = list(runs)
        self._engine_scores = [dict(row) for row in scores]

    def _start(self, metrics: Sequence[Metric], agent_name: str | None, scored_saved_predictions: bool,
               config: RunConfig | None, source: str) -> None:
        """The fields every result has, whatever holds its rows."""
        self.metrics = list(metrics)
        self.agent_name = agent_name
        self.scored_saved_predictions = scored_saved_predictions
        self.config = config or RunConfig()
        self.source = source
        """Where the cases came from (a file, ``"dataset"``, ``"DataFrame"``)."""
        self.skipped: dict[str, str] = {}
        self.limits: list[Any] = []
        self.a2a_preflight: dict[str, dict[str, Any]] = {}
        """The A2A conformance preflight of the agent (``Preflight.to_dict()``) by its name, when one ran."""
        """What each endpoint's limit did (``levelfield._core.run.limits.LimitStats``): the concurrency it
        ran at, rate-limited answers, time waiting on limits; empty for saved predictions."""
        """``{case_id: reason}`` for cases that were not run (e.g. conversation scenarios)."""
        self.not_started: list[tuple[str, str, int]] = []
        """(agent, case id, trial) of the runs a spending limit (``max_cost_usd``) kept from starting;
        ``resume=True`` with a larger limit runs them."""
        self.budget: BudgetReport | None = None
        self.tools_header: dict[str, Any] | None = None
        """What levelled the agent's tools (the run record's ``tools`` header field; ``levelfield.tools``)."""
        self.tool_levelling: dict[str, Any] | None = None
        """The agent's tools levelled or not (``levelled``, ``how`` | ``why``) and its calls counted by
        source and fault (``counts``, see ``levelfield.tools.summary.tool_counts``); None: not levelled."""
        """With ``max_cost_usd``: the limit, what was spent and is left, and per agent what its runs
        spent and how many the limit kept from starting (``str(result.budget)`` says it in words)."""
        self.judge_corrections: dict[str, Any] = {}
        """Metric name -> ``JudgeCorrection`` when ``evaluate(..., human_labels=...)`` corrected a judged metric."""
        self._evaluators: dict[str, Evaluator] | None = None
        """What gave the scores as recorded (a result read back, a baseline's kept scores); None: the metrics' own."""
        self.table_path: Path | None = None
        """Where the metrics table was streamed (saved predictions with ``out=``), when it was."""
        self._dataset: EvalDataset | None = None
        self._runs: list[AgentRun] | None = None
        self._engine_scores: list[dict[str, Score]] | None = None
        """The scores as the engine gave them (runs scored as they finish): explanations left out where it scored a batch at once."""
        self._row_scores: list[dict[str, Score]] | None = None
        self._scores: list[dict[str, Any]] | None = None
        self._table: pd.DataFrame | None = None
        self._summary: dict[str, Any] | None = None
        self._batches = False
        self._rows: Callable[[], Iterable[Any]] | None = None
        self._explained: dict[str, dict[str, Score]] = {}
        self._columns: RunColumns | None = None
        """Runs journaled and not held (:meth:`from_journal`): what is kept of each, in columns."""
        self._journal: Path | None = None
        self._order: np.ndarray | None = None
        self._by_case: np.ndarray | None = None  # journaled runs' dataset positions, in table order
        self._case_pos: dict[str, int] = {}
        self._page: tuple[int, list[AgentRun]] = (0, [])  # the page of runs read back last (case_runs)

    @classmethod
    def from_batches(
        cls,
        metrics: Sequence[Metric],
        summary: Mapping[str, Any],
        *,
        source: str,
        config: RunConfig | None = None,
        table: pd.DataFrame | None = None,
        table_path: Path | None = None,
        skipped: Mapping[str, str] | None = None,
        rows: Callable[[], Iterable[Any]] | None = None,
    ) -> EvalResult:
        """The result of saved predictions scored batch by batch: their ``table`` (or where it was
        written, ``table_path``) and ``summary``; ``rows()`` gives the saved rows' batches again
        (``levelfield._core.score.batch.RowBatch``), for what is computed when asked."""
        result = cls.__new__(cls)
        result._start(metrics, None, True, config, source)
        result._summary = dict(summary)
        result._table = table
        result.table_path = table_path
        result.skipped = dict(skipped or {})
        result._rows = rows
        result._batches = True
        return result

    @classmethod
    def from_journal(
        cls,
        dataset: EvalDataset,
        columns: RunColumns,
        metrics: Sequence[Metric],
        journal: Path,
        *,
        agent_name: str,
        config: RunConfig | None = None,
    ) -> EvalResult:
        """The result of runs that went to the ``journal`` as they finished and were not held: the
        summary and the statistics come from ``columns`` (a few numbers a run); the runs, their
        scores and the tables are read back from the journal when asked, a page at a time when saved."""
        result = cls.__new__(cls)
        result._start(metrics, agent_name, False, config, dataset.source)
        result._dataset = dataset
        result._columns = columns
        result._journal = journal
        result._order = columns.order(len(dataset))
        return result

    @property
    def streamed(self) -> bool:
        """Whether the runs live in the journal only (:meth:`from_journal`) and are not read back yet."""
        return self._columns is not None and self._runs is None

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def dataset(self) -> EvalDataset:
        """The cases, in order (read from the saved rows when first asked, for saved predictions)."""
        if self._dataset is None:
            self._read_rows()
        assert self._dataset is not None
        return self._dataset

    @property
    def runs(self) -> list[AgentRun]:
        """Every run (``AgentRun``), one per table row (saved answers read again when first asked)."""
        if self._runs is None:
            self._read_rows()
        assert self._runs is not None
        return self._runs

    @property
    def row_scores(self) -> list[dict[str, Score]]:
        """Each run's Scores by metric, with explanations (those the engine leaves out computed when first asked)."""
        if self.streamed:
            self._read_rows()
        if self._row_scores is None:
            if self._engine_scores is not None:
                self._row_scores = [self._explained_run(i) for i in range(len(self._engine_scores))]
            elif self._rows is None:
                table = self.metrics_table
                columns = [(m.name, table[f"{m.name}/score"].to_numpy(dtype=float)) for m in self.metrics]
                self._row_scores = [{name: Score(float(col[i])) for name, col in columns} for i in range(len(table))]
            else:
                self._row_scores = [self._with_values(i, explain_row(row, index, where, self.metrics))
                                    for i, (index, where, row) in enumerate(self._saved_rows())]
        return self._row_scores

    def _engine_rows(self) -> list[dict[str, Score]]:
        """The scores as the engine gave them: what the table and the summary are made of."""
        if self.streamed:
            self._read_rows()
        return self._engine_scores if self._engine_scores is not None else self.row_scores

    @property
    def recorded_scores(self) -> list[dict[str, Score]]:
        """Each run's Scores as the engine gave them (explanations it leaves out are not made): what
        the run record stores, as the journal did while the runs finished."""
        return self._engine_rows()

    def _explained_run(self, i: int) -> dict[str, Score]:
        """Run ``i``'s engine scores with the explanations the engine left out."""
        run, scores = self.runs[i], self._engine_scores[i]  # type: ignore[index]
        case = self._cases_by_id().get(run.case_id)
        return scores if case is None else explain_scores(context_for(case, run), self.metrics, scores)

    def _cases_by_id(self) -> dict[str, EvalCase]:
        # Made once: explaining every run asks it once a run.
        dataset = self.dataset
        held = self.__dict__.get("_by_id")
        if held is None or held[0] is not dataset:
            held = self.__dict__["_by_id"] = (dataset, {c.case_id: c for c in dataset})
        return held[1]

    @property
    def scores(self) -> list[dict[str, Any]]:
        """Each run's scores as ``<metric>/score``, ``/explanation``, ... columns (see ``Score.columns``),
        as the metrics table holds them (explanations the engine leaves out are in :meth:`with_explanations`)."""
        if self._scores is None:
            self._scores = [score_columns(row) for row in self._engine_rows()]
        return self._scores

    # -- saved predictions: what is read again when asked ------------------------------------

    def _saved_rows(self) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
        """The saved rows in table order (index, where, row)."""
        assert self._rows is not None
        return scored_rows(self._rows())

    def _read_rows(self) -> None:
        """The cases and runs of saved predictions: from the saved rows, else from the table; or
        the runs of a journal, read back from it."""
        if self._columns is not None:
            entries = self._journaled(self._order)
            self._runs = [run for run, _ in entries]
            self._engine_scores = [scores for _, scores in entries]
            return
        if self._rows is not None:
            cases = [case_from_row(dict(row), index, where) for index, where, row in self._saved_rows()]
            self._dataset = EvalDataset(cases, source=self.source)
            self._runs = [saved_run(case) for case in cases]
            return
        table = self.metrics_table
        ids = table["case_id"].astype(str).tolist() if "case_id" in table else [str(i) for i in range(len(table))]
        failures = table["failure"].tolist() if "failure" in table else [0] * len(table)
        latency = table["latency_in_seconds"].tolist() if "latency_in_seconds" in table else [math.nan] * len(table)
        self._runs = [
            AgentRun(case_id=c, agent_name=SAVED_AGENT, output=None, latency_in_seconds=float(lat), failure=bool(f))
            for c, f, lat in zip(ids, failures, latency)
        ]
        self._dataset = EvalDataset([EvalCase(case_id=r.case_id, prompt=None) for r in self._runs], source=self.source)

    def _journaled(self, positions: Iterable[int]) -> list[tuple[AgentRun, dict[str, Score]]]:
        """The runs at ``positions`` (in the columns) with their scores, read back from the journal."""
        assert self._columns is not None and self._journal is not None
        lines = self._columns.line
        entries = read_runs_at(self._journal, [lines[int(i)] for i in positions])
        nan = {m.name: Score(math.nan) for m in self.metrics}
        return [(run, scores if scores is not None else dict(nan)) for run, scores in entries]

    def _table_scores(self, position: int) -> dict[str, Score]:
        table = self.metrics_table
        return {m.name: Score(float(table[f"{m.name}/score"].iloc[position])) for m in self.metrics}

    def _with_values(self, position: int, explained: Mapping[str, Score]) -> dict[str, Score]:
        """The Scores of ``explained`` holding the table's numbers: the batch scorer's values, the row's explanations."""
        out = self._table_scores(position)
        for name, score in explained.items():
            if name in out:
                out[name] = dataclasses.replace(score, value=out[name].value)
        return out

    def _row(self, case: EvalCase, run: AgentRun, scores: dict[str, Any], row_scores: Mapping[str, Score]) -> dict[str, Any]:
        row: dict[str, Any] = {"case_id": case.case_id, "trial": run.trial}
        row["prompt"] = case.prompt
        if case.history:
            row["history"] = [m.model_dump() for m in case.history]
        row["reference"] = case.reference
        row["reference_trajectory"] = _trajectory(case.reference_trajectory)
        for key, value in case.metadata.items():
            if key not in ("latency_in_seconds", "failure"):
                row.setdefault(key, value)
        out = run.output or run.partial_output
        row["response"] = out.response if out is not None else (case.response if self.scored_saved_predictions else None)
        row["predicted_trajectory"] = _trajectory(out.trajectory) if out is not None else None
        row["latency_in_seconds"] = run.latency_in_seconds
        row["failure"] = int(run.failure)
        row["error"] = run.error
        row["error_type"] = run.error_type
        usage = out.usage if out is not None else None
        conv = run.conversation
        if conv is not None:
            # A simulated conversation: the user's turns, how it ended, and each side's cost apart.
            row["prompt"] = conv.user_turns[0] if conv.user_turns else row["prompt"]
            row["user_turns"] = list(conv.user_turns)
            row["turns_used"] = len(run.turns)
            row["conversation_status"] = conv.status
            row["simulator_failure"] = int(conv.simulator_failure)
            row["simulator_error"] = conv.error
            row["replayed_from"] = conv.replayed_from
            row["simulator_total_tokens"] = conv.simulator_usage.total_tokens if conv.simulator_usage else None
            usage = conv.agent_usage
        row["input_tokens"] = usage.input_tokens if usage else None
        row["output_tokens"] = usage.output_tokens if usage else None
        row["total_tokens"] = usage.total_tokens if usage else None
        for part in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            row[part] = getattr(usage, part) if usage else None
        prices = self.config.prices or {}
        cost = usage_cost(usage, prices)
        row["cost_usd"] = cost.usd
        row["cost_note"] = cost_note([cost])
        if conv is not None and conv.simulator_usage is not None:
            row["simulator_cost_usd"] = usage_cost(conv.simulator_usage, prices).usd
        row.update(scores)
        for name, score in row_scores.items():
            if score.usage is not None:
                row[f"{name}/cost_usd"] = usage_cost(score.usage, prices).usd
        return row

    @property
    def metrics_table(self) -> pd.DataFrame:
        """One row per case and trial: dataset columns, the agent's answer, latency, failure, scores.

        Saved predictions scored batch by batch: the rows' own columns when they were in memory,
        else ``case_id``, ``failure``, ``latency_in_seconds``; then ``<metric>/score`` and what a
        metric adds (extras, errors), without explanations (see :meth:`with_explanations`)."""
        if self._table is None and self.table_path is not None:
            self._table = read_table(self.table_path)
        if self._table is None:
            self._table = self._table_of(self._engine_rows())
        return self._table

    def _table_of(self, row_scores: Sequence[Mapping[str, Score]]) -> pd.DataFrame:
        """The metrics table of runs scored as they finish, with ``row_scores`` as their scores."""
        by_id = self._cases_by_id()
        return _trimmed(pd.DataFrame([self._row(by_id[r.case_id], r, score_columns(rs), rs)
                                      for r, rs in zip(self.runs, row_scores)]))

    def table_pages(self, size: int, *, explain: bool = True) -> Iterator[list[dict[str, Any]]]:
        """The rows of the metrics table (with explanations, or as the engine gave the scores), a
        page of journaled runs read back at a time (see :func:`write_tables_in_pages`)."""
        assert self._order is not None
        by_id = self._cases_by_id()
        for start in range(0, len(self._order), size):
            rows = []
            for run, scores in self._journaled(self._order[start : start + size]):
                case = by_id[run.case_id]
                if explain:
                    scores = explain_scores(context_for(case, run), self.metrics, scores)
                rows.append(self._row(case, run, score_columns(scores), scores))
            yield rows

    def case_runs(self, case_id: str) -> list[AgentRun]:
        """The runs of one case, in trial order. Runs that live in the journal are read back a page
        of cases at a time (the page around this case, kept until a case outside it is asked for),
        so asking for every case in order reads the journal once and holds one page."""
        if not self.streamed:
            return [run for run in self.runs if run.case_id == case_id]
        assert self._columns is not None and self._order is not None
        if self._by_case is None:
            self._case_pos = {c.case_id: i for i, c in enumerate(self.dataset)}
            self._by_case = as_array(self._columns.case, np.int32)[self._order]
        position = self._case_pos.get(case_id)
        if position is None:
            return []
        lo, hi = (int(x) for x in np.searchsorted(self._by_case, [position, position + 1]))
        start, page = self._page
        if not (start <= lo and hi <= start + len(page)):
            end = max(hi, min(lo + TABLE_PAGE, len(self._order)))
            start, page = lo, [run for run, _ in self._journaled(self._order[lo:end])]
            self._page = (start, page)
        return page[lo - start : hi - start]

    @property
    def journal(self) -> Path | None:
        """The journal that holds every run of this result with its recorded scores, when one does:
        ``save`` to its folder keeps it as the record; runs not held (:attr:`streamed`) are read from it."""
        return self._journal

    def recorded_in(self, journal: Path) -> None:
        """Say that ``journal`` holds exactly this result's runs with the scores :attr:`recorded_scores`
        gives (the engine journaled each as it finished): ``save`` then keeps it rather than writing
        every run again."""
        self._journal = journal

    def journal_moved(self, by: int) -> None:
        """The journal's lines moved ``by`` bytes (its header was rewritten: ``finish_journal``)."""
        if self._columns is not None:
            self._columns.shift(by)

    @property
    def summary_metrics(self) -> dict[str, Any]:
        """``row_count``, ``<metric>/mean``, ``<metric>/std``, ``<metric>/nan_count``, latency, failures, tokens
        (and ``<metric>/corrected_mean``... for judge-corrected metrics).

        A failed run is NaN and counted in ``nan_count``: ``<metric>/mean`` leaves it out.
        ``<metric>/mean_failed_as_zero`` is the mean with every failed run scoring 0 where the
        metric applies to its case (the rule ``compare`` uses by default), so both are at hand.
        """
        if self._summary is None and self.streamed:
            self._summary = self._summary_of_columns()
        if self._summary is None:
            columns = _summary_columns(self._engine_rows(), self.metric_names, self.config.prices)
            columns["failure"] = [int(r.failure) for r in self.runs]  # row_count when there are no metrics
            summary = summarize(columns, self.metric_names)
            for metric in self.metrics:
                if f"{metric.name}/score" in columns:
                    summary[f"{metric.name}/{FAILED_AS_ZERO}"] = _mean(
                        self.failed_as_zero(metric, _floats(columns[f"{metric.name}/score"])))
            summary.update(run_costs(self.runs, self.config.prices))
            self._summary = summary
        if self.judge_corrections:
            return {**self._summary, **{k: v for c in self.judge_corrections.values() for k, v in c.summary_items().items()}}
        return self._summary

    def _summary_of_columns(self) -> dict[str, Any]:
        """The summary of journaled runs, from the numbers kept of each (no run read back)."""
        assert self._columns is not None and self._order is not None
        columns = self._columns.summary_columns(self._order)
        columns["failure"] = self.run_failures()
        summary = summarize(columns, self.metric_names)
        for metric in self.metrics:
            summary[f"{metric.name}/{FAILED_AS_ZERO}"] = _mean(self.failed_as_zero(metric, columns[f"{metric.name}/score"]))
        summary.update(cost_items(self._columns))
        return summary

    def run_failures(self) -> np.ndarray:
        """Whether each run failed, in table order (without reading journaled runs back)."""
        if self.streamed:
            assert self._columns is not None and self._order is not None
            return as_array(self._columns.failure, np.int8)[self._order].astype(bool)
        return np.array([r.failure for r in self.runs], dtype=bool)

    def run_cases(self) -> tuple[list[str], np.ndarray]:
        """Each run's case id and trial, in table order (without reading journaled runs back)."""
        if self.streamed:
            assert self._columns is not None and self._order is not None
            ids = [c.case_id for c in self.dataset]
            cases = as_array(self._columns.case, np.int32)[self._order]
            trials = as_array(self._columns.trial, np.int32)[self._order]
            return [ids[i] for i in cases], np.asarray(trials, dtype=int)
        return [r.case_id for r in self.runs], np.array([r.trial for r in self.runs], dtype=int)

    def score_values(self, metric: str) -> np.ndarray:
        """One metric's score of each run, in table order (NaN: not scored)."""
        if self.streamed:
            assert self._columns is not None
            return self._columns.value_array(metric)[self._order]
        return np.array([_num(row[metric].value) if metric in row else math.nan for row in self._engine_rows()], dtype=float)

    def cost_columns(self) -> CostColumns:
        """Latency, failure, tokens and dollars of each run, in table order for runs held (journaled
        runs: in the order they finished; see :meth:`run_order`)."""
        if self.streamed:
            assert self._columns is not None
            return self._columns
        return CostColumns.of(self.runs, self.config.prices)

    def run_costs(self) -> dict[str, Any]:
        """What the runs cost (:func:`run_costs`): latency, failures, tokens, dollars."""
        if self.streamed:
            assert self._columns is not None
            return cost_items(self._columns)
        return run_costs(self.runs, self.config.prices)

    def limit_totals(self) -> tuple[int, float]:
        """Rate-limited answers the runs met and the seconds they waited on limits, in all."""
        if self.streamed:
            assert self._columns is not None
            return self._columns.rate_limited, self._columns.waited_seconds
        return sum(r.rate_limited for r in self.runs), sum(r.waited_seconds for r in self.runs)

    def run_order(self) -> np.ndarray | None:
        """Where each row of :meth:`cost_columns` is in table order (None: already in table order)."""
        return self._order if self.streamed else None

    @property
    def failures(self) -> list[AgentRun]:
        if self.streamed:
            assert self._order is not None
            return [run for run, _ in self._journaled(self._order[self.run_failures()])]
        return [r for r in self.runs if r.failure]

    def explain(self, case_id: str) -> dict[str, Score]:
        """The scores of one case (its first trial) with their explanations (``"matched 1/2 reference
        calls; missing get_weather"``), by metric; for saved predictions, computed for this case
        only, when first asked."""
        if self.streamed:
            return self._explain_journaled(str(case_id))
        if not self._batches or self._row_scores is not None:
            for i, run in enumerate(self.runs):
                if run.case_id == str(case_id):
                    return dict(self.row_scores[i] if self._row_scores is not None else self._explained_run(i))
            raise KeyError(f"{self.source}: no case {case_id!r} in this result")
        found = self._explained.get(str(case_id))
        if found is not None:
            return found
        ids = self.metrics_table["case_id"].astype(str).tolist()
        try:
            position = ids.index(str(case_id))
        except ValueError:
            raise KeyError(f"{self.source}: no case {case_id!r} in this result") from None
        if self._rows is None:
            return self._table_scores(position)  # no rows to read again: the numbers alone
        for i, (index, where, row) in enumerate(self._saved_rows()):
            if i == position:
                found = self._with_values(position, explain_row(row, index, where, self.metrics))
                self._explained[str(case_id)] = found
                return found
        raise KeyError(f"{self.source}: case {case_id!r} is no longer in the saved rows")  # the file changed

    def _explain_journaled(self, case_id: str) -> dict[str, Score]:
        """One case's first trial, read back from the journal alone and explained."""
        assert self._columns is not None
        ids, trials = self.run_cases()
        for k, (cid, trial) in enumerate(zip(ids, trials)):
            if cid == case_id:
                [(run, scores)] = self._journaled([self._order[k]])  # type: ignore[index]
                case = self._cases_by_id()[case_id]
                return explain_scores(context_for(case, run), self.metrics, scores)
        raise KeyError(f"{self.source}: no case {case_id!r} in this result")

    def with_explanations(self, case_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """The metrics table with a ``<metric>/explanation`` column after each score column, filled
        for ``case_ids`` (every case when None). Runs scored as they finish have them already; for
        saved predictions scored batch by batch they are computed now, for the cases asked."""
        if not self._batches:
            if case_ids is None:
                return self._table_of(self.row_scores)
            wanted = {str(c) for c in case_ids}
            return self._table_of([self._explained_run(i) if run.case_id in wanted else raw
                                   for i, (run, raw) in enumerate(zip(self.runs, self._engine_rows()))])
        table = self.metrics_table.copy()
        ids = table["case_id"].astype(str).tolist()
        if case_ids is None:
            explained = [score_columns(row) for row in self.row_scores]
        else:
            wanted = {str(c) for c in case_ids}
            explained = [score_columns(self.explain(c)) if c in wanted else {} for c in ids]
        for m in self.metrics:
            column = [row.get(f"{m.name}/explanation") for row in explained]
            if any(v is not None for v in column):
                table.insert(table.columns.get_loc(f"{m.name}/score") + 1, f"{m.name}/explanation", column)
        return table

    def failed_as_zero(self, metric: Metric, values: np.ndarray) -> np.ndarray:
        """``values`` (one per run, in run order) with each failed run's score set to 0 where ``metric`` applies."""
        out = np.array(values, dtype=float)
        if self.streamed:
            assert self._columns is not None and self._order is not None
            applies = np.array([metric.applies_to(c) for c in self.dataset], dtype=bool)
            cases = as_array(self._columns.case, np.int32)[self._order]
            out[self.run_failures() & applies[cases]] = 0.0
            return out
        by_id = {c.case_id: c for c in self.dataset}
        for i, run in enumerate(self.runs):
            if run.failure and run.case_id in by_id and metric.applies_to(by_id[run.case_id]):
                out[i] = 0.0
        return out

    def __repr__(self) -> str:
        if self._batches:
            s = self._summary or {}
            return f"EvalResult(saved predictions, rows={s.get('row_count')}, failures={s.get('failure/count', 0)})"
        # Counted from the runs, not the summary: asyncio.run reprs the task holding the result
        # when it restores the SIGINT handler, and a repr must not compute a whole summary.
        failures = self.run_failures()
        return f"EvalResult(agent={self.agent_name!r}, rows={len(failures)}, failures={int(failures.sum())})"

    # -- provenance --------------------------------------------------------------------------

    @property
    def evaluators(self) -> dict[str, Evaluator]:
        """Metric name -> the :class:`~levelfield._core.results.provenance.Evaluator` that gave its scores
        (metric name and version, judge model and settings, prompt and rubric hashes, calibration).

        A result read back has the ones its record kept; a metric its record does not name (a record
        written before evaluators were kept) is absent: its provenance is unknown."""
        if self._evaluators is not None:
            return dict(self._evaluators)
        found = evaluators_of(self.metrics)
        for name, correction in self.judge_corrections.items():
            if name in found and hasattr(correction, "sensitivity"):
                found[name] = found[name].with_calibration(to_jsonable({
                    "kind": "judge_correction", "human_labels": correction.labeled, "sensitivity": correction.sensitivity,
                    "specificity": correction.specificity, "kappa": correction.kappa}))
        return found

    # -- saving and loading ------------------------------------------------------------------

    def record_header(self, *, status: str | None = None) -> dict[str, Any]:
        """The run-record header of this result (see ``levelfield._core.results.record``); its status
        is ``complete``, or ``budget_exhausted`` when runs were not started."""
        return make_header(
            source=self.dataset.source,
            fingerprints=fingerprints_of(self.dataset),
            agents=[self.agent_name or SAVED_AGENT],
            metrics=self.metrics,
            options=self.config.to_dict(),
            kind="evaluate",
            status=status or record_status(self.not_started),
            settings={"scored_saved_predictions": self.scored_saved_predictions,
                      **({"budget": self.budget.to_dict()} if self.budget is not None else {})},
            tools=self.tools_header,
            a2a_preflight=self.a2a_preflight,
            evaluators=self.evaluators,
        )

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``runs.jsonl`` (the run record), ``metrics_table.csv`` and ``summary.json`` into ``directory``,
        and ``metrics_table.parquet`` too when pyarrow is installed; the tables hold the explanations.

        Saved predictions whose rows cannot be read again (a table read back alone) have no runs
        to record: ``metrics_table.parquet`` (``.csv`` without pyarrow) and ``summary.json``."""
        out = Path(directory)
        if self.streamed:
            return self._save_journaled(out)
        if self._batches and self._rows is None:
            table = self.to_parquet(out / "metrics_table.parquet") if parquet_available() else self.to_csv(out / "metrics_table.csv")
            return {"metrics_table": table, "summary": write_summary(out / "summary.json", self.summary_metrics)}
        paths = {"runs": out / RUNS_FILE, "metrics_table": out / "metrics_table.csv", "summary": out / "summary.json"}
        if self._journal is not None and paths["runs"].resolve() == self._journal.resolve():
            self.journal_moved(finish_journal(self._journal, self.record_header()))  # the runs are there already
        else:
            write_record(paths["runs"], self.record_header(), list(self.dataset), fingerprints_of(self.dataset),
                         zip(self.runs, self.recorded_scores))
        # The tables a person reads say why; the record keeps what the engine gave.
        paths.update(write_table_files(self.with_explanations(), paths["metrics_table"],
                                       out / "metrics_table.parquet" if parquet_available() else None))
        write_summary(paths["summary"], self.summary_metrics)
        return paths

    def _save_journaled(self, out: Path) -> dict[str, Path]:
        """``save`` for runs that live in the journal: in the journal's own folder the record is the
        journal with its final header; the tables are written a page of runs at a time."""
        assert self._columns is not None and self._journal is not None
        paths = {"runs": out / RUNS_FILE, "metrics_table": out / "metrics_table.csv", "summary": out / "summary.json"}
        if paths["runs"].resolve() == self._journal.resolve():
            self.journal_moved(finish_journal(self._journal, self.record_header()))
        else:
            write_record(paths["runs"], self.record_header(), list(self.dataset), fingerprints_of(self.dataset),
                         self._journaled(self._order))  # type: ignore[arg-type]
        trials = len(np.unique(as_array(self._columns.trial, np.int32)))
        paths.update(write_tables_in_pages(self.table_pages, out, trials=trials))
        write_summary(paths["summary"], self.summary_metrics)
        return paths

    @classmethod
    def load(cls, location: str | Path, *, agent: str | None = None) -> "EvalResult":
        """Read a result back from a saved folder (or its ``runs.jsonl``); the summary is recomputed
        from the stored scores. A record of several agents needs ``agent=`` (or ``Comparison.load``)."""
        record = read_record(location)
        agents = record.agents
        if agent is None:
            if len(agents) != 1:
                raise RecordError(
                    f"{record.path}: holds {len(agents)} agents ({', '.join(agents)}); pick one with agent=... "
                    "or read them all with lf.Comparison.load"
                )
            agent = agents[0]
        elif agent not in agents:
            raise RecordError(f"{record.path}: no agent {agent!r}; it has: {', '.join(agents)}")
        return results_from_record(record)[agent]

    def _records(self) -> list[dict[str, Any]]:
        records = []
        for run, scores in zip(self.runs, map(score_columns, self.row_scores)):
            record = run.model_dump(mode="python")
            record["scores"] = scores
            records.append(to_jsonable(record))
        return records

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every run (output, trajectory, latency, failure, scores), one JSON object a line."""
        path = Path(path)
        with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as f:
            for record in self._records():
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path

    def to_csv(self, path: str | Path) -> Path:
        """Write the metrics table; trajectory cells as JSON so ``load_dataset`` reads them back."""
        path = Path(path)
        table_to_csv(self.metrics_table, path)
        return path

    def to_parquet(self, path: str | Path) -> Path:
        """Write the metrics table as Parquet (needs ``levelfield[parquet]``); trajectory and other
        list or dict cells as JSON text, so ``load_dataset`` reads them back exactly."""
        return table_to_parquet(self.metrics_table, path)



SAVED_AGENT = "saved predictions"
"""The agent name of scored saved predictions (no agent ran)."""

_FAILED_FLAGS = (True, 1, "1", "true", "True")


def _usage(value: Any) -> Usage | None:
    """A saved ``usage`` cell (``{input_tokens, output_tokens, total_tokens[, cache_read_tokens, ...]}``) as
    Usage; anything else None."""
    if not isinstance(value, Mapping):
        return None
    try:
        return Usage.model_validate(dict(value))
    except ValueError:
        return None


def saved_run(case: EvalCase) -> AgentRun:
    """The run of one case's saved prediction (no agent ran): failed where the row says so."""
    latency = case.metadata.get("latency_in_seconds")
    try:
        latency = float(latency) if latency is not None else math.nan
    except (TypeError, ValueError):
        latency = math.nan
    failed = case.metadata.get("failure") in _FAILED_FLAGS
    output = None
    turns: list[AgentOutput] = []
    if not failed:
        output = AgentOutput(
            response=case.response or "",
            trajectory=case.predicted_trajectory or [],
            retrieved_context=case.retrieved_context,
            usage=_usage(case.metadata.get("usage")),
        )
        if any(t.has_prediction for t in case.turns):
            # Saved per-turn answers become the run's turns, as a live multi-turn run records them.
            turns = [AgentOutput(response=t.response or "", trajectory=t.predicted_trajectory or []) for t in case.turns]
            output = turns[-1]
    error = case.metadata.get("error")
    return AgentRun(
        case_id=case.case_id,
        agent_name=SAVED_AGENT,
        output=output,
        latency_in_seconds=latency,
        failure=failed,
        turns=turns,
        error=str(error) if failed and error is not None else None,
    )


_EMPTY_DROPPED = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens",
                  "reasoning_tokens", "cost_note", "simulator_error", "replayed_from",
                  "simulator_total_tokens")
"""Columns a metrics table leaves out when no row has a value there."""


def _trimmed(table: pd.DataFrame, filled: set[str] | None = None, trials: int | None = None) -> pd.DataFrame:
    """A metrics table without its empty optional columns, and without ``trial`` for one trial.

    ``filled``: the columns with a value in some row, and ``trials`` the number of trials, of the
    whole table when ``table`` is one page of it (by default: this table's own; ``trials=-1``: keep
    ``trial`` whatever their number).
    """
    if filled is None:
        filled = {str(c) for c in table.columns if table[c].notna().any()}
    # ``error`` and ``error_type`` stay even when no run failed: a script that reads them
    # must not break on the day every run succeeds.
    # cost_usd stays while any run reported tokens: NaN there is an unknown price, not "no data".
    drop = [key for key in _EMPTY_DROPPED if key in table and key not in filled]
    if "total_tokens" not in filled and "cost_usd" in table:
        drop.append("cost_usd")
    if "trial" in table and 0 <= (table["trial"].nunique() if trials is None else trials) <= 1:
        drop.append("trial")
    return table.drop(columns=drop)


TABLE_PAGE = 5_000
"""Runs a page of a metrics table written from the journal holds (see :func:`write_tables_in_pages`)."""


def write_tables_in_pages(pages: Callable[[int], Iterable[list[dict[str, Any]]]], out: Path, *,
                          trials: int, size: int | None = None) -> dict[str, Path]:
    """``metrics_table.csv`` (and ``.parquet`` with pyarrow) from rows made a page at a time, in
    memory bounded by the page; the same table the rows make as a whole (one page is written so).

    One pass when the first page says what the whole table is (its columns, the Parquet type of
    each): pages of one evaluation are alike. When a later page differs (a column it alone has, a
    column empty so far, a type that does not fit), the files are written again in two passes: the
    whole table's columns and types first, then the pages. ``pages(size)`` gives the rows again
    each time it is called; ``trials``: as :func:`_trimmed`'s.
    """
    size = size or TABLE_PAGE
    parquet = parquet_available()
    paths = {"metrics_table": out / "metrics_table.csv"}
    if parquet:
        paths["metrics_table_parquet"] = out / "metrics_table.parquet"
    once = iter(pages(size))
    first = next(once, [])
    second = next(once, None)
    if second is None:  # one page: the whole table
        return write_table_files(_trimmed(pd.DataFrame(first), trials=trials), paths["metrics_table"],
                                 paths.get("metrics_table_parquet"))
    try:
        _write_pages(itertools.chain([first, second], once), paths, _Layout.of_first(first, trials, parquet))
    except _Uneven:
        _write_pages(pages(size), paths, _Layout.of_all(pages(size), trials, parquet))
    return paths


class _Uneven(Exception):
    """A page of a table written a page at a time differs from what the first page said."""


@dataclasses.dataclass
class _Layout:
    """What a table written in pages is: its columns, and the Parquet type of each (None: no Parquet)."""

    names: list[str]
    dropped: set[str]
    """Columns left out for being empty: a page with a value there does not fit."""
    schema: Any = None
    checked: bool = False
    """Learnt from the first page alone: every other page is checked against it."""

    @classmethod
    def of_first(cls, rows: list[dict[str, Any]], trials: int, parquet: bool) -> "_Layout":
        page = pd.DataFrame(rows)
        names = list(_trimmed(page, trials=trials).columns)
        schema = None
        if parquet:
            schema = _arrow_table(page[names]).schema  # a column empty in the first page is text (see _arrow_column)
        # Left out for being empty (``trial`` is left out for the number of trials, whatever it holds).
        return cls(names, {str(c) for c in page.columns} - set(names) - {"trial"}, schema, checked=True)

    @classmethod
    def of_all(cls, pages: Iterable[list[dict[str, Any]]], trials: int, parquet: bool) -> "_Layout":
        columns: dict[str, None] = {}
        filled: set[str] = set()
        schemas = []
        for rows in pages:
            page = pd.DataFrame(rows)
            columns.update(dict.fromkeys(map(str, page.columns)))
            here = [str(c) for c in page.columns if page[c].notna().any()]
            filled.update(here)
            if parquet:  # an empty column says nothing of the type (text unless some page says otherwise)
                schemas.append(_arrow_table(page[here]).schema)
        names = list(_trimmed(pd.DataFrame(columns=list(columns)), filled, trials).columns)
        schema = None
        if parquet:
            import pyarrow as pa

            unified = pa.unify_schemas(schemas, promote_options="permissive")
            schema = pa.schema([unified.field(name) if name in unified.names else pa.field(name, pa.string())
                                for name in names])
        return cls(names, set(columns) - set(names), schema)

    def page(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        if not self.checked:
            return pd.DataFrame(rows, columns=self.names)
        page = pd.DataFrame(rows)
        new = set(map(str, page.columns)) - set(self.names) - self.dropped - {"trial"}
        if new or any(page[c].notna().any() for c in self.dropped if c in page):
            raise _Uneven
        return page.reindex(columns=self.names)


def _write_pages(pages: Iterable[list[dict[str, Any]]], paths: Mapping[str, Path], layout: _Layout) -> None:
    with contextlib.ExitStack() as files:
        f = files.enter_context(files.enter_context(replacing(paths["metrics_table"])).open("w", encoding="utf-8", newline=""))
        writer = None
        if layout.schema is not None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            writer = files.enter_context(pq.ParquetWriter(files.enter_context(replacing(paths["metrics_table_parquet"])),
                                                          layout.schema))
        for n, rows in enumerate(pages):
            page = _json_cells(layout.page(rows))  # once for both files
            spreadsheet_safe(page).to_csv(f, header=n == 0, **CSV_OPTIONS)
            if writer is not None:
                try:
                    table = _arrow_table(page).cast(layout.schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                    if layout.checked:
                        raise _Uneven from None
                    raise
                writer.write_table(table)


def write_table_files(table: pd.DataFrame, csv: Path, parquet: Path | None = None) -> dict[str, Path]:
    """A results table as ``csv`` and, when given, ``parquet``: the one writer of both files, with list
    and dict cells turned to JSON text once for the two (see :func:`table_to_csv`, :func:`table_to_parquet`)."""
    table = _json_cells(table)
    table_to_csv(table, csv)
    paths = {"metrics_table": csv}
    if parquet is not None:
        paths["metrics_table_parquet"] = table_to_parquet(table, parquet)
    return paths


def _json_cells(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its list and dict cells as JSON text (the columns without any left as they are)."""
    out = None
    for col in table.columns[[pd.api.types.is_object_dtype(dtype) for dtype in table.dtypes]]:
        values = table[col].tolist()
        if any(type(v) in (list, dict) for v in values):
            out = table.copy(deep=False) if out is None else out
            out[col] = pd.Series([dumps(v) if type(v) in (list, dict) else v for v in values], index=table.index, dtype=object)
    return table if out is None else out


def table_to_csv(table: pd.DataFrame, path: Path) -> None:
    """Write a results table as CSV, list and dict cells as JSON (so ``load_dataset`` reads them back),
    text cells made safe for spreadsheets (see :func:`spreadsheet_safe`)."""
    with replacing(path) as tmp:
        spreadsheet_safe(table).to_csv(tmp, **CSV_OPTIONS)


CSV_OPTIONS: dict[str, Any] = {"index": False, "lineterminator": "\r\n"}
"""How results are written as CSV: RFC 4180's CRLF line ends, so that a cell holding a bare
carriage return is quoted (Python's writer quotes only line-terminator characters) and cannot
split its row."""


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_CHARS = frozenset(_FORMULA_START)
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run: one starting with ``= + - @``, a tab or a carriage
    return (OWASP's CSV injection list) gets a leading ``'``, unless it is a plain number
    (``-0.5``). Other values are returned as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as CSV should hold it: list and dict cells as JSON text, text cells (and column
    names) through :func:`spreadsheet_cell`; numeric columns untouched. Parquet and JSON Lines
    keep the raw values."""
    table = table.rename(columns=lambda name: spreadsheet_cell(name) if isinstance(name, str) else name)
    text = [pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype) for dtype in table.dtypes]
    for col in table.columns[text]:
        values = table[col].tolist()
        # Most cells need nothing: find the few that do (a list, a formula-like start) in one pass.
        touched = [i for i, v in enumerate(values) if (type(v) is str and v[:1] in _FORMULA_CHARS) or type(v) in (list, dict)]
        if touched:
            for i in touched:
                v = values[i]
                values[i] = spreadsheet_cell(dumps(v) if isinstance(v, (list, dict)) else v)
            table[col] = pd.Series(values, index=table.index, dtype=object)
    return table


def write_summary(path: Path, summary: Mapping[str, Any]) -> Path:
    """``summary.json``: a result's summary as JSON (NaN as null)."""
    return write_text(path, json.dumps(to_jsonable(dict(summary)), indent=2, ensure_ascii=False) + "\n")


def parquet_available() -> bool:
    """Whether pyarrow is installed (``save`` then writes the tables as Parquet too)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def table_to_parquet(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a results table as Parquet (needs pyarrow), list and dict cells as JSON text.

    JSON text rather than Arrow structs: Arrow would give every row of a column one struct
    type, the union of all rows' keys (with nulls for the missing ones), and refuse a key whose
    value is a number in one row and text in another; JSON keeps each cell as it was.
    """
    arrow = _arrow_table(table)
    import pyarrow.parquet as pq

    path = Path(path)
    with replacing(path) as tmp:
        pq.write_table(arrow, tmp)
    return path


def _arrow_table(table: pd.DataFrame) -> Any:
    """A results table as an Arrow table, list and dict cells as JSON text (see :func:`table_to_parquet`)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingExtraError("parquet", "pyarrow", "writing Parquet") from None
    arrays = [_arrow_column(pa, table[name].tolist()) for name in table.columns]
    return pa.Table.from_arrays(arrays, names=[str(name) for name in table.columns])


def _arrow_column(pa: Any, values: list[Any]) -> Any:
    if all(_missing(v) for v in values):
        # Empty (``error`` when no run failed): text, not Arrow's null type, so the column has the same
        # type in every table (and in every page of one: see write_tables_in_pages).
        return pa.array([None] * len(values), pa.string())
    if any(isinstance(v, (list, dict, tuple)) for v in values):
        values = [dumps(v) if isinstance(v, (list, dict, tuple)) else v for v in values]
    try:
        return pa.array(values, from_pandas=True)  # NaN -> null, as pandas writes object columns
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Mixed kinds in one column (a metadata field that is a number in one row and text in
        # the next) are kept as text rather than refused.
        return pa.array([None if _missing(v) else v if isinstance(v, str) else dumps(v) for v in values], pa.string())


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def results_from_record(record: Record) -> dict[str, EvalResult]:
    """One EvalResult per agent of a record, runs in dataset order then trial order; the metrics
    rebuilt from their specs (``requires`` kept), the scores as stored."""
    dataset = EvalDataset(record.cases, source=(record.header.get("dataset") or {}).get("source", str(record.path)))
    metrics = metrics_from_specs(record.header.get("metrics") or [])
    options = dict(record.header.get("options") or {})
    if options.get("executor") not in (None, "local", "ray"):
        del options["executor"]  # an executor object, recorded as its repr: the header keeps what it was
    config = RunConfig(**{k: v for k, v in options.items() if k in RunConfig.__dataclass_fields__ and k not in ("resume", "overwrite")})
    saved = bool((record.header.get("settings") or {}).get("scored_saved_predictions"))
    order = {c.case_id: i for i, c in enumerate(record.cases)}
    results: dict[str, EvalResult] = {}
    for agent in record.agents:
        entries = sorted(
            ((run, scores) for (a, _, _), (run, scores) in record.runs.items() if a == agent),
            key=lambda e: (order.get(e[0].case_id, len(order)), e[0].trial),
        )
        rows = [scores if scores is not None else {m.name: Score(math.nan) for m in metrics} for _, scores in entries]
        results[agent] = EvalResult(
            dataset, [run for run, _ in entries], rows, metrics,
            agent_name=None if saved else agent, scored_saved_predictions=saved, config=config,
        )
        if record.header.get("status") == BUDGET_EXHAUSTED:
            results[agent].not_started = [key for key in record.missing() if key[0] == agent]
        budget = (record.header.get("settings") or {}).get("budget")
        if budget:
            results[agent].budget = BudgetReport.from_dict(budget)
        tools = record.header.get("tools")
        if isinstance(tools, dict):
            from .tool_counts import tool_counts

            results[agent].tools_header = tools
            note = dict((tools.get("agents") or {}).get(agent) or {"levelled": False, "why": "not recorded"})
            note["counts"] = tool_counts(results[agent].runs)
            results[agent].tool_levelling = note
        preflight = (record.header.get("a2a_preflight") or {}).get(agent)
        if isinstance(preflight, dict):
            results[agent].a2a_preflight = {agent: preflight}
        results[agent]._evaluators = evaluators_from_header(record.header) or {}
    return results


BUDGET_EXHAUSTED = "budget_exhausted"
"""A record's status when a spending limit kept some planned runs from starting (they are absent)."""


def record_status(not_started: Sequence[Any]) -> str:
    """A saved record's status: ``complete``, or ``budget_exhausted`` when planned runs never started."""
    return BUDGET_EXHAUSTED if not_started else "complete"


def read_table(path: Path) -> Any:
    """A metrics table written by a table writer, by its suffix."""
    import pandas as pd

    name = path.name.lower()
    if name.endswith(".parquet"):
        return pd.read_parquet(path)
    if name.endswith(".jsonl"):
        return pd.read_json(path, lines=True, dtype={"case_id": str})
    return pd.read_csv(path, dtype={"case_id": str})
