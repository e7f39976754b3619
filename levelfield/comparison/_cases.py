"""One case across agents: every agent's runs of a case side by side, marked and scored (``Comparison.case_view``).

The report's case pages read these views; :class:`CaseViews` is a base class of
:class:`~levelfield.Comparison`, which holds the scores they show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._core.data.dataset import EvalCase
from .._core.score.diff import MarkedCall, mark_trajectory

__all__ = ["AgentCase", "JudgedView", "CaseView", "CaseViews"]


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


class CaseViews:
    """``case_view``: the part of a :class:`~levelfield.Comparison` that shows one case."""

    # -- one case --------------------------------------------------------------------------

    def case_view(self, case_id: str) -> CaseView:
        """Every agent's runs of one case: response, calls marked against the reference, scores, error."""
        if self._case_index is None:
            self._case_index = {cid: i for i, cid in enumerate(self.case_ids)}
        if case_id not in self._case_index:
            raise KeyError(f"no case {case_id!r} in this comparison")
        i = self._case_index[case_id]
        case = self.dataset[i]
        view = CaseView(case)
        matcher = self.matcher
        if self._runs_by_case is None:
            held = {agent: result for agent, result in self.results.items() if not result.streamed}
            self._held = set(held)
            # Built once: the report asks for every case, and scanning all runs each time is quadratic.
            # (Runs that live in the journal are read back case by case, a page at a time: see case_runs.)
            self._runs_by_case = {(agent, run.case_id): [] for agent, result in held.items() for run in result.runs}
            self._row_of = {agent: {id(r): i for i, r in enumerate(result.runs)} for agent, result in held.items()}
            for agent, result in held.items():
                for run in result.runs:
                    self._runs_by_case[(agent, run.case_id)].append(run)
        for agent in self.results:
            entries = []
            result = self.results[agent]
            row_of = self._row_of.get(agent, {})
            runs = self._runs_by_case.get((agent, case_id), []) if agent in self._held else result.case_runs(case_id)
            for run in runs:
                out = run.output or run.partial_output
                row = row_of.get(id(run))
                judged = _judged_views(result.row_scores[row]) if row is not None and row < len(result.row_scores) else {}
                scores = {
                    m: float(self.trial_scores(m, agent)[i, run.trial]) if run.trial < self.trials else math.nan
                    for m in self.metric_names
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
