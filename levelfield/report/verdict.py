"""Who won, in words: per metric the best agent and whether it is significantly better than each other.

"p=0.078" alone is not a verdict. These sentences are what the report's first section and the
CLI print: the agent with the highest mean on a metric, then, for every other agent, whether
the paired test (Holm-adjusted across the pairs of that metric) says it is significantly
better, with the adjusted p-value, and "not significant" where it is not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..comparison import Comparison

__all__ = ["Versus", "MetricVerdict", "verdicts", "verdict_lines", "headline"]


@dataclass(frozen=True)
class Versus:
    """The leading agent set against one other agent on one metric."""

    other: str
    difference: float
    """Mean of best − other over the cases both were scored on."""
    p_holm: float
    """Holm-adjusted p-value of the paired test; NaN when there was nothing to test."""
    significant: bool
    """True when the leader is better and ``p_holm`` is under 1 − confidence."""


@dataclass(frozen=True)
class MetricVerdict:
    """One metric's verdict: the leading agent(s), their mean, and how the leader fares against each other agent."""

    metric: str
    best: tuple[str, ...]
    """The agents with the highest mean (several when they tie); empty when nothing was scored."""
    mean: float
    versus: tuple[Versus, ...]
    confidence: float

    @property
    def beats_all(self) -> bool:
        """True when the leader is significantly better than every agent it does not tie with."""
        return bool(self.best) and bool(self.versus) and all(v.significant for v in self.versus)

    def sentence(self) -> str:
        """The verdict as one plain sentence."""
        if not self.best:
            return f"{self.metric}: no agent could be scored."
        if len(self.best) > 1:
            lead = f"{_and(self.best)} tie for best ({self.mean:.3f})"
        else:
            lead = f"{self.best[0]} is best ({self.mean:.3f})"
        better = [f"{v.other} ({_p(v.p_holm)})" for v in self.versus if v.significant]
        not_better = [f"{v.other} ({_p(v.p_holm)})" for v in self.versus if not v.significant]
        parts = []
        if better:
            parts.append(f"significantly better than {', '.join(better)}")
        if not_better:
            parts.append(f"not significantly better than {', '.join(not_better)}")
        tail = "; ".join(parts)
        return f"{self.metric}: {lead}" + (f"; {tail}." if tail else ".")


def _and(names: "tuple[str, ...] | list[str]") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _p(p: float) -> str:
    if math.isnan(p):
        return "no paired cases"
    return "Holm p<0.001" if p < 0.001 else f"Holm p={p:.3f}"


def verdicts(cmp: Comparison) -> list[MetricVerdict]:
    """A verdict per metric of ``cmp`` (empty with fewer than two agents)."""
    if len(cmp.agents) < 2:
        return []
    out = []
    for metric in cmp.metric_names:
        means = {a: float(cmp.summary.loc[a, f"{metric}/mean"]) for a in cmp.agents}
        scored = {a: m for a, m in means.items() if not math.isnan(m)}
        if not scored:
            out.append(MetricVerdict(metric, (), math.nan, (), cmp.confidence))
            continue
        top = max(scored.values())
        best = tuple(a for a, m in scored.items() if math.isclose(m, top, abs_tol=1e-12))
        table = cmp.pairwise(metric)
        versus = []
        if len(best) == 1:
            leader = best[0]
            for row in table.itertuples(index=False):
                if leader not in (row.agent_a, row.agent_b):
                    continue
                other, sign = (row.agent_b, 1.0) if row.agent_a == leader else (row.agent_a, -1.0)
                diff = sign * float(row.difference)
                significant = bool(row.significant) and diff > 0
                versus.append(Versus(other, diff, float(row.p_holm), significant))
        else:
            # Co-leaders are not set against each other; each other agent against the first of them.
            leader = best[0]
            for row in table.itertuples(index=False):
                if leader not in (row.agent_a, row.agent_b):
                    continue
                other, sign = (row.agent_b, 1.0) if row.agent_a == leader else (row.agent_a, -1.0)
                if other in best:
                    continue
                diff = sign * float(row.difference)
                versus.append(Versus(other, diff, float(row.p_holm), bool(row.significant) and diff > 0))
        out.append(MetricVerdict(metric, best, top, tuple(versus), cmp.confidence))
    return out


def headline(cmp: Comparison, found: list[MetricVerdict] | None = None) -> str:
    """One sentence over all metrics: who leads most often, and where that lead is significant."""
    found = verdicts(cmp) if found is None else found
    if not found:
        return ""
    level = f"{int(round(cmp.confidence * 100))}%"
    alone = {a: sum(v.best == (a,) for v in found) for a in cmp.agents}
    shared = {a: sum(a in v.best and len(v.best) > 1 for v in found) for a in cmp.agents}
    winner = max(cmp.agents, key=lambda a: (alone[a] + shared[a], alone[a], -cmp.agents.index(a)))
    if alone[winner] + shared[winner] == 0:
        return "No agent could be scored on any metric."
    wins = [v for v in found if v.beats_all and winner in v.best]
    partners = {v.best for v in found if winner in v.best}
    if alone[winner] == 0 and len(partners) == 1:
        # The same agents tie on every metric: name them all rather than pick one.
        sentence = f"{_and(next(iter(partners)))} tie for best on {shared[winner]} of {len(found)} metrics"
    elif alone[winner] == 0:
        sentence = f"{winner} ties for best on {shared[winner]} of {len(found)} metrics"
    else:
        sentence = f"{winner} is best on {alone[winner]} of {len(found)} metrics"
        if shared[winner]:
            sentence += f" and ties for best on {shared[winner]} more"
    group = alone[winner] == 0 and len(partners) == 1
    subject = "they are" if group else "it is"
    if wins:
        tied = not group and any(len(v.best) > 1 for v in wins)
        others = "every agent it does not tie with" if tied else "every other agent"
        sentence += f"; {subject} significantly better than {others} on {len(wins)} ({', '.join(v.metric for v in wins)})."
    elif any(x.significant for v in found for x in v.versus):
        sentence += f", but {subject} not significantly better than every other agent on any of them at the {level} level."
    else:
        sentence += f"; no difference between agents is significant at the {level} level (Holm-adjusted)."
    return sentence


def verdict_lines(cmp: Comparison) -> list[str]:
    """The headline, then one sentence per metric; empty with fewer than two agents."""
    found = verdicts(cmp)
    if not found:
        return []
    return [headline(cmp, found), *(v.sentence() for v in found)]
