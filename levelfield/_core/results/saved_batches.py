"""Saved predictions scored batch by batch as a result's rows (:class:`SavedBatches`): a table of
scores (in memory or in a file) and the summary of running aggregates; what the batch scorer leaves
out (explanations, the cases and runs with the saved answers) is computed when first asked, from
the saved rows read again, or from the table when the rows cannot be read again."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.dataset import EvalCase, EvalDataset
from ..data.rows import case_from_row
from ..data.types import AgentRun
from ..score.batch.rows import scored_rows
from ..score.batch.scorer import explain_row
from ..score.metrics.base import Metric, Score, score_columns
from .held import RunsInMemory
from .saved_run import SAVED_AGENT, saved_run
from .source import Owner
from .tables import parquet_available, read_table, table_to_csv, table_to_parquet, write_summary

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SavedBatches"]


class SavedBatches(RunsInMemory):
    """Saved predictions scored batch by batch: their ``table`` (or ``make_table()`` making it when
    first asked, or where it was written, ``table_path``) and ``summary``; ``rows()`` gives the saved
    rows' batches again (``levelfield._core.score.batch.rows.RowBatch``), None when they cannot be
    read again."""

    def __init__(self, owner: Owner, summary: Mapping[str, Any], *, table: pd.DataFrame | None,
                 table_path: Path | None, rows: Callable[[], Iterable[Any]] | None,
                 make_table: Callable[[], pd.DataFrame] | None = None) -> None:
        super().__init__(owner)
        self._summary = dict(summary)
        self._table = table
        self._make_table = make_table
        self.table_path = table_path
        self._rows = rows
        self._dataset: EvalDataset | None = None
        self._runs: list[AgentRun] | None = None
        self._explained_cases: dict[str, dict[str, Score]] = {}

    def _saved_rows(self) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
        """The saved rows in table order (index, where, row)."""
        assert self._rows is not None
        return scored_rows(self._rows())

    def _read_rows(self) -> None:
        """The cases and runs: from the saved rows, else from the table."""
        if self._rows is not None:
            cases = [case_from_row(dict(row), index, where) for index, where, row in self._saved_rows()]
            self._dataset = EvalDataset(cases, source=self.owner.source)
            self._runs = [saved_run(case) for case in cases]
            return
        table = self.metrics_table()
        ids = table["case_id"].astype(str).tolist() if "case_id" in table else [str(i) for i in range(len(table))]
        failures = table["failure"].tolist() if "failure" in table else [0] * len(table)
        latency = table["latency_in_seconds"].tolist() if "latency_in_seconds" in table else [math.nan] * len(table)
        self._runs = [
            AgentRun(case_id=c, agent_name=SAVED_AGENT, output=None, latency_in_seconds=float(lat), failure=bool(f))
            for c, f, lat in zip(ids, failures, latency)
        ]
        self._dataset = EvalDataset([EvalCase(case_id=r.case_id, prompt=None) for r in self._runs], source=self.owner.source)

    def dataset(self) -> EvalDataset:
        if self._dataset is None:
            self._read_rows()
        assert self._dataset is not None
        return self._dataset

    def runs(self) -> list[AgentRun]:
        if self._runs is None:
            self._read_rows()
        assert self._runs is not None
        return self._runs

    def engine_rows(self) -> list[dict[str, Score]]:
        return self.row_scores()

    def row_scores(self) -> list[dict[str, Score]]:
        if self._row_scores is None:
            if self._rows is None:
                table = self.metrics_table()
                columns = [(m.name, table[f"{m.name}/score"].to_numpy(dtype=float)) for m in self.owner.metrics]
                self._row_scores = [{name: Score(float(col[i])) for name, col in columns} for i in range(len(table))]
            else:
                self._row_scores = [self._with_values(i, explain_row(row, index, where, self.owner.metrics))
                                    for i, (index, where, row) in enumerate(self._saved_rows())]
        return self._row_scores

    def _explained(self, i: int, again: Sequence[Metric] | None = None) -> dict[str, Score]:
        return self.row_scores()[i]

    def _table_scores(self, position: int) -> dict[str, Score]:
        table = self.metrics_table()
        return {m.name: Score(float(table[f"{m.name}/score"].iloc[position])) for m in self.owner.metrics}

    def _with_values(self, position: int, explained: Mapping[str, Score]) -> dict[str, Score]:
        """The Scores of ``explained`` holding the table's numbers: the batch scorer's values, the row's explanations."""
        out = self._table_scores(position)
        for name, score in explained.items():
            if name in out:
                out[name] = dataclasses.replace(score, value=out[name].value)
        return out

    def metrics_table(self) -> pd.DataFrame:
        if self._table is None and self._make_table is not None:
            # Made when first asked: a summary read alone never loads pandas (issue #46).
            self._table, self._make_table = self._make_table(), None
        if self._table is None and self.table_path is not None:
            self._table = read_table(self.table_path)
        assert self._table is not None
        return self._table

    def explain(self, case_id: str) -> dict[str, Score]:
        if self._row_scores is not None:
            return super().explain(case_id)
        found = self._explained_cases.get(case_id)
        if found is not None:
            return found
        ids = self.metrics_table()["case_id"].astype(str).tolist()
        try:
            position = ids.index(case_id)
        except ValueError:
            raise KeyError(f"{self.owner.source}: no case {case_id!r} in this result") from None
        if self._rows is None:
            return self._table_scores(position)  # no rows to read again: the numbers alone
        for i, (index, where, row) in enumerate(self._saved_rows()):
            if i == position:
                found = self._with_values(position, explain_row(row, index, where, self.owner.metrics))
                self._explained_cases[case_id] = found
                return found
        raise KeyError(f"{self.owner.source}: case {case_id!r} is no longer in the saved rows")  # the file changed

    def with_explanations(self, case_ids: Iterable[str] | None) -> pd.DataFrame:
        table = self.metrics_table().copy()
        ids = table["case_id"].astype(str).tolist()
        if case_ids is None:
            explained = [score_columns(row) for row in self.row_scores()]
        else:
            wanted = {str(c) for c in case_ids}
            explained = [score_columns(self.explain(c)) if c in wanted else {} for c in ids]
        for m in self.owner.metrics:
            column = [row.get(f"{m.name}/explanation") for row in explained]
            if any(v is not None for v in column):
                table.insert(table.columns.get_loc(f"{m.name}/score") + 1, f"{m.name}/explanation", column)
        return table

    def save(self, out: Path, header: Callable[[], dict[str, Any]], summary: Callable[[], Mapping[str, Any]]) -> dict[str, Path]:
        if self._rows is not None:
            return super().save(out, header, summary)
        # The rows cannot be read again (a table read back alone): no runs to record.
        if parquet_available():
            table = table_to_parquet(self.metrics_table(), out / "metrics_table.parquet")
        else:
            table = out / "metrics_table.csv"
            table_to_csv(self.metrics_table(), table)
        return {"metrics_table": table, "summary": write_summary(out / "summary.json", summary())}

    def describe(self, agent_name: str | None) -> str:
        s = self._summary or {}
        return f"EvalResult(saved predictions, rows={s.get('row_count')}, failures={s.get('failure/count', 0)})"
