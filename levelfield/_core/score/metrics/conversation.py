"""Metrics of whole conversations with a simulated user (scenario cases)."""

from __future__ import annotations

from .base import NAN, Metric, ScoringContext

__all__ = ["TurnsUsed"]


class TurnsUsed(Metric):
    """How many turns the agent took to finish a simulated conversation (fewer is better).

    Only scenario cases have a number of turns the agent decides: other rows score NaN.
    """

    name = "turns_used"

    def __init__(self, name: str = "turns_used") -> None:
        self.name = name

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and "turns_used" in ctx.metadata and "conversation" in ctx.metadata

    def score(self, ctx: ScoringContext) -> float:
        value = ctx.metadata.get("turns_used")
        return float(value) if isinstance(value, int) else NAN
