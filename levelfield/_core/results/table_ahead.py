"""A metrics table's rows made while the runs still run: each run the journal takes is explained and
made a table row on a thread of its own, so that ``out=`` has little left to do once the last run
is in (the tables are written at the end, as ever, from these rows).

Nothing here is part of the record: the journal holds every run as it finishes, whatever this
thread has done, and a row is used only for the very run and scores it was made of (a run scored
again at the end, by a judge, gets its row made then)."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..data.config import RunConfig, prices_of
from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps
from ..data.types import AgentRun
from ..score.metrics.base import Metric, Score, score_columns
from ..score.scoring import RunExplainer
from .table_row import table_row

__all__ = ["TableAhead", "Made", "explained_again_of"]

_IDLE = 0.004
"""Seconds the thread sleeps when no run waits (it is never woken: the event loop only appends)."""
_A_GO = 8
"""Runs made at a go (~0.1 ms), before the thread gives the interpreter up for :data:`_YIELD` seconds."""
_YIELD = 0.0002
"""A pause long enough that the event loop, if it waits for the interpreter, takes it (``sleep(0)`` may
give it back to this thread at once; the loop would then wait out the switch interval, 5 ms)."""

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
    """Explains each run it is given and makes its metrics-table row, on a thread of its own that
    takes the interpreter only while the event loop waits (a few runs at a go, then it yields).

    :meth:`add` is called on the event loop for each journaled run (an append, nothing more);
    :meth:`stop` once no run will come; :meth:`made` waits for the thread and gives the rows made."""

    def __init__(self, cases: Sequence[EvalCase], metrics: Sequence[Metric], config: RunConfig) -> None:
        self._cases = {c.case_id: c for c in cases}
        self._explainer = RunExplainer(explained_again_of(metrics, saved=False))
        self._prices = prices_of(config)
        self._waiting: collections.deque[tuple[AgentRun, Mapping[str, Score]]] = collections.deque()
        self._made: dict[tuple[str, str, int], Made] = {}
        self.encoded: dict[int, tuple[Any, str]] = {}
        """The JSON text of the rows' list and dict cells (trajectories), by ``id`` of the cell, with the
        cell (see :data:`~.table_writer.Encoded`): what the CSV and Parquet files hold of them."""
        self._stopping = False
        self._failed = False
        self._thread = threading.Thread(target=self._run, name="levelfield-table", daemon=True)
        self._thread.start()

    def add(self, run: AgentRun, scores: Mapping[str, Score] | None) -> None:
        """A run that finished, with the scores the journal records (not changed after)."""
        if scores is not None:
            self._waiting.append((run, scores))

    def stop(self) -> None:
        """No run will come: the thread makes the rows of those it holds, then ends."""
        self._stopping = True

    def made(self) -> dict[tuple[str, str, int], Made]:
        """Every row made, by (agent, case id, trial), once the thread has ended (empty if it failed)."""
        self._stopping = True
        self._thread.join()
        return {} if self._failed else self._made

    def _run(self) -> None:
        waiting, made, cases, encoded = self._waiting, self._made, self._cases, self.encoded
        explain, prices = self._explainer, self._prices
        done = 0
        try:
            while True:
                if not waiting:
                    if self._stopping and not waiting:
                        return
                    time.sleep(_IDLE)
                    continue
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
                done += 1
                if done % _A_GO == 0 and not self._stopping:
                    # The interpreter to the event loop, if it waits for it (once stopped, the loop
                    # waits for this thread: the rest are made at a go).
                    time.sleep(_YIELD)
        except Exception:  # noqa: BLE001 - the rows are made again at the end, as without this thread
            self._failed = True
