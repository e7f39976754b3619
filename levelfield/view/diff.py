"""Two runs set side by side: the cases whose score changed, per metric, and whether the change is real.

Cases are paired by case id (the cases both runs hold); an agent of one run by an agent of the
other (the same name when both have it, else the first of each, or the ones asked for). Per-case
scores are the ones the report counts (:meth:`RunIndex.case_scores`), and the significance is the
regression gate's paired test, Holm-adjusted across the metrics (:func:`levelfield.gate.scores_changes`),
with run B's statistics settings: B is read as the new run, A as its baseline. Runs whose metrics
were scored by other evaluators (judge, prompt, rubrics, metric version) are not diffed unless
``allow_different_evaluators`` (:func:`levelfield.comparison._comparability.check_evaluators`); then the diff is
labelled (:attr:`RunDiff.evaluator_notes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._core.stats.change import Change
from ..comparison._comparability import check_evaluators
from ..gate import scores_changes
from .index import RunIndex

__all__ = ["Side", "ChangedCase", "RunDiff", "pair_agents", "diff_runs"]


@dataclass(frozen=True)
class Side:
    """One side of a diff: a run and the agent of it being compared."""

    run_id: str
    index: RunIndex
    agent: str

    @property
    def label(self) -> str:
        return self.run_id if len(self.index.agents) <= 1 else f"{self.run_id} · {self.agent}"


@dataclass(frozen=True)
class ChangedCase:
    """A case whose score on one metric differs between the two sides."""

    case_id: str
    a: float
    b: float
    crashed_a: bool = False
    """A's run of the case failed and left no score (``failed_runs="exclude"``)."""
    crashed_b: bool = False
    """B's run of the case failed and left no score."""

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def direction(self) -> int:
        """-1 worse, +1 better, 0 neither can be said (scored on one side only, no run failed).

        A crash after a score is worse, whatever the score was; a crash that now scores is better."""
        if not math.isnan(self.delta):
            return -1 if self.delta < 0 else 1 if self.delta > 0 else 0
        if self.crashed_b and not math.isnan(self.a):
            return -1
        if self.crashed_a and not math.isnan(self.b):
            return 1
        return 0


@dataclass
class RunDiff:
    """What changed from side ``a`` (the baseline) to side ``b`` (the new run)."""

    a: Side
    b: Side
    cases: list[str]
    """Case ids both runs hold, in B's order."""
    metrics: list[str]
    """Metrics both runs scored."""
    changes: list[Change] = field(default_factory=list)
    """Per metric: B against A with the gate's test."""
    changed: dict[str, list[ChangedCase]] = field(default_factory=dict)
    """Per metric: the cases whose score changed, largest drop first."""
    evaluator_notes: list[str] = field(default_factory=list)
    """What differs between the two runs' evaluators (a diff allowed anyway), and metrics not checked."""
    allowed_different_evaluators: bool = False
    """The diff was asked for with ``allow_different_evaluators``."""

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]


def pair_agents(a: RunIndex, b: RunIndex, agent_a: str = "", agent_b: str = "") -> tuple[str, str] | None:
    """The agents to compare, or None when a run has none. An agent asked for that a run lacks is not used."""
    if not a.agents or not b.agents:
        return None
    shared = [x for x in b.agents if x in a.agents]
    first_a = agent_a if agent_a in a.agents else (agent_b if agent_b in a.agents else (shared[0] if shared else a.agents[0]))
    first_b = agent_b if agent_b in b.agents else (first_a if first_a in b.agents else b.agents[0])
    return first_a, first_b


def diff_runs(a: Side, b: Side, *, allow_different_evaluators: bool = False, warn: bool = True) -> RunDiff:
    """The cases whose scores changed from ``a`` to ``b``, per metric, and each metric's change tested.

    Raises ``EvaluatorsDifferError`` naming what differs when a metric's evaluators differ between the
    runs, unless ``allow_different_evaluators`` (then an ``EvaluatorsDifferWarning`` when ``warn``)."""
    positions_a = {cid: i for i, cid in enumerate(a.index.case_ids)}
    shared = [(positions_a[cid], j, cid) for j, cid in enumerate(b.index.case_ids) if cid in positions_a]
    metrics = [m for m in b.index.metrics if m in a.index.metrics]
    notes = check_evaluators(getattr(a.index, "evaluators", None), getattr(b.index, "evaluators", None), metrics,
                             allow=allow_different_evaluators, what=f"run {a.label} (A) against run {b.label} (B)",
                             warn=warn)
    out = RunDiff(a, b, [cid for _, _, cid in shared], metrics, evaluator_notes=notes,
                  allowed_different_evaluators=allow_different_evaluators)
    if not shared:
        return out
    ia = np.array([i for i, _, _ in shared])
    ib = np.array([j for _, j, _ in shared])
    failed_a, failed_b = a.index.case_failed(a.agent)[ia], b.index.case_failed(b.agent)[ib]
    new: dict[str, np.ndarray] = {}
    base: dict[str, np.ndarray] = {}
    for metric in metrics:
        sa = a.index.case_scores(metric, a.agent)[ia]
        sb = b.index.case_scores(metric, b.agent)[ib]
        base[metric], new[metric] = sa, sb
        moved = [ChangedCase(cid, float(x), float(y), bool(math.isnan(x) and fa), bool(math.isnan(y) and fb))
                 for (_, _, cid), x, y, fa, fb in zip(shared, sa, sb, failed_a, failed_b) if _differs(x, y)]
        out.changed[metric] = sorted(moved, key=lambda c: (_order(c), c.case_id))
    out.changes = scores_changes(new, base, agent=b.label, baseline=a.label, stats=b.index.stats)
    return out


def _differs(x: float, y: float) -> bool:
    if math.isnan(x) and math.isnan(y):
        return False
    if math.isnan(x) or math.isnan(y):
        return True  # scored on one side only (a failed run left out, a reference added)
    return abs(x - y) > 1e-9


def _order(case: ChangedCase) -> tuple[int, float]:
    """Worse first (a crash after a score first of all, then the largest drop), then better, then the
    cases scored on one side only."""
    if not math.isnan(case.delta):
        return (0 if case.delta < 0 else 1, case.delta)
    return {-1: (0, -math.inf), 1: (1, case.b)}.get(case.direction, (2, 0.0))
