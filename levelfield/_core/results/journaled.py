"""Runs kept in the journal only as a result's rows (:class:`JournaledRuns`): the runs went to the
journal as they finished and were not held. The summary and the statistics come from a few numbers
kept of each run (:class:`~.columns.RunColumns`); the runs, their scores and the tables are read
back from the journal when asked, a page at a time when saved; asked for every run, the source
reads them all back once (:meth:`JournaledRuns.read_back`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.config import prices_of
from ..data.dataset import EvalCase, EvalDataset
from ..data.types import AgentRun
from ..score.metrics.base import FAILED_AS_ZERO, Metric, Score, score_columns
from ..score.scoring import RunExplainer, context_for, explain_scores
from . import tables
from .columns import CostColumns, RunColumns, as_array, cost_items
from .columns import mean as _mean
from .fingerprints import fingerprints_of
from .held import HeldRuns, explained_again
from .record import RUNS_FILE, finish_journal, read_runs_at, write_record
from .source import Owner, describe_runs
from .summary import summarize
from .table_row import table_row

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["JournaledRuns"]


class JournaledRuns:
    """Runs that live in ``journal``, with ``columns`` (a few numbers a run) kept in memory."""

    def __init__(self, owner: Owner, dataset: EvalDataset, columns: RunColumns, journal: Path) -> None:
        self.owner = owner
        self.journal: Path | None = journal
        self._dataset = dataset
        self._columns = columns
        self._order = columns.order(len(dataset))
        self._summary: dict[str, Any] | None = None
        self._back: HeldRuns | None = None
        self._by_id: dict[str, EvalCase] | None = None
        self._by_case: np.ndarray | None = None  # the runs' dataset positions, in table order
        self._case_pos: dict[str, int] = {}
        self._page: tuple[int, list[AgentRun]] = (0, [])  # the page of runs read back last (case_runs)

    @property
    def streamed(self) -> bool:
        return self._back is None

    def read_back(self) -> HeldRuns:
        """Every run with its recorded scores, read back from the journal once and held from then on."""
        if self._back is None:
            entries = self._journaled(self._order)
            self._back = HeldRuns(self.owner, self._dataset, [run for run, _ in entries], [scores for _, scores in entries],
                                  journal=self.journal, summary=self._summary)
        return self._back

    def _journaled(self, positions: Iterable[int]) -> list[tuple[AgentRun, dict[str, Score]]]:
        """The runs at ``positions`` (in the columns) with their scores, read back from the journal."""
        assert self.journal is not None
        lines = self._columns.line
        entries = read_runs_at(self.journal, [lines[int(i)] for i in positions])
        nan = {m.name: Score(math.nan) for m in self.owner.metrics}
        return [(run, scores if scores is not None else dict(nan)) for run, scores in entries]

    def _cases_by_id(self) -> dict[str, EvalCase]:
        if self._by_id is None:
            self._by_id = {c.case_id: c for c in self._dataset}
        return self._by_id

    # -- what needs every run: read back --------------------------------------------------------

    def dataset(self) -> EvalDataset:
        return self._dataset

    def runs(self) -> list[AgentRun]:
        return self.read_back().runs()

    def engine_rows(self) -> list[dict[str, Score]]:
        return self.read_back().engine_rows()

    def row_scores(self) -> list[dict[str, Score]]:
        return self.read_back().row_scores()

    def metrics_table(self) -> pd.DataFrame:
        return self.read_back().metrics_table()

    def with_explanations(self, case_ids: Iterable[str] | None) -> pd.DataFrame:
        return self.read_back().with_explanations(case_ids)

    # -- what the columns give, no run read back ------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The summary from the numbers kept of each run (no run read back)."""
        if self._summary is None:
            names = [m.name for m in self.owner.metrics]
            columns = self._columns.summary_columns(self._order)
            columns["failure"] = self.run_failures()
            summary = summarize(columns, names)
            for metric in self.owner.metrics:
                summary[f"{metric.name}/{FAILED_AS_ZERO}"] = _mean(self.failed_as_zero(metric, columns[f"{metric.name}/score"]))
            summary.update(cost_items(self._columns))
            self._summary = summary
        return self._summary

    def run_failures(self) -> np.ndarray:
        return as_array(self._columns.failure, np.int8)[self._order].astype(bool)

    def _cases(self) -> np.ndarray:
        return as_array(self._columns.case, np.int32)[self._order]

    def run_cases(self) -> tuple[list[str], np.ndarray]:
        ids = [c.case_id for c in self._dataset]
        trials = as_array(self._columns.trial, np.int32)[self._order]
        return [ids[i] for i in self._cases()], np.asarray(trials, dtype=int)

    def score_values(self, metric: str) -> np.ndarray:
        return self._columns.value_array(metric)[self._order]

    def cost_columns(self) -> CostColumns:
        return self._columns

    def run_costs(self) -> dict[str, Any]:
        return cost_items(self._columns)

    def limit_totals(self) -> tuple[int, float]:
        return self._columns.rate_limited, self._columns.waited_seconds

    def run_order(self) -> np.ndarray | None:
        return self._order

    def failed_as_zero(self, metric: Metric, values: np.ndarray) -> np.ndarray:
        out = np.array(values, dtype=float)
        applies = np.array([metric.applies_to(c) for c in self._dataset], dtype=bool)
        out[self.run_failures() & applies[self._cases()]] = 0.0
        return out

    def describe(self, agent_name: str | None) -> str:
        return describe_runs(agent_name, self.run_failures())

    def journal_moved(self, by: int) -> None:
        self._columns.shift(by)

    # -- a few runs read back -------------------------------------------------------------------

    def failures(self) -> list[AgentRun]:
        return [run for run, _ in self._journaled(self._order[self.run_failures()])]

    def explain(self, case_id: str) -> dict[str, Score]:
        """One case's first trial, read back from the journal alone and explained."""
        ids, _ = self.run_cases()
        for k, cid in enumerate(ids):
            if cid == case_id:
                [(run, scores)] = self._journaled([self._order[k]])
                case = self._cases_by_id()[case_id]
                return explain_scores(context_for(case, run), self.owner.metrics, scores)
        raise KeyError(f"{self.owner.source}: no case {case_id!r} in this result")

    def case_runs(self, case_id: str) -> list[AgentRun]:
        """The runs of one case, in trial order, read back a page of cases at a time (the page around
        this case, kept until a case outside it is asked for): asking for every case in order reads
        the journal once and holds one page."""
        if self._by_case is None:
            self._case_pos = {c.case_id: i for i, c in enumerate(self._dataset)}
            self._by_case = self._cases()
        position = self._case_pos.get(case_id)
        if position is None:
            return []
        lo, hi = (int(x) for x in np.searchsorted(self._by_case, [position, position + 1]))
        start, page = self._page
        if not (start <= lo and hi <= start + len(page)):
            end = max(hi, min(lo + tables.TABLE_PAGE, len(self._order)))
            start, page = lo, [run for run, _ in self._journaled(self._order[lo:end])]
            self._page = (start, page)
        return page[lo - start : hi - start]

    def table_pages(self, size: int, *, explain: bool = True) -> Iterator[list[dict[str, Any]]]:
        """The rows of the metrics table (with explanations, or as the engine gave the scores), a
        page of runs read back at a time (see :func:`~.tables.write_tables_in_pages`)."""
        by_id = self._cases_by_id()
        prices, saved = prices_of(self.owner.config), self.owner.scored_saved_predictions
        again = explained_again(self.owner) if explain else []
        explainer = RunExplainer(again)
        for start in range(0, len(self._order), size):
            rows = []
            for run, scores in self._journaled(self._order[start : start + size]):
                case = by_id[run.case_id]
                if any(m.name in scores and scores[m.name].explanation is None for m in again):
                    scores = explainer(case, run, scores)
                rows.append(table_row(case, run, score_columns(scores), scores, prices=prices, saved=saved))
            yield rows

    def save(self, out: Path, header: Callable[[], dict[str, Any]], summary: Callable[[], Mapping[str, Any]]) -> dict[str, Path]:
        """In the journal's own folder the record is the journal with its final header; the tables
        are written a page of runs at a time."""
        assert self.journal is not None
        paths = {"runs": out / RUNS_FILE, "metrics_table": out / "metrics_table.csv", "summary": out / "summary.json"}
        if paths["runs"].resolve() == self.journal.resolve():
            self.journal_moved(finish_journal(self.journal, header()))
        else:
            write_record(paths["runs"], header(), list(self._dataset), fingerprints_of(self._dataset),
                         self._journaled(self._order))
        trials = len(np.unique(as_array(self._columns.trial, np.int32)))
        paths.update(tables.write_tables_in_pages(self.table_pages, out, trials=trials))
        tables.write_summary(paths["summary"], summary())
        return paths
