"""Multi-agent metrics: which agent made which call, and whether control passed between agents as expected."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ...data.types import Handoff, ToolCall
from ..matching import DEFAULT_MATCHER, ToolCallMatcher, align
from .base import Metric, Score, ScoringContext

__all__ = ["HandoffMatch", "ToolAttribution", "agents_seen", "for_agent", "absent_note"]

_MODES = ("exact", "in_order", "any_order")
_SHOWN = 5


def agents_seen(ctx: ScoringContext) -> list[str]:
    """Every agent the run shows, in order of first appearance: hand-offs and the calls' authors."""
    seen: dict[str, None] = {}
    for handoff in ctx.handoffs:
        for name in (handoff.from_agent, handoff.to_agent):
            if name:
                seen.setdefault(name, None)
    for call in ctx.predicted_trajectory:
        agent = getattr(call, "agent", None)
        if agent:
            seen.setdefault(agent, None)
    return list(seen)


def absent_note(names: Sequence[str], ctx: ScoringContext) -> str | None:
    """The per-case note for agents a reference or a metric names that the run never shows (None: all appear)."""
    seen = agents_seen(ctx)
    missing = [n for n in dict.fromkeys(names) if n not in seen]
    if not missing:
        return None
    which = ", ".join(repr(n) for n in missing)
    agents = ", ".join(repr(n) for n in seen[:_SHOWN]) if seen else "none named"
    return f"agent {which} never appears in this run (agents seen: {agents})"


def for_agent(ctx: ScoringContext, agent: str) -> ScoringContext:
    """``ctx`` with only ``agent``'s calls: the predicted calls it made, and the reference calls that
    name it (the whole reference when no reference call names an agent)."""
    predicted = [c for c in ctx.predicted_trajectory if getattr(c, "agent", None) == agent]
    reference = ctx.reference_trajectory
    if reference is not None and any(c.agent for c in reference):
        reference = [c for c in reference if c.agent == agent]
    # A fresh alignment cache: the filtered calls align differently from the whole row's.
    return dataclasses.replace(ctx, predicted_trajectory=predicted, reference_trajectory=reference, _alignments={})


def _names(handoffs: Sequence[Handoff]) -> str:
    text = ", ".join(f"{h.from_agent}->{h.to_agent}" if h.from_agent else f"->{h.to_agent}" for h in handoffs[:_SHOWN])
    more = len(handoffs) - _SHOWN
    return (text or "none") + (f" and {more} more" if more > 0 else "")


def _same(predicted: Handoff, reference: Handoff) -> bool:
    # A reference that names only where control goes matches a hand-off from any agent.
    return predicted.to_agent == reference.to_agent and reference.from_agent in (None, predicted.from_agent)


def _in_order(predicted: Sequence[Handoff], reference: Sequence[Handoff]) -> bool:
    # Taking the earliest hand-off that matches each reference one is optimal for a subsequence test.
    remaining = iter(predicted)
    return all(any(_same(p, r) for p in remaining) for r in reference)


def _any_order(predicted: Sequence[Handoff], reference: Sequence[Handoff]) -> int:
    """How many reference hand-offs distinct predicted ones match. References naming ``from_agent``
    are matched first: they accept fewer hand-offs, so this greedy order is a maximum matching."""
    free = list(predicted)
    matched = 0
    for r in sorted(reference, key=lambda h: h.from_agent is None):
        hit = next((i for i, p in enumerate(free) if _same(p, r)), None)
        if hit is not None:
            del free[hit]
            matched += 1
    return matched


class HandoffMatch(Metric):
    """1 if the run's hand-offs between agents are the expected ones (``reference_handoffs``), else 0.

    ``mode="exact"``: the same hand-offs in the same order and no other; ``"in_order"``: the
    expected ones in order, others allowed; ``"any_order"``: each expected one made, in any order.
    A reference hand-off names the agent control passes to (and, optionally, the one it comes
    from). A reference naming an agent the run never shows scores 0 with a note saying so.
    """

    requires = ("reference_handoffs",)

    def __init__(self, mode: str = "exact", *, name: str | None = None) -> None:
        if mode not in _MODES:
            from ...errors import MetricError

            raise MetricError(f"handoff_match mode={mode!r} is not one of {', '.join(_MODES)}")
        self.mode = mode
        self.name = name or ("handoff_match" if mode == "exact" else f"handoff_{mode}_match")

    def score(self, ctx: ScoringContext) -> Score:
        predicted, reference = ctx.handoffs, ctx.reference_handoffs or []
        if self.mode == "exact":
            ok = len(predicted) == len(reference) and all(_same(p, r) for p, r in zip(predicted, reference))
        elif self.mode == "in_order":
            ok = _in_order(predicted, reference)
        else:
            ok = _any_order(predicted, reference) == len(reference)
        text = f"hand-offs made: {_names(predicted)}; expected: {_names(reference)}"
        if not ok:
            note = absent_note([n for h in reference for n in (h.from_agent, h.to_agent) if n], ctx)
            if note:
                text = f"{note}; {text}"
        return Score(float(ok), text)


class ToolAttribution(Metric):
    """Share of expected calls that name an agent (``agent`` on reference calls) made by that agent.

    Calls are compared with ``matcher`` (by default, same tool and equal arguments) and the agent
    must be the same. Rows whose reference names no agent are not scored (NaN).
    """

    requires = ("reference_trajectory",)

    def __init__(self, *, matcher: ToolCallMatcher | None = None, name: str = "tool_attribution") -> None:
        self.matcher = matcher or DEFAULT_MATCHER
        self.name = name

    def computable(self, ctx: ScoringContext) -> bool:
        return super().computable(ctx) and any(c.agent for c in ctx.reference_trajectory or [])

    def score(self, ctx: ScoringContext) -> Score:
        expected = [c for c in ctx.reference_trajectory or [] if c.agent]
        agents = list(dict.fromkeys(c.agent for c in expected if c.agent))
        matched = 0
        wrong: list[str] = []
        for agent in agents:
            mine = [c for c in expected if c.agent == agent]
            made = [c for c in ctx.predicted_trajectory if c.agent == agent]
            a = align(made, mine, self.matcher, pairs=True)
            matched += a.matched
            taken = {j for _, j in a.matched_pairs or ()}
            for j, call in enumerate(mine):
                if j not in taken:
                    wrong.append(_misattributed(call, ctx.predicted_trajectory, self.matcher))
        text = f"{matched}/{len(expected)} expected calls made by the expected agent"
        if wrong:
            more = len(wrong) - _SHOWN
            text += "; " + "; ".join(wrong[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        note = absent_note(agents, ctx)
        if note:
            text = f"{note}; {text}"
        return Score(matched / len(expected), text)


def _misattributed(call: ToolCall, predicted: Sequence[ToolCall], matcher: ToolCallMatcher) -> str:
    """Why an expected call was not credited: made by another agent, or not made at all."""
    others = [p.agent or "the root agent" for p in predicted if p.agent != call.agent and matcher.matches(p, call)]
    if others:
        return f"{call.tool_name} expected from {call.agent!r} was made by {others[0]!r}"
    return f"{call.tool_name} expected from {call.agent!r} was not made"
