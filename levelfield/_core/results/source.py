"""Where an :class:`~levelfield._core.results.result.EvalResult`'s rows live: the one protocol the
result asks (:class:`RowSource`) and what a source reads of the result that owns it (:class:`Owner`).

Three sources implement it: runs held in memory (:class:`~.held.HeldRuns`), saved predictions
scored batch by batch (:class:`~.saved_batches.SavedBatches`), and runs kept in the journal only
(:class:`~.journaled.JournaledRuns`), which a result replaces by the runs it reads back the first
time it needs them all (:meth:`RowSource.read_back`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ..data.config import RunConfig
    from ..data.dataset import EvalDataset
    from ..data.types import AgentRun
    from ..score.metrics.base import Metric, Score
    from .columns import CostColumns

__all__ = ["Owner", "RowSource", "describe_runs"]


class Owner(Protocol):
    """What a source reads of its result, when it needs it (the result's fields may be set after the source is made)."""

    metrics: list[Metric]
    config: RunConfig
    scored_saved_predictions: bool
    source: str
    """Where the cases came from (a file, ``"dataset"``, ``"DataFrame"``): errors name it."""


class RowSource(Protocol):
    """The rows of a result, wherever they are kept: the runs and their scores, the tables and the
    summary made of them, and what is computed of them when asked (explanations, costs)."""

    journal: Path | None
    """The journal that holds every run with its recorded scores, when one does."""

    @property
    def streamed(self) -> bool:
        """Whether the runs live in the journal only and are not read back yet."""
        ...

    def read_back(self) -> RowSource:
        """This source with every run in memory (itself, unless its runs are in the journal only)."""
        ...

    def dataset(self) -> EvalDataset: ...
    def runs(self) -> list[AgentRun]: ...
    def engine_rows(self) -> list[dict[str, Score]]:
        """Each run's Scores as the engine gave them (the explanations it leaves out not made)."""
        ...

    def row_scores(self) -> list[dict[str, Score]]:
        """Each run's Scores with explanations."""
        ...

    def metrics_table(self) -> pd.DataFrame: ...
    def with_explanations(self, case_ids: Iterable[str] | None) -> pd.DataFrame: ...
    def summary(self) -> dict[str, Any]:
        """The summary of the scores and the runs (without judge corrections, which the result adds)."""
        ...

    def explain(self, case_id: str) -> dict[str, Score]: ...
    def case_runs(self, case_id: str) -> list[AgentRun]: ...
    def run_failures(self) -> np.ndarray: ...
    def run_cases(self) -> tuple[list[str], np.ndarray]: ...
    def score_values(self, metric: str) -> np.ndarray: ...
    def cost_columns(self) -> CostColumns: ...
    def run_costs(self) -> dict[str, Any]: ...
    def limit_totals(self) -> tuple[int, float]: ...
    def run_order(self) -> np.ndarray | None: ...
    def failures(self) -> list[AgentRun]: ...
    def failed_as_zero(self, metric: Metric, values: np.ndarray) -> np.ndarray: ...
    def journal_moved(self, by: int) -> None: ...
    def save(self, out: Path, header: Callable[[], dict[str, Any]], summary: Callable[[], Mapping[str, Any]]) -> dict[str, Path]:
        """Write the record and the tables into ``out``; ``header()`` and ``summary()`` are the result's."""
        ...

    def describe(self, agent_name: str | None) -> str:
        """The result's repr (cheap: never a whole summary)."""
        ...


def describe_runs(agent_name: str | None, failures: np.ndarray) -> str:
    """The repr of a result of runs, counted from the runs' failures."""
    return f"EvalResult(agent={agent_name!r}, rows={len(failures)}, failures={int(failures.sum())})"
