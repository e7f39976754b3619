"""What a metric is: a name and a way to score one row, given one scoring context."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..matching import Alignment, ToolCallMatcher, align
from ..types import ToolCall, Usage

__all__ = ["Metric", "Score", "ScoringContext", "NAN"]

NAN = float("nan")


@dataclass
class Score:
    """A metric's verdict on one row, when it has more to say than a number."""

    value: float
    explanation: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """More columns, written as ``<metric>/<key>``."""
    failed: bool = False
    """The metric itself failed on this row (a judge that could not answer, a function that raised)."""
    usage: Usage | None = None
    """Tokens the metric spent (judged metrics)."""


@dataclass
class ScoringContext:
    """Everything a metric may look at for one row: the case, and the agent's answer to it."""

    case_id: str
    prompt: str | None
    response: str | None
    predicted_trajectory: list[ToolCall]
    reference: str | None = None
    reference_trajectory: list[ToolCall] | None = None
    """None when the dataset gives no reference trajectory for this row (not the same as [])."""
    history: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    failure: bool = False
    turns: list[dict[str, Any]] = field(default_factory=list)
    """Per-turn ``{prompt, response, predicted_trajectory, reference, reference_trajectory}`` of a multi-turn case."""
    _alignments: dict[int, Alignment] = field(default_factory=dict, repr=False)

    def alignment(self, matcher: ToolCallMatcher) -> Alignment:
        """The alignment of predicted against reference trajectory, computed once per matcher."""
        key = id(matcher)
        cached = self._alignments.get(key)
        if cached is None:
            cached = align(self.predicted_trajectory, self.reference_trajectory or [], matcher)
            self._alignments[key] = cached
        return cached

    def instance(self) -> dict[str, Any]:
        """The row as Vertex AI hands it to a custom metric function."""
        row = dict(self.metadata)
        row.update(
            prompt=self.prompt,
            response=self.response,
            reference=self.reference,
            predicted_trajectory=[c.to_vertex() for c in self.predicted_trajectory],
            reference_trajectory=(
                None
                if self.reference_trajectory is None
                else [c.to_vertex() for c in self.reference_trajectory]
            ),
        )
        return row


class Metric:
    """Base of every metric: a unique ``name`` and ``score(ctx)`` for one row.

    ``requires`` names the context fields that must be present (not None) for the metric to be
    computable; rows lacking one get NaN. Metrics are never called for failed runs.
    """

    name: str
    requires: ClassVar[tuple[str, ...]] = ()
    is_async: ClassVar[bool] = False

    def score(self, ctx: ScoringContext) -> float | Score:
        raise NotImplementedError

    async def ascore(self, ctx: ScoringContext) -> float | Score:
        return self.score(ctx)

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and all(getattr(ctx, f) is not None for f in self.requires)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def as_float(value: Any) -> float:
    if value is None:
        return NAN
    try:
        out = float(value)
    except (TypeError, ValueError):
        return NAN
    return out if not math.isinf(out) else NAN
