"""Efficiency metrics: how much work an agent did for a case (calls and tokens; fewer is cheaper).

They need no reference. Counts cover the whole run: every turn of a multi-turn case, and the
calls of every sub-agent (or, with ``agent=``, one sub-agent's tool calls only).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..matching import DEFAULT_MATCHER, ToolCallMatcher
from .base import NAN, Metric, Score, ScoringContext

__all__ = ["ToolCallCount", "ModelCallCount", "RepeatedToolCalls", "TokenCount"]


def _run_calls(ctx: ScoringContext, agent: str | None) -> list[Any]:
    calls = [c for turn in ctx.conversation() for c in turn.predicted_trajectory]
    if agent is not None:
        calls = [c for c in calls if getattr(c, "agent", None) == agent]
    return calls


class ToolCallCount(Metric):
    """``tool_call_count``: how many tool calls the run made (one sub-agent's with ``agent=``)."""

    reads = ("predicted_trajectory",)

    def __init__(self, *, agent: str | None = None, name: str | None = None) -> None:
        self.agent = agent
        self.name = name or ("tool_call_count" + (f"_{agent}" if agent else ""))

    def score(self, ctx: ScoringContext) -> float:
        return float(len(_run_calls(ctx, self.agent)))


class RepeatedToolCalls(Metric):
    """``repeated_tool_calls``: calls that repeat an earlier call of the run with the same tool and
    arguments (as ``matcher`` compares them); 0 when no call is made twice."""

    reads = ("predicted_trajectory",)

    def __init__(self, *, matcher: ToolCallMatcher | None = None, agent: str | None = None, name: str | None = None) -> None:
        self.matcher = matcher or DEFAULT_MATCHER
        self.agent = agent
        self.name = name or ("repeated_tool_calls" + (f"_{agent}" if agent else ""))

    def score(self, ctx: ScoringContext) -> float | Score:
        calls = _run_calls(ctx, self.agent)
        if not self.matcher.is_equivalence:
            return NAN  # "the same call" needs an equivalence: a tolerance or a callable has none
        counts = Counter(self.matcher.key(c) for c in calls)
        repeated = sum(n - 1 for n in counts.values())
        if not repeated:
            return 0.0
        names = _repeated_names(calls, counts, self.matcher)
        return Score(float(repeated), f"repeated: {names}")


def _repeated_names(calls: Sequence[Any], counts: Counter, matcher: ToolCallMatcher) -> str:
    shown: dict[Any, str] = {}
    for call in calls:
        key = matcher.key(call)
        if counts[key] > 1 and key not in shown:
            shown[key] = f"{call.tool_name} x{counts[key]}"
    return ", ".join(list(shown.values())[:5])


class ModelCallCount(Metric):
    """``model_call_count``: how many model (LLM) calls the run made, sub-agents included; NaN
    when the adapter cannot tell (a remote agent that does not report them)."""

    def __init__(self, *, name: str = "model_call_count") -> None:
        self.name = name

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and ctx.model_calls is not None

    def score(self, ctx: ScoringContext) -> float:
        return float(ctx.model_calls) if ctx.model_calls is not None else NAN


class TokenCount(Metric):
    """``token_count``: tokens the agent's model calls spent over the run; NaN when not reported.

    ``kind="input"`` or ``"output"`` counts only those tokens (``input_token_count``,
    ``output_token_count``). Not named ``total_tokens``: the summary's ``total_tokens/mean`` is
    the runs' usage (failed runs' partial usage included), which a metric must not overwrite.
    """

    _KINDS = {"total": "total_tokens", "input": "input_tokens", "output": "output_tokens"}

    def __init__(self, kind: str = "total", *, name: str | None = None) -> None:
        if kind not in self._KINDS:
            from ...errors import MetricError

            raise MetricError(f"token_count kind={kind!r} is not one of {', '.join(self._KINDS)}")
        self.kind = kind
        self.field = self._KINDS[kind]
        self.name = name or ("token_count" if kind == "total" else f"{kind}_token_count")

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and ctx.usage is not None

    def score(self, ctx: ScoringContext) -> float:
        return float(getattr(ctx.usage, self.field)) if ctx.usage is not None else NAN
