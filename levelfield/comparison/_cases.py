"""One case across agents: every agent's runs of a case side by side, marked and scored (``Comparison.case_view``).

The report's case pages read these views. A :class:`~levelfield.Comparison` holds a :class:`CaseViewer`
over itself (it reads the comparison's scores through :class:`Viewed`, never importing it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._core.data.dataset import EvalCase
from .._core.score.diff import MarkedCall, mark_trajectory

if TYPE_CHECKING:
    import numpy as np

    from .._core.data.dataset import EvalDataset
    from .._core.data.types import AgentRun
    from .._core.results.result import EvalResult
    from .._core.score.matching import ToolCallMatcher

__all__ = ["AgentCase", "JudgedView", "CaseView", "CaseViewer", "Viewed"]


@dataclass
class AgentCase:
    """One agent's run of one case (one trial), ready to show next to the others."""

    agent: str
    trial: int
    response: str | None
    calls: list[MarkedCall]
    scores: dict[str, float]
    """Each metric's score for this run as used in the statistics (failures per the policy)."""
    failure: bool = False
    error: str | None = None
    error_type: str | None = None
    partial: bool = False
    """True when the response and calls are what a failed run produced before failing."""
    failure_class: str | None = None
    """Whose fault a failed run was (A2A agents): ``protocol``, ``transport`` or ``agent``."""
    failure_rule: str | None = None
    """The spec rule a ``protocol`` failure broke."""
    latency_in_seconds: float = math.nan
    judged: dict[str, JudgedView] = field(default_factory=dict)
    """Judged metrics' reasons for this run, by metric: the judge's explanation and every rubric verdict."""


@dataclass
class JudgedView:
    """Why a judge scored one run as it did: its explanation, and each rubric's verdict with its rationale."""

    explanation: str | None = None
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "property", "verdict", "rationale", "turn"?, "agreement"?}`` per rubric, as ``<metric>/rubrics`` holds them."""


def _judged_views(scores: Mapping[str, Any]) -> dict[str, JudgedView]:
    """The judged metrics' reasons in one run's scores (metrics whose Score carries rubric verdicts or a judge's cost)."""
    out = {}
    for name, score in scores.items():
        extra = getattr(score, "extra", None) or {}
        verdicts = extra.get("rubrics")
        if isinstance(verdicts, list) or "judge_calls" in extra:
            out[name] = JudgedView(getattr(score, "explanation", None), list(verdicts) if isinstance(verdicts, list) else [])
    return out


@dataclass
class CaseView:
    """A case with every agent's runs side by side."""

    case: EvalCase
    runs: dict[str, list[AgentCase]] = field(default_factory=dict)
    """Agent name -> its runs of this case, one per trial."""


class Viewed(Protocol):
    """What a case view reads of a comparison (``levelfield.Comparison`` has all of it)."""

    dataset: EvalDataset
    results: dict[str, EvalResult]

    @property
    def case_ids(self) -> list[str]: ...
    @property
    def metric_names(self) -> list[str]: ...
    @property
    def trials(self) -> int: ...
    @property
    def matcher(self) -> ToolCallMatcher: ...
    def trial_scores(self, metric: str, agent: str) -> np.ndarray: ...


class CaseViewer:
    """``cmp.case_view(case_id)``: every agent's runs of one case, over one comparison; what it built
    to find runs by case is kept for the next case (the report asks for every one)."""

    def __init__(self, cmp: Viewed) -> None:
        self.cmp = cmp
        self._case_index: dict[str, int] | None = None
        self._runs_by_case: dict[tuple[str, str], list[AgentRun]] | None = None
        self._row_of: dict[str, dict[int, int]] = {}
        self._held: set[str] = set()  # agents whose runs were found in memory

    def view(self, case_id: str) -> CaseView:
        """Every agent's runs of one case: response, calls marked against the reference, scores, error."""
        cmp = self.cmp
        if self._case_index is None:
            self._case_index = {cid: i for i, cid in enumerate(cmp.case_ids)}
        if case_id not in self._case_index:
            raise KeyError(f"no case {case_id!r} in this comparison")
        i = self._case_index[case_id]
        case = cmp.dataset[i]
        view = CaseView(case)
        matcher = cmp.matcher
        if self._runs_by_case is None:
            held = {agent: result for agent, result in cmp.results.items() if not result.streamed}
            self._held = set(held)
            # Built once: the report asks for every case, and scanning all runs each time is quadratic.
            # (Runs that live in the journal are read back case by case, a page at a time: see case_runs.)
            self._runs_by_case = {(agent, run.case_id): [] for agent, result in held.items() for run in result.runs}
            self._row_of = {agent: {id(r): i for i, r in enumerate(result.runs)} for agent, result in held.items()}
            for agent, result in held.items():
                for run in result.runs:
                    self._runs_by_case[(agent, run.case_id)].append(run)
        for agent in cmp.results:
            entries = []
            result = cmp.results[agent]
            row_of = self._row_of.get(agent, {})
            runs = self._runs_by_case.get((agent, case_id), []) if agent in self._held else result.case_runs(case_id)
            for run in runs:
                out = run.output or run.partial_output
                row = row_of.get(id(run))
                judged = _judged_views(result.row_scores[row]) if row is not None and row < len(result.row_scores) else {}
                scores = {
                    m: float(cmp.trial_scores(m, agent)[i, run.trial]) if run.trial < cmp.trials else math.nan
                    for m in cmp.metric_names
                }
                entries.append(
                    AgentCase(
                        agent=agent,
                        trial=run.trial,
                        response=out.response if out is not None else None,
                        calls=mark_trajectory(out.trajectory if out else [], case.reference_trajectory, matcher),
                        scores=scores,
                        failure=run.failure,
                        error=run.error,
                        error_type=run.error_type,
                        failure_class=run.failure_class,
                        failure_rule=run.failure_rule,
                        partial=run.output is None and run.partial_output is not None,
                        latency_in_seconds=run.latency_in_seconds,
                        judged=judged,
                    )
                )
            view.runs[agent] = sorted(entries, key=lambda e: e.trial)
        return view
