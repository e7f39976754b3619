"""Trajectory metrics: how the tool calls an agent made compare with the reference calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from ...data.types import ToolCall
from ...errors import MetricError
from ..matching import DEFAULT_MATCHER, Alignment, ToolCallMatcher, align
from .agents import absent_note, for_agent
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


# Longer lists of calls are cut in explanations, with a count of the rest.
_SHOWN_CALLS = 5


def _calls_text(calls: Sequence[ToolCall], indices: Sequence[int], other_names: set[str]) -> str:
    """Tool names of ``calls[indices]``; a name the other side also left unmatched was called with other arguments."""
    names = [
        f"{calls[i].tool_name} (args differ)" if calls[i].tool_name in other_names else calls[i].tool_name
        for i in indices[:_SHOWN_CALLS]
    ]
    more = len(indices) - _SHOWN_CALLS
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


# The texts that only depend on counts are made once per count: most rows share them, and
# building a string per row and metric costs as much as the metric itself.
@lru_cache(maxsize=4096)
def _counted(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


@lru_cache(maxsize=4096)
def _matched(m: int, n: int, what: str) -> str:
    return f"matched {m}/{n} {what} calls"


class _Gaps:
    """Where one row's prediction departs from the reference, as text: the unmatched reference
    calls (missing), the unmatched predicted calls (extra), the first matched call out of the
    reference's order. Each text is built once, when a metric first asks for it."""

    __slots__ = ("row", "_pairs", "_predicted", "_reference", "_missing", "_extra", "_missing_text", "_extra_text")

    def __init__(self, ctx: ScoringContext, row: Alignment, pairs: tuple[tuple[int, int], ...]) -> None:
        self.row = row
        """The row's cached alignment: which row these gaps belong to."""
        self._pairs = pairs
        self._predicted = ctx.predicted_trajectory
        self._reference = ctx.reference_trajectory or []
        n_p, n_r, n = row.n_predicted, row.n_reference, len(pairs)
        self._missing: list[int] = []
        if n < n_r:
            taken = {j for _, j in pairs}
            self._missing = [j for j in range(n_r) if j not in taken]
        self._extra: list[int] = []
        if n < n_p:
            taken = {i for i, _ in pairs}
            self._extra = [i for i in range(n_p) if i not in taken]
        self._missing_text: str | None = None
        self._extra_text: str | None = None

    @property
    def any_missing(self) -> bool:
        return bool(self._missing)

    @property
    def any_extra(self) -> bool:
        return bool(self._extra)

    def missing(self) -> str:
        if self._missing_text is None:
            other = {self._predicted[i].tool_name for i in self._extra}
            self._missing_text = "missing " + _calls_text(self._reference, self._missing, other)
        return self._missing_text

    def extra(self) -> str:
        if self._extra_text is None:
            other = {self._reference[j].tool_name for j in self._missing}
            self._extra_text = "extra " + _calls_text(self._predicted, self._extra, other)
        return self._extra_text

    def order(self) -> str:
        """Which matched call came after one that the reference puts later."""
        latest = -1
        for _, j in self._pairs:  # in predicted order
            if j < latest:
                first, later = self._reference[j].tool_name, self._reference[latest].tool_name
                return f"out of order: reference call #{j + 1} {first} came after #{latest + 1} {later}"
            latest = j
        return "out of order"


# The gaps of the row scored last. The metrics below score one row one after the other
# (score_sync), so they share one _Gaps instead of each finding the same unmatched calls again;
# the alignment object (cached per row and matcher) identifies the row.
_last_gaps: _Gaps | None = None


def _gaps(ctx: ScoringContext, alignment: Alignment, matcher: ToolCallMatcher) -> _Gaps:
    global _last_gaps
    last = _last_gaps
    if last is not None and last.row is alignment:
        return last
    pairs = alignment.matched_pairs
    if pairs is None:  # an alignment made without its pairs
        pairs = align(ctx.predicted_trajectory, ctx.reference_trajectory or [], matcher, pairs=True).matched_pairs
    gaps = _last_gaps = _Gaps(ctx, alignment, tuple(sorted(pairs or ())))
    return gaps


class _TrajectoryMetric(Metric):
    requires = ("reference_trajectory",)
    reads = ("predicted_trajectory", "reference_trajectory")
    default_name: str = ""

    def value(self, a: Alignment) -> Any:
        """The score from an alignment alone: the number ``score`` gives, without the why.

        Written with operators only, so that it takes one row's alignment (a float comes back) or
        a batch's alignments held as arrays (an array comes back): saved predictions scored batch
        by batch (``levelfield._core.score.batch``) use the same code as ``score``."""
        raise NotImplementedError

    def __init__(self, *, matcher: ToolCallMatcher | None = None, name: str | None = None, agent: str | None = None) -> None:
        self.matcher = matcher or DEFAULT_MATCHER
        self.agent = agent
        """Score only this (sub-)agent's calls (and the reference calls naming it), when given."""
        self.name = name or (f"{self.default_name}_{agent}" if agent else self.default_name)

    def score(self, ctx: ScoringContext) -> Score:
        if self.agent is None:
            return self.score_calls(ctx)
        scored = self.score_calls(for_agent(ctx, self.agent))
        note = absent_note([self.agent], ctx)
        text = f"agent {self.agent!r}: {scored.explanation}"
        return Score(scored.value, f"{note}; {text}" if note else text)

    def score_calls(self, ctx: ScoringContext) -> Score:
        """The score of the calls in ``ctx`` (only the chosen agent's, when ``agent`` is set)."""
        a = ctx.alignment(self.matcher)
        return Score(self.value(a), self.explanation(a, lambda: _gaps(ctx, a, self.matcher)))

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        """Why a row with alignment ``a`` scores what it does; ``gaps`` gives the calls missing or
        extra, when the text names them. Without ``gaps``: None where the text needs them (the
        counts of ``a`` alone explain a full match, so a table need not match the calls again)."""
        raise NotImplementedError

    def explained(self, a: Alignment) -> str | None:
        """The explanation :meth:`score` gives a row with alignment ``a`` (made without its pairs),
        when the counts alone say it; None otherwise (then ``score`` says it). Only for this class's
        own ``score``: None for a subclass (which may score or explain in its own way)."""
        return self.explanation(a, None) if type(self) in _BUILT_IN and self.agent is None else None


class TrajectoryExactMatch(_TrajectoryMetric):
    """1 if the prediction has the reference's calls, in its order, and nothing else."""

    default_name = "trajectory_exact_match"

    def value(self, a: Alignment) -> Any:
        return a.exact * 1.0

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        if self.value(a):
            if a.n_reference == 0:
                return "no calls, as in the reference"
            return f"calls match the reference one for one, in order ({_counted(a.n_reference, 'call')})"
        if gaps is None:
            return None
        found = gaps()
        parts = []
        if a.n_predicted != a.n_reference:
            parts.append(f"{_counted(a.n_predicted, 'call')} made, the reference has {_counted(a.n_reference, 'call')}")
        if found.any_missing:
            parts.append(found.missing())
        if found.any_extra:
            parts.append(found.extra())
        if not parts:
            parts.append(found.order())
        return "; ".join(parts)


class TrajectoryInOrderMatch(_TrajectoryMetric):
    """1 if the reference calls appear in the prediction in order; extra calls allowed."""

    default_name = "trajectory_in_order_match"

    def value(self, a: Alignment) -> Any:
        return ((a.n_reference == 0) | a.in_order) * 1.0

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        if a.n_reference == 0:
            return "the reference has no calls"
        if self.value(a):
            text = f"{_counted(a.n_reference, 'reference call')} made in order"
            # Every reference call is matched, so any further predicted call is an extra one.
            if a.n_predicted > a.n_reference:
                if gaps is None:
                    return None
                text = f"{text}; {gaps().extra()}"
            return text
        if gaps is None:
            return None
        if a.matched < a.n_reference:
            return f"{_matched(a.matched, a.n_reference, 'reference')}; {gaps().missing()}"
        return f"{_counted(a.n_reference, 'reference call')} made, but {gaps().order()}"


class TrajectoryAnyOrderMatch(_TrajectoryMetric):
    """1 if every reference call is matched by a distinct predicted call, in any order."""

    default_name = "trajectory_any_order_match"

    def value(self, a: Alignment) -> Any:
        return ((a.n_reference == 0) | a.any_order) * 1.0

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        if a.n_reference == 0:
            return "the reference has no calls"
        text = _matched(a.matched, a.n_reference, "reference")
        if self.value(a):
            return text
        return None if gaps is None else f"{text}; {gaps().missing()}"


class TrajectoryPrecision(_TrajectoryMetric):
    """Share of predicted calls that match a reference call (1.0 when both are empty)."""

    default_name = "trajectory_precision"

    def value(self, a: Alignment) -> Any:
        # matched / n_predicted; with no call made, 1 if none was expected, else 0.
        none_made = a.n_predicted == 0
        return (a.matched + none_made * (a.n_reference == 0)) / (a.n_predicted + none_made)

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        if a.n_predicted == 0:
            if a.n_reference == 0:
                return "no calls made, none expected"
            return f"no calls made; the reference has {_counted(a.n_reference, 'call')}"
        text = _matched(a.matched, a.n_predicted, "predicted")
        if a.matched < a.n_predicted:
            if gaps is None:
                return None
            text = f"{text}; {gaps().extra()}"
        return text


class TrajectoryRecall(_TrajectoryMetric):
    """Share of reference calls matched by a predicted call (1.0 when the reference is empty)."""

    default_name = "trajectory_recall"

    def value(self, a: Alignment) -> Any:
        # matched / n_reference; 1 when the reference has no calls (then nothing is matched).
        none_expected = a.n_reference == 0
        return (a.matched + none_expected) / (a.n_reference + none_expected)

    def explanation(self, a: Alignment, gaps: Callable[[], _Gaps] | None) -> str | None:
        if a.n_reference == 0:
            return "the reference has no calls"
        text = _matched(a.matched, a.n_reference, "reference")
        if a.matched < a.n_reference:
            if gaps is None:
                return None
            text = f"{text}; {gaps().missing()}"
        return text


_BUILT_IN = frozenset({TrajectoryExactMatch, TrajectoryInOrderMatch, TrajectoryAnyOrderMatch, TrajectoryPrecision,
                       TrajectoryRecall})
"""The trajectory metrics whose explanation :meth:`_TrajectoryMetric.explained` may give from counts."""


class TrajectorySingleToolUse(Metric):
    """1 if the agent called ``tool_name`` at least once; needs no reference."""

    reads = ("predicted_trajectory",)

    def __init__(self, tool_name: str, *, name: str | None = None, agent: str | None = None) -> None:
        if not isinstance(tool_name, str) or not tool_name.strip():
            # A tool is named by text: 5 would match no call and score 0 on every row, silently.
            raise MetricError(f"TrajectorySingleToolUse(tool_name={tool_name!r}): give the tool's name as text, "
                              "e.g. tool_name='get_weather'")
        if agent is not None and not isinstance(agent, str):
            raise MetricError(f"TrajectorySingleToolUse(agent={agent!r}): give the (sub-)agent's name as text, or None")
        self.tool_name = tool_name
        self.agent = agent
        """Count only this (sub-)agent's calls, when given."""
        self.name = name or ("trajectory_single_tool_use" + (f"_{agent}" if agent else ""))

    def score(self, ctx: ScoringContext) -> float:
        calls = ctx.predicted_trajectory
        if self.agent is not None:
            calls = [c for c in calls if getattr(c, "agent", None) == self.agent]
        return float(any(c.tool_name == self.tool_name for c in calls))


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
    ``ignore_args=True`` compares tool names only. As ADK scores it: the turn's own calls (not
    those an ``AgentTool``'s agent made inside it, ``ToolCall.within``), every turn counts, a turn
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
            from ...errors import MetricError

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
        # The turn's own calls, as ADK's event stream holds them: not those made inside an AgentTool.
        scores = [self._turn_score([c for c in t.predicted_trajectory or [] if c.within is None], t.reference_trajectory or [])
                  for t in ctx.conversation()]
        if not ctx.turns:
            return scores[0]
        # Per-turn scores let criteria pool turns over trials, as ADK does.
        return Score(sum(scores) / len(scores), extra={"per_turn": scores})
