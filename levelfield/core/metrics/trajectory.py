"""Trajectory metrics: how the tool calls an agent made compare with the reference calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..matching import DEFAULT_MATCHER, ToolCallMatcher, align
from ..types import ToolCall
from .base import Metric, Score, ScoringContext

__all__ = [
    "TrajectoryExactMatch",
    "TrajectoryInOrderMatch",
    "TrajectoryAnyOrderMatch",
    "TrajectoryPrecision",
    "TrajectoryRecall",
    "TrajectorySingleToolUse",
    "ToolTrajectoryAvgScore",
    "adk_trajectory_match",
    "adk_args",
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


def adk_args(call: ToolCall) -> dict[str, Any] | None:
    """A call's arguments as ADK holds them: None when the call was given without any."""
    return call.tool_input if "tool_input" in call.model_fields_set else None


def _adk_same(predicted: ToolCall, reference: ToolCall, ignore_args: bool) -> bool:
    # ADK compares genai FunctionCalls with Python's ==: True == 1 == 1.0, and an expected call
    # written without args (None) differs from an agent's call, which always has them ({}).
    return predicted.tool_name == reference.tool_name and (
        ignore_args or predicted.tool_input == adk_args(reference)
    )


def adk_trajectory_match(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], match_type: str, *, ignore_args: bool = False
) -> bool:
    """Whether one turn's calls pass ADK's ``EXACT`` / ``IN_ORDER`` / ``ANY_ORDER`` test, by ADK's rules."""
    if match_type == "EXACT":
        return len(predicted) == len(reference) and all(
            _adk_same(p, r, ignore_args) for p, r in zip(predicted, reference)
        )
    if match_type == "IN_ORDER":
        remaining = iter(predicted)
        return all(any(_adk_same(p, r, ignore_args) for p in remaining) for r in reference)
    free = list(predicted)
    for r in reference:
        # Python == on arguments is an equivalence, so taking the first equal call is optimal.
        hit = next((i for i, p in enumerate(free) if _adk_same(p, r, ignore_args)), None)
        if hit is None:
            return False
        del free[hit]
    return True


class ToolTrajectoryAvgScore(Metric):
    """ADK's ``tool_trajectory_avg_score``: per turn 1/0 by ``match_type``, averaged over turns.

    ``match_type`` is ``"EXACT"`` (ADK's default), ``"IN_ORDER"`` or ``"ANY_ORDER"``;
    ``ignore_args=True`` compares tool names only. As ADK scores it: every turn counts, a turn
    without expected calls expects none, and arguments compare with Python's ``==`` (``True``
    equals ``1``; an expected call written without ``args`` matches no call, since an agent's
    call always carries its arguments, ``{}`` when there are none).
    A case is computable when at least one turn gives expected calls. With ``matcher=``, calls
    match by that :class:`ToolCallMatcher` instead (levelfield's stricter rules: ``True`` is not
    ``1``; missing args are ``{}``).
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
        self.ignore_args = ignore_args
        self.matcher = matcher
        self.name = name

    def _turn_score(self, predicted: list[ToolCall], reference: list[ToolCall]) -> float:
        if self.matcher is None:
            return float(adk_trajectory_match(predicted, reference, self.match_type, ignore_args=self.ignore_args))
        a = align(predicted, reference, self.matcher)
        return float(a.exact if self.match_type == "EXACT" else a.in_order if self.match_type == "IN_ORDER" else a.any_order)

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and any(t.reference_trajectory is not None for t in ctx.conversation())

    def score(self, ctx: ScoringContext) -> float | Score:
        scores = [self._turn_score(t.predicted_trajectory or [], t.reference_trajectory or []) for t in ctx.conversation()]
        if not ctx.turns:
            return scores[0]
        # Per-turn scores let criteria pool turns over trials, as ADK does.
        return Score(sum(scores) / len(scores), extra={"per_turn": scores})
