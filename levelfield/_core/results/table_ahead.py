"""A metrics table's rows made while the runs still run: each run the journal takes is explained and
made a table row, and that row's line of ``metrics_table.csv``, by the journal's own thread, once the
run's line is durable, so that ``out=`` has little left to do once the last run is in (the tables are
written at the end, as ever, from these rows and lines).

Nothing here is part of the record: the journal holds every run as it finishes, whatever is made
here, and a row is used only for the very run and scores it was made of (a run scored again at the
end, by a judge, gets its row made then)."""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.config import RunConfig, prices_of
from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps
from ..data.types import AgentRun
from ..score.metrics.base import Metric, Score, score_columns
from ..score.scoring import RunExplainer
from .table_row import table_row
from .table_writer import LineMaker

__all__ = ["TableAhead", "Made", "explained_again_of"]

Made = tuple[AgentRun, Mapping[str, Score], dict[str, Score], dict[str, Any]]
"""One run's row made ahead: the run and the scores it was made of, its explained scores, its table row."""


def explained_again_of(metrics: Sequence[Metric], *, saved: bool) -> list[Metric]:
    """The metrics whose explanations a table scores again (``saved``: they score saved predictions;
    see :func:`~.held.explained_again`)."""
    if saved:
        return list(metrics)
    from ..score.batch.scorer import scored_by_kernel

    return [m for m in metrics if scored_by_kernel(m)]


class TableAhead:
    """Explains each run it is given and makes its metrics-table row, on the journal's thread.

    :meth:`add` is called on the event loop for each journaled run (an append, nothing more);
    :meth:`make_waiting` by the journal's thread after each batch of lines it made durable (see
    :class:`~.journal.Journal`); :meth:`made`, once no run will come, makes what is left and gives the
    rows made.

    The journal's thread, not one of its own: that thread already takes the interpreter once a batch,
    and a third thread among it and the event loop made the loop wait for the interpreter more often
    than the rows it made saved at the end (``bench/bench_rows_ahead.py``, 2,000 async agents at 100
    in flight, out= as a whole: at 20 ms 1.15-1.21x the runs without out= on the journal's thread,
    1.23-1.31x on a thread of its own, 1.21-1.24x with every row made at the end; at 50 ms 1.054x,
    1.068x and 1.100x)."""

    def __init__(self, cases: Sequence[EvalCase], metrics: Sequence[Metric], config: RunConfig) -> None:
        self._cases = {c.case_id: c for c in cases}
        self._explainer = RunExplainer(explained_again_of(metrics, saved=False))
        self._prices = prices_of(config)
        self._waiting: collections.deque[tuple[AgentRun, Mapping[str, Score]]] = collections.deque()
        self._made: dict[tuple[str, str, int], Made] = {}
        self.encoded: dict[int, tuple[Any, str]] = {}
        """The JSON text of the rows' list and dict cells (trajectories), by ``id`` of the cell, with the
        cell (see :data:`~.table_writer.Encoded`): what the CSV and Parquet files hold of them."""
        self.lines: dict[int, tuple[dict[str, Any], tuple[str, ...], str]] = {}
        """Each row's line of ``metrics_table.csv``, by ``id`` of the row, with the row and the columns
        the line holds (see :data:`~.table_writer.Lines`)."""
        self._line = LineMaker(trials=config.trials)
        self._making = threading.Lock()  # one maker at a time: the journal's thread, or made()'s caller
        self._failed = False

    def add(self, run: AgentRun, scores: Mapping[str, Score] | None) -> None:
        """A run that finished, with the scores the journal records (not changed after)."""
        if scores is not None:
            self._waiting.append((run, scores))

    def make_waiting(self) -> None:
        """Make the rows of the runs added so far (the journal's thread, between two batches)."""
        with self._making:
            self._make()

    def made(self) -> dict[tuple[str, str, int], Made]:
        """Every row made, by (agent, case id, trial), those not made yet made now (empty if making one failed)."""
        with self._making:
            self._make()
            return {} if self._failed else self._made

    def _make(self) -> None:
        waiting, made, cases, encoded, lines = self._waiting, self._made, self._cases, self.encoded, self.lines
        explain, prices, line = self._explainer, self._prices, self._line
        try:
            while waiting and not self._failed:
                run, scores = waiting.popleft()
                case = cases.get(run.case_id)
                if case is None:
                    continue
                explained = explain(case, run, scores)
                row = table_row(case, run, score_columns(explained), explained, prices=prices, saved=False)
                made[(run.agent_name, run.case_id, run.trial)] = (run, scores, explained, row)
                for value in row.values():
                    if type(value) is list or type(value) is dict:
                        encoded[id(value)] = (value, dumps(value))
                names = line.names(row)
                lines[id(row)] = (row, names, line(row, names, encoded))
        except Exception:  # noqa: BLE001 - the rows are made again at the end, as without this
            self._failed = True
