"""Runs held in memory as a result's rows (:class:`HeldRuns`): runs scored as they finish, a record
read back, journaled runs read back. :class:`RunsInMemory` is what every source holding its runs
shares (saved predictions too, once their rows are read)."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.config import prices_of
from ..data.dataset import EvalCase, EvalDataset
from ..data.types import AgentRun
from ..score.metrics.base import FAILED_AS_ZERO, Metric, Score, score_columns
from ..score.scoring import RunExplainer, explain_run
from .columns import CostColumns
from .columns import mean as _mean
from .fingerprints import fingerprints_of
from .record import RUNS_FILE, finish_journal, write_record
from .source import Owner, RowSource, describe_runs
from .summary import floats, number, run_costs, summarize, summary_columns
from .table_ahead import TableAhead, explained_again_of
from .table_row import table_row
from .table_writer import Encoded, Lines, write_rows
from .tables import parquet_available, trimmed, write_summary, write_table_files

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunsInMemory", "HeldRuns", "explained_again"]


def explained_again(owner: Owner) -> list[Metric]:
    """The metrics whose explanations a table scores again: of an agent's runs, only those the engine
    scores for a whole batch at once (``scored_by_kernel``: every other metric's recorded Score is
    its own ``score``'s, so one that said no explanation says none again); of saved predictions, all."""
    return explained_again_of(owner.metrics, saved=owner.scored_saved_predictions)

class RunsInMemory:
    """What a source whose runs are in memory computes of them: per-run numbers, costs, the tables
    of runs scored as they finish, and the saved record. Subclasses say where the runs come from
    (:meth:`runs`, :meth:`dataset`) and what the engine gave (:meth:`engine_rows`)."""

    journal: Path | None = None
    streamed = False

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        self._row_scores: list[dict[str, Score]] | None = None
        self._table: pd.DataFrame | None = None
        self._summary: dict[str, Any] | None = None
        self._by_id: tuple[EvalDataset, dict[str, EvalCase]] | None = None

    def read_back(self) -> RowSource:
        return self  # type: ignore[return-value]  # made as a HeldRuns, which adds metrics_table

    def dataset(self) -> EvalDataset:
        raise NotImplementedError

    def runs(self) -> list[AgentRun]:
        raise NotImplementedError

    def engine_rows(self) -> list[dict[str, Score]]:
        raise NotImplementedError

    def row_scores(self) -> list[dict[str, Score]]:
        raise NotImplementedError

    def _explained(self, i: int, again: Sequence[Metric] | None = None) -> dict[str, Score]:
        """Run ``i``'s Scores with their explanations (``again``: the metrics that may lack one)."""
        raise NotImplementedError

    def cases_by_id(self) -> dict[str, EvalCase]:
        # Made once: explaining every run asks it once a run.
        dataset = self.dataset()
        if self._by_id is None or self._by_id[0] is not dataset:
            self._by_id = (dataset, {c.case_id: c for c in dataset})
        return self._by_id[1]

    def table_of(self, row_scores: Sequence[Mapping[str, Score]],
                 made: Sequence[dict[str, Any] | None] | None = None) -> pd.DataFrame:
        """The metrics table of runs scored as they finish, with ``row_scores`` as their scores
        (``made``: rows already made of them, None where a row is still to make)."""
        import pandas as pd  # loaded when a table is asked for, not with every result

        return trimmed(pd.DataFrame(self.table_rows(row_scores, made)))

    def table_rows(self, row_scores: Sequence[Mapping[str, Score]],
                   made: Sequence[dict[str, Any] | None] | None = None) -> list[dict[str, Any]]:
        """The rows of :meth:`table_of`'s table, before its empty columns are left out."""
        by_id = self.cases_by_id()
        prices, saved = prices_of(self.owner.config), self.owner.scored_saved_predictions
        if made is None:
            return [table_row(by_id[r.case_id], r, score_columns(rs), rs, prices=prices, saved=saved)
                    for r, rs in zip(self.runs(), row_scores)]
        return [row if row is not None else table_row(by_id[r.case_id], r, score_columns(rs), rs, prices=prices, saved=saved)
                for r, rs, row in zip(self.runs(), row_scores, made)]

    def summary(self) -> dict[str, Any]:
        if self._summary is None:
            names = [m.name for m in self.owner.metrics]
            columns = summary_columns(self.engine_rows(), names, prices_of(self.owner.config))
            columns["failure"] = [int(r.failure) for r in self.runs()]  # row_count when there are no metrics
            summary = summarize(columns, names)
            for metric in self.owner.metrics:
                if f"{metric.name}/score" in columns:
                    summary[f"{metric.name}/{FAILED_AS_ZERO}"] = _mean(
                        self.failed_as_zero(metric, floats(columns[f"{metric.name}/score"])))
            summary.update(run_costs(self.runs(), prices_of(self.owner.config)))
            self._summary = summary
        return self._summary

    def explain(self, case_id: str) -> dict[str, Score]:
        for i, run in enumerate(self.runs()):
            if run.case_id == case_id:
                return dict(self._row_scores[i] if self._row_scores is not None else self._explained(i))
        raise KeyError(f"{self.owner.source}: no case {case_id!r} in this result")

    def case_runs(self, case_id: str) -> list[AgentRun]:
        return [run for run in self.runs() if run.case_id == case_id]

    def run_failures(self) -> np.ndarray:
        return np.array([r.failure for r in self.runs()], dtype=bool)

    def run_cases(self) -> tuple[list[str], np.ndarray]:
        runs = self.runs()
        return [r.case_id for r in runs], np.array([r.trial for r in runs], dtype=int)

    def score_values(self, metric: str) -> np.ndarray:
        return np.array([number(row[metric].value) if metric in row else math.nan for row in self.engine_rows()], dtype=float)

    def cost_columns(self) -> CostColumns:
        return CostColumns.of(self.runs(), prices_of(self.owner.config))

    def run_costs(self) -> dict[str, Any]:
        return run_costs(self.runs(), prices_of(self.owner.config))

    def limit_totals(self) -> tuple[int, float]:
        runs = self.runs()
        return sum(r.rate_limited for r in runs), sum(r.waited_seconds for r in runs)

    def run_order(self) -> np.ndarray | None:
        return None

    def failures(self) -> list[AgentRun]:
        return [r for r in self.runs() if r.failure]

    def failed_as_zero(self, metric: Metric, values: np.ndarray) -> np.ndarray:
        out = np.array(values, dtype=float)
        failed = [(i, run) for i, run in enumerate(self.runs()) if run.failure]
        if not failed:
            return out  # nothing to zero: the cases need not be looked up
        by_id = self.cases_by_id()
        for i, run in failed:
            if run.case_id in by_id and metric.applies_to(by_id[run.case_id]):
                out[i] = 0.0
        return out

    def journal_moved(self, by: int) -> None:
        pass  # nothing here points into the journal

    def save(self, out: Path, header: Callable[[], dict[str, Any]], summary: Callable[[], Mapping[str, Any]]) -> dict[str, Path]:
        # The explanations and the table's rows live until the files are written, so the cyclic
        # collector would walk them again and again as they are made (a fifth of the save); they
        # hold no cycles and are freed by refcount.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._save(out, header, summary)
        finally:
            if collecting:
                gc.enable()

    def _save(self, out: Path, header: Callable[[], dict[str, Any]], summary: Callable[[], Mapping[str, Any]]) -> dict[str, Path]:
        paths = {"runs": out / RUNS_FILE, "metrics_table": out / "metrics_table.csv", "summary": out / "summary.json"}
        if self.journal is not None and paths["runs"].resolve() == self.journal.resolve():
            finish_journal(self.journal, header())  # the runs are there already
        else:
            dataset = self.dataset()
            write_record(paths["runs"], header(), list(dataset), fingerprints_of(dataset), zip(self.runs(), self.engine_rows()))
        # The tables a person reads say why; the record keeps what the engine gave.
        paths.update(self._write_tables(paths["metrics_table"], out / "metrics_table.parquet" if parquet_available() else None))
        write_summary(paths["summary"], summary())
        return paths

    def _write_tables(self, csv: Path, parquet: Path | None) -> dict[str, Path]:
        """The metrics table with explanations as ``csv`` and, when given, ``parquet``."""
        return write_table_files(self.with_explanations(None), csv, parquet)

    def with_explanations(self, case_ids: Iterable[str] | None) -> pd.DataFrame:
        raise NotImplementedError

    def describe(self, agent_name: str | None) -> str:
        return describe_runs(agent_name, self.run_failures())


class HeldRuns(RunsInMemory):
    """Runs held in memory with the scores the engine gave them; the explanations the engine left
    out are made when asked. ``summary``: one already computed of these runs (journaled runs read back)."""

    def __init__(self, owner: Owner, dataset: EvalDataset, runs: Sequence[AgentRun], scores: Sequence[Mapping[str, Score]],
                 *, journal: Path | None = None, summary: dict[str, Any] | None = None) -> None:
        super().__init__(owner)
        self._dataset = dataset
        self._runs = list(runs)
        self._engine_scores = [dict(row) for row in scores]
        self.journal = journal
        self._summary = summary
        self._ahead: TableAhead | None = None
        self._rows_ahead: list[dict[str, Any] | None] | None = None
        self._encoded: Encoded | None = None
        self._lines: Lines | None = None

    def made_ahead(self, ahead: TableAhead) -> None:
        """The table rows of these runs are being made as they finish (by ``ahead``): a table takes them."""
        self._ahead = ahead

    def _take_ahead(self) -> None:
        """The rows made while the runs ran, once: each run's explained scores and table row, where
        made of this very run and these scores (the rest are made here, as without them)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        made = ahead.made()
        if not made or self.owner.scored_saved_predictions:
            return
        self._encoded, self._lines = ahead.encoded, ahead.lines
        rows: list[dict[str, Any] | None] = []
        explained: list[dict[str, Score]] = []
        explainer = None
        for i, (run, scores) in enumerate(zip(self._runs, self._engine_scores)):
            found = made.get((run.agent_name, run.case_id, run.trial))
            if found is not None and found[0] is run and found[1] == scores:
                rows.append(found[3])
                explained.append(found[2])
                continue
            if explainer is None:
                explainer = RunExplainer(explained_again(self.owner))
            rows.append(None)
            explained.append(self._explained(i, explainer.metrics, explainer))
        self._rows_ahead = rows
        if self._row_scores is None:
            self._row_scores = explained

    def dataset(self) -> EvalDataset:
        return self._dataset

    def runs(self) -> list[AgentRun]:
        return self._runs

    def engine_rows(self) -> list[dict[str, Score]]:
        return self._engine_scores

    def row_scores(self) -> list[dict[str, Score]]:
        if self._row_scores is None and self._ahead is not None:
            self._take_ahead()
        if self._row_scores is None:
            explainer = RunExplainer(explained_again(self.owner))  # one for the table: a call's key made once
            by_id = self.cases_by_id()
            if all(run.case_id in by_id for run in self._runs):  # as always but for a dataset changed since
                self._row_scores = explainer.many(
                    (by_id[run.case_id], run, scores) for run, scores in zip(self._runs, self._engine_scores))
            else:
                self._row_scores = [self._explained(i, explainer.metrics, explainer) for i in range(len(self._engine_scores))]
        return self._row_scores

    def _explained(self, i: int, again: Sequence[Metric] | None = None, explainer: RunExplainer | None = None
                   ) -> dict[str, Score]:
        """Run ``i``'s engine scores with the explanations the engine left out (``again``: the
        metrics that may lack one, :func:`explained_again`; ``explainer``: one of them, for many runs)."""
        run, scores = self._runs[i], self._engine_scores[i]
        case = self.cases_by_id().get(run.case_id)
        if case is None:
            return scores
        metrics = explained_again(self.owner) if again is None else again
        if not any(m.name in scores and scores[m.name].explanation is None for m in metrics):
            return dict(scores)  # nothing to explain: no scoring context made
        return explainer(case, run, scores) if explainer is not None else explain_run(case, run, metrics, scores)

    def metrics_table(self) -> pd.DataFrame:
        if self._table is None:
            self._table = self.table_of(self._engine_scores)
        return self._table

    def _explained_rows(self) -> list[dict[str, Any]]:
        """The rows of the metrics table with explanations, before its empty columns are left out."""
        if self._ahead is not None:
            self._take_ahead()
        made, self._rows_ahead = self._rows_ahead, None  # the rows made ahead serve one table, then go
        return self.table_rows(self.row_scores(), made)

    def _write_tables(self, csv: Path, parquet: Path | None) -> dict[str, Path]:
        # Straight from the rows: no DataFrame made only to be written (see table_writer); the JSON
        # of the trajectories as made with the rows ahead, if they were.
        rows = self._explained_rows()
        encoded, self._encoded, lines, self._lines = self._encoded, None, self._lines, None
        return write_rows(rows, csv, parquet, encoded=encoded, lines=lines)

    def with_explanations(self, case_ids: Iterable[str] | None) -> pd.DataFrame:
        if case_ids is None:
            import pandas as pd

            table = trimmed(pd.DataFrame(self._explained_rows()))
            self._encoded = self._lines = None  # made for the files: gone with the rows made ahead
            return table
        wanted = {str(c) for c in case_ids}
        return self.table_of([self._explained(i) if run.case_id in wanted else raw
                              for i, (run, raw) in enumerate(zip(self._runs, self._engine_scores))])
