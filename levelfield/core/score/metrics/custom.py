"""User-written metrics with Vertex AI's ``CustomMetric(name, metric_function)`` signature."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .base import Metric, Score, ScoringContext, as_float

__all__ = ["CustomMetric"]


class CustomMetric(Metric):
    """``metric_function(instance) -> {name: score, ...}``; other keys become ``<name>/<key>`` columns.

    The instance is the row as a dict: prompt, reference, response, predicted_trajectory,
    reference_trajectory (lists of ``{"tool_name", "tool_input"}``) and the dataset's other columns.
    A function that raises or omits its score gives NaN for that row and the error in
    ``<name>/error``; the evaluation goes on.
    """

    def __init__(self, name: str, metric_function: Callable[[dict[str, Any]], Any]) -> None:
        if not callable(metric_function):
            from ...errors import MetricError

            raise MetricError(f"CustomMetric {name!r}: metric_function must be callable")
        self.name = name
        self.metric_function = metric_function
        self.is_async = inspect.iscoroutinefunction(metric_function)

    def _read(self, out: Any) -> Score:
        if isinstance(out, dict):
            if self.name not in out:
                return Score(
                    float("nan"),
                    failed=True,
                    extra={"error": f"the returned dict has no key {self.name!r} (keys: {sorted(out)})"},
                )
            extra = {k: v for k, v in out.items() if k != self.name and k != "explanation"}
            return Score(as_float(out[self.name]), explanation=out.get("explanation"), extra=extra)
        return Score(as_float(out))

    def score(self, ctx: ScoringContext) -> Score:
        return self._read(self.metric_function(ctx.instance()))

    async def ascore(self, ctx: ScoringContext) -> Score:
        if self.is_async:
            return self._read(await self.metric_function(ctx.instance()))
        return self.score(ctx)
