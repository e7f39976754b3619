"""Trajectory metrics: how the tool calls an agent made compare with the reference calls."""

from __future__ import annotations

from ..matching import DEFAULT_MATCHER, ToolCallMatcher
from .base import Metric, Score, ScoringContext

__all__ = [
    "TrajectoryExactMatch",
    "TrajectoryInOrderMatch",
    "TrajectoryAnyOrderMatch",
    "TrajectoryPrecision",
    "TrajectoryRecall",
    "TrajectorySingleToolUse",
    "ToolTrajectoryAvgScore",
]


class _TrajectoryMetric(Metric):
    requires = ("reference_trajectory",)
    default_name: str = ""

    def __init__(self, *, matcher: ToolCallMatcher | None = None, name: str | None = None) -> None:
        self.matcher = matcher or DEFAULT_MATCHER
        self.name = name or self.default_name


class TrajectoryExactMatch(_TrajectoryMetric):
    """1 if the prediction has the reference's calls, in its order, and nothing else."""

    default_name = "trajectory_exact_match"

    def score(self, ctx: ScoringContext) -> float:
        return float(ctx.alignment(self.matcher).exact)


class TrajectoryInOrderMatch(_TrajectoryMetric):
    """1 if the reference calls appear in the prediction in order; extra calls allowed."""

    default_name = "trajectory_in_order_match"

    def score(self, ctx: ScoringContext) -> float:
        return float(ctx.alignment(self.matcher).in_order)


class TrajectoryAnyOrderMatch(_TrajectoryMetric):
    """1 if every reference call is matched by a distinct predicted call, in any order."""

    default_name = "trajectory_any_order_match"

    def score(self, ctx: ScoringContext) -> float:
        return float(ctx.alignment(self.matcher).any_order)


class TrajectoryPrecision(_TrajectoryMetric):
    """Share of predicted calls that match a reference call (1.0 when both are empty)."""

    default_name = "trajectory_precision"

    def score(self, ctx: ScoringContext) -> float:
        a = ctx.alignment(self.matcher)
        if a.n_predicted == 0:
            return 1.0 if a.n_reference == 0 else 0.0
        return a.matched / a.n_predicted


class TrajectoryRecall(_TrajectoryMetric):
    """Share of reference calls matched by a predicted call (1.0 when the reference is empty)."""

    default_name = "trajectory_recall"

    def score(self, ctx: ScoringContext) -> float:
        a = ctx.alignment(self.matcher)
        return 1.0 if a.n_reference == 0 else a.matched / a.n_reference


class TrajectorySingleToolUse(Metric):
    """1 if the agent called ``tool_name`` at least once; needs no reference."""

    def __init__(self, tool_name: str, *, name: str | None = None) -> None:
        self.tool_name = tool_name
        self.name = name or "trajectory_single_tool_use"

    def score(self, ctx: ScoringContext) -> float:
        return float(any(c.tool_name == self.tool_name for c in ctx.predicted_trajectory))


class ToolTrajectoryAvgScore(Metric):
    """ADK's ``tool_trajectory_avg_score``: per turn 1/0 by ``match_type``, averaged over turns.

    ``match_type`` is ``"EXACT"`` (ADK's default), ``"IN_ORDER"`` or ``"ANY_ORDER"``;
    ``ignore_args=True`` compares tool names only.
    """

    requires = ("reference_trajectory",)
    _match_types = ("EXACT", "IN_ORDER", "ANY_ORDER")

    def __init__(
        self,
        match_type: str = "EXACT",
        *,
        ignore_args: bool = False,
        matcher: ToolCallMatcher | None = None,
        name: str = "tool_trajectory_avg_score",
    ) -> None:
        match_type = match_type.upper()
        if match_type not in self._match_types:
            from ..errors import MetricError

            raise MetricError(
                f"tool_trajectory_avg_score match_type={match_type!r} is not one of {', '.join(self._match_types)}"
            )
        self.match_type = match_type
        self.matcher = matcher or (ToolCallMatcher(args="ignore") if ignore_args else DEFAULT_MATCHER)
        self.name = name

    def _turn_score(self, alignment) -> float:
        if self.match_type == "EXACT":
            return float(alignment.exact)
        if self.match_type == "IN_ORDER":
            return float(alignment.in_order)
        return float(alignment.any_order)

    def computable(self, ctx: ScoringContext) -> bool:
        # A multi-turn case is scorable when any turn has a reference, even if the last one has none.
        if ctx.failure:
            return False
        if ctx.turns:
            return any(t.get("reference_trajectory") is not None for t in ctx.turns)
        return ctx.reference_trajectory is not None

    def score(self, ctx: ScoringContext) -> float | Score:
        if not ctx.turns:
            return self._turn_score(ctx.alignment(self.matcher))
        from ..matching import align

        scores = [
            self._turn_score(align(t["predicted_trajectory"] or [], t["reference_trajectory"], self.matcher))
            for t in ctx.turns
            if t.get("reference_trajectory") is not None
        ]
        if not scores:
            return float("nan")
        # Per-turn scores let criteria pool turns over trials, as ADK does.
        return Score(sum(scores) / len(scores), extra={"per_turn": scores})
