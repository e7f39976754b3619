"""Who won, who lost and why, in words: the verdict of a comparison.

"p=0.078" alone is not a verdict. These sentences are what ``Comparison.verdict()``, the CLI and
the report's first section say. The first line names the best agent(s) and the worst, with the
main reason the worst fell behind: the reference call it misses most often, the arguments it
gets wrong, the extra call it makes, or the error its runs fail with. Then, per metric, the
agent with the highest mean and, against every other agent, whether the paired test (adjusted
across the pairs that can differ, see ``Comparison.pairwise``) says it is significantly better.

This module sits below ``levelfield.comparison._comparison``: it reads a comparison through the small
:class:`Compared` protocol and imports neither the comparison nor the report, so both can use it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .._core.data.money import dollars

__all__ = [
    "Compared",
    "Versus",
    "MetricVerdict",
    "Verdict",
    "verdict",
    "verdicts",
    "verdict_lines",
    "headline",
    "failure_rule",
    "other_rule",
    "cost_sentence",
    "untestable_reason",
]


class Compared(Protocol):
    """What the verdict reads of a comparison (``levelfield.Comparison`` has all of it)."""

    metrics: list[Any]
    stopped_early: dict[str, Any] | None

    @property
    def confidence(self) -> float: ...
    @property
    def trials(self) -> int: ...
    @property
    def failed_runs(self) -> str: ...

    @property
    def agents(self) -> list[str]: ...
    @property
    def metric_names(self) -> list[str]: ...
    @property
    def case_ids(self) -> list[str]: ...
    @property
    def summary(self) -> pd.DataFrame: ...
    def pairwise(self, metric: str) -> pd.DataFrame: ...
    def paired(self, metric: str, agent_a: str, agent_b: str) -> Any: ...
    def case_view(self, case_id: str) -> Any: ...
    @property
    def margin(self) -> float: ...


def early_stop_line(cmp: Compared) -> str:
    """Where a sequential comparison stopped and why, in one line ("" without ``stop_early``)."""
    info = cmp.stopped_early
    if not info:
        return ""
    made, planned = info["runs_made"], info["runs_planned"]
    if info["stopped"]:
        # The runs analysed are a function of the seed and the results; how many more were in flight
        # at the stop (journaled, left out) and so how many were never run depend on timing: a line apart.
        analysed = info.get("runs_analysed", made)
        late = int(info.get("runs_left_out", 0) or 0)
        line = (f"Stopped early after {info['cases_analysed']} of {info['cases']} cases ({analysed} of {planned} runs "
                f"analysed): {info['verdict']}.")
        return line + (f"\n({planned - made} runs not run; {late} in flight at the stop were recorded and left out.)"
                       if late else f"\n({planned - made} runs not run.)")
    return f"Ran all {info['cases']} cases: not every pair was decided early ({info['verdict']})."


def untestable_reason(differing: int, p_min: float, alpha: float) -> str:
    """Why a pair left out of the adjustment (Tarone) cannot be significant, in words: its cases
    alone ("too few cases differ (3)": even every differing case going one way would not reach
    ``alpha``), or the adjustment across the pairs (that best possible p reaches ``alpha`` alone,
    not the stricter level the number of pairs that could differ asks for)."""
    if differing == 0:
        return "identical on every case"
    if not (p_min < alpha):
        return f"too few cases differ ({differing})"
    return (f"the adjustment across the pairs: even with every differing case one way its p ({_num_p(p_min)}) "
            "would not pass the adjusted level")


def failure_rule(policy: str) -> str:
    """The rule for failed runs in words, as every output states it once."""
    return "failed runs count as 0" if policy == "zero" else "failed runs are left out"


def other_rule(policy: str) -> str:
    """The rule a comparison does not use, as a label for its other mean."""
    return "failed runs left out" if policy == "zero" else "failed runs as 0"


@dataclass(frozen=True)
class Versus:
    """The leading agent set against one other agent on one metric."""

    other: str
    difference: float
    """Mean of best − other over the cases both were scored on."""
    p_holm: float
    """Adjusted p-value of the paired test; NaN when the pair was not tested (see ``in_family``)."""
    significant: bool
    """True when the leader is better and ``p_holm`` is under 1 − confidence."""
    p_value: float = math.nan
    """The paired test's p-value before adjustment."""
    in_family: bool = True
    """False when no outcome of these cases could be significant (Tarone): left out of the adjustment."""
    n: int = 0
    """Paired cases."""
    differing: int = 0
    """Paired cases where the two scored differently."""
    p_min: float = math.nan
    """The smallest p the pair's test could give on these cases (Tarone)."""
    alpha: float = 0.05

    def evidence(self) -> str:
        """The p-value behind this comparison in words, for the parentheses after it."""
        if self.n == 0:
            return "no paired cases"
        if self.differing == 0:
            return "the same score on every case"
        if not self.in_family:
            return (f"p={_num_p(self.p_value)} before adjustment; cannot be significant: "
                    f"{untestable_reason(self.differing, self.p_min, self.alpha)}")
        return "adjusted p<0.001" if self.p_holm < 0.001 else f"adjusted p={self.p_holm:.3f}"


@dataclass(frozen=True)
class MetricVerdict:
    """One metric's verdict: the leading agent(s), their mean, and how the leader fares against each other agent."""

    metric: str
    best: tuple[str, ...]
    """The agents with the highest mean (several when they tie); empty when nothing was scored."""
    mean: float
    versus: tuple[Versus, ...]
    confidence: float
    lowest: tuple[str, ...] = ()
    """The agents with the lowest mean, unless every agent ties."""

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
        better = [f"{v.other} ({v.evidence()})" for v in self.versus if v.significant]
        not_better = [f"{v.other} ({v.evidence()})" for v in self.versus if not v.significant]
        parts = []
        if better:
            parts.append(f"significantly better than {', '.join(better)}")
        if not_better:
            parts.append(f"not significantly better than {', '.join(not_better)}")
        tail = "; ".join(parts)
        return f"{self.metric}: {lead}" + (f"; {tail}." if tail else ".")


@dataclass(frozen=True)
class Verdict:
    """A comparison's verdict: the first line (best, worst and why), then one sentence per metric.

    ``str(verdict)`` is those lines; empty with fewer than two agents.
    """

    headline: str
    metrics: tuple[MetricVerdict, ...] = ()
    best: tuple[str, ...] = ()
    """The agents leading on the most metrics (several when they lead together)."""
    worst: str | None = None
    """The agent lowest on the most metrics; None when every agent ties everywhere."""
    reason: str = ""
    """Why the worst agent fell behind, in words ("it skips the reference call X in 8 of 18 cases")."""
    significant: tuple[str, ...] = field(default=())
    """Metrics on which the best are significantly better than every agent they do not tie with."""
    cost: str = ""
    """What the best costs against the others, when costs are known ("b is as good as a at 40% of the cost")."""

    def lines(self) -> list[str]:
        """The headline, the cost sentence when costs are known, then one sentence per metric;
        empty with fewer than two agents."""
        if not self.metrics:
            return []
        return [self.headline, *([self.cost] if self.cost else []), *(v.sentence() for v in self.metrics)]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _and(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _num_p(p: float) -> str:
    return "-" if math.isnan(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


def _versus(row: Any, leader: str, alpha: float = 0.05) -> Versus:
    other, sign = (row.agent_b, 1.0) if row.agent_a == leader else (row.agent_a, -1.0)
    diff = sign * float(row.difference)
    return Versus(
        other, diff, float(row.p_holm), bool(row.significant) and diff > 0, p_value=float(row.p_value),
        in_family=bool(getattr(row, "in_family", True)), n=int(row.n), differing=int(row.wins) + int(row.losses),
        p_min=float(getattr(row, "p_min", math.nan)), alpha=alpha,
    )


def verdicts(cmp: Compared) -> list[MetricVerdict]:
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
        top, bottom = max(scored.values()), min(scored.values())
        best = tuple(a for a, m in scored.items() if math.isclose(m, top, abs_tol=1e-12))
        lowest = () if math.isclose(top, bottom, abs_tol=1e-12) else tuple(
            a for a, m in scored.items() if math.isclose(m, bottom, abs_tol=1e-12))
        # Co-leaders are not set against each other; each other agent against the first of them.
        leader = best[0]
        versus = tuple(
            _versus(row, leader, 1 - cmp.confidence)
            for row in cmp.pairwise(metric).itertuples(index=False)
            if leader in (row.agent_a, row.agent_b) and (row.agent_b if row.agent_a == leader else row.agent_a) not in best
        )
        out.append(MetricVerdict(metric, best, top, versus, cmp.confidence, lowest))
    return out


def _count_leads(found: Sequence[MetricVerdict], agents: Sequence[str], attr: str) -> tuple[dict[str, int], dict[str, int]]:
    """Per agent: metrics it holds ``attr`` (best/lowest) alone, and metrics it shares it."""
    alone = {a: sum(getattr(v, attr) == (a,) for v in found) for a in agents}
    shared = {a: sum(a in getattr(v, attr) and len(getattr(v, attr)) > 1 for v in found) for a in agents}
    return alone, shared


def verdict(cmp: Compared) -> Verdict:
    """The verdict of ``cmp``: who is best, who is worst and why, and where the lead is significant."""
    found = verdicts(cmp)
    if not found:
        return Verdict("")
    agents = cmp.agents
    alone, shared = _count_leads(found, agents, "best")
    winner = max(agents, key=lambda a: (alone[a] + shared[a], alone[a], -agents.index(a)))
    if alone[winner] + shared[winner] == 0:
        return Verdict("No agent could be scored on any metric.", tuple(found))
    partners = {v.best for v in found if winner in v.best}
    group = alone[winner] == 0 and len(partners) == 1
    best = next(iter(partners)) if group else (winner,)
    if group:
        # The same agents tie on every metric they lead: name them all rather than pick one.
        lead = f"{_and(best)} tie for best on {shared[winner]} of {len(found)} metrics"
    elif alone[winner] == 0:
        lead = f"{winner} ties for best on {shared[winner]} of {len(found)} metrics"
    else:
        lead = f"{winner} is best on {alone[winner]} of {len(found)} metrics"
        if shared[winner]:
            lead += f" and ties for best on {shared[winner]} more"
    worst, reason, low = _worst(cmp, found, set(best))
    if worst is not None:
        lead += f"; {worst} is worst (lowest on {low} of {len(found)})" + (f": {reason}" if reason else "")
    wins = tuple(v.metric for v in found if v.beats_all and winner in v.best)
    level = f"{int(round(cmp.confidence * 100))}%"
    if wins:
        tail = f"The lead over every other agent is significant on {len(wins)} of {len(found)} metrics ({', '.join(wins)})."
    elif any(x.significant for v in found for x in v.versus):
        tail = f"The lead is significant over some agents but, on no metric, over all of them at the {level} level."
    else:
        tail = f"No difference between agents is significant at the {level} level."
    # A sequential stop is told by its own line above the verdict (early_stop_line).
    rests = cmp.rests_on() if hasattr(cmp, "rests_on") and getattr(cmp, "stopped_by", None) != "stop_early" else ""
    if rests:
        lead = f"On {rests}: {lead}"
    return Verdict(f"{lead}. {tail}", tuple(found), best, worst, reason, wins, cost_sentence(cmp, best[0]))


def _dollars(x: float) -> str:
    return dollars(x)  # one formatter for money in every readout (core/data/money.py)


def cost_sentence(cmp: Compared, best: str) -> str:
    """The best agent's cost against the others' in one sentence; "" when its cost is unknown.

    A cheaper agent is called "as good as" the best only when an equivalence test passes on every
    metric: two one-sided tests (TOST) at 1 − confidence, i.e. the interval of the difference at
    1 − 2·(1 − confidence), from the same paired test as the rest of the verdict, lies within
    ± ``StatsConfig.margin`` (an intersection–union test: no adjustment across metrics). With the
    default margin of 0 no finite set of cases shows that, so the sentence says the cheaper agent
    is cheaper and how large a difference these cases could miss (the equivalence test's bound, on
    the metric where it is largest among those the two agents differ on). A cheaper agent
    significantly worse on some metric (adjusted paired tests) is said to be so.
    """
    summary = cmp.summary
    if "cost_usd/mean" not in summary:
        return ""
    costs = {a: float(summary.loc[a, "cost_usd/mean"]) for a in cmp.agents}
    mine = costs[best]
    if math.isnan(mine):
        return ""
    others = {a: c for a, c in costs.items() if a != best and not math.isnan(c)}
    cheaper = sorted((c, a) for a, c in others.items() if c < mine)
    unknown = [a for a, c in costs.items() if math.isnan(c)]
    tail = f" (the cost of {_and(unknown)} is unknown)" if unknown else ""
    if not cheaper:
        if not others:
            return f"{best} costs {_dollars(mine)} per run{tail}."
        return f"{best} is also the cheapest at {_dollars(mine)} per run{tail}."
    for cost, agent in cheaper:
        if _significantly_worse(cmp, agent, best):
            continue
        share = f"{cost / mine:.0%}" if mine > 0 else "no"
        price = f"{share} of the cost ({_dollars(cost)} against {_dollars(mine)} per run)"
        margin = float(getattr(cmp, "margin", 0.0) or 0.0)
        if _as_good_as(cmp, agent, best, margin):
            within = _amount(margin, _reads_in_points(cmp, cmp.metric_names[0]))
            return (f"{agent} is as good as {best} within {within} on every metric (equivalence test) "
                    f"at {price}{tail}.")
        cases = _cases_paired(cmp, agent, best)
        drop, metric, points = _largest_possible_drop(cmp, agent, best)
        if drop is None:
            miss = f" (it scored the same as {best} on every case)"
        else:
            miss = f" (they could miss a difference of up to {_amount(drop, points)} on {metric})"
        return (f"{agent} is cheaper than {best}, at {price}, and significantly worse on no metric; "
                f"these {cases} cases cannot tell whether it is as good{miss}{tail}.")
    cost, agent = cheaper[0]
    worse = _significantly_worse(cmp, agent, best)
    return (f"{best} costs {_dollars(mine)} per run; the cheaper {agent} ({_dollars(cost)}) is significantly worse "
            f"on {', '.join(worse)}{tail}.")


def _amount(value: float, points: bool) -> str:
    return f"{value * 100:.1f} points" if points else f"{value:.3g}"


def _cases_paired(cmp: Compared, agent: str, than: str) -> int:
    """Cases both agents were scored on, the most over the metrics (what the tests rest on)."""
    return max((cmp.paired(m, agent, than).n for m in cmp.metric_names), default=0)


def _reads_in_points(cmp: Compared, metric: str) -> bool:
    """The metric's scores lie in [0, 1], so its differences read as points (× 100)."""
    values = cmp.case_scores(metric).to_numpy() if hasattr(cmp, "case_scores") else np.array([])
    finite = values[~np.isnan(values)] if values.size else values
    return bool(finite.size) and bool(((finite >= 0) & (finite <= 1)).all())


def _as_good_as(cmp: Compared, agent: str, than: str, margin: float) -> bool:
    """The equivalence test passes on every metric (TOST at 1 − confidence from each metric's own paired
    test, :func:`levelfield._core.stats.paired.equivalent`): an intersection–union test, so no adjustment
    across metrics. Never with a margin of 0 or a metric without paired cases."""
    from .._core.stats.paired import equivalent

    alpha = 1 - cmp.confidence
    if not margin > 0:
        return False
    return all(equivalent(cmp.paired(m, agent, than), margin, alpha=alpha) for m in cmp.metric_names)


def _largest_possible_drop(cmp: Compared, agent: str, than: str) -> tuple[float | None, str, bool]:
    """The figure "these cases could miss a difference of up to X on metric": the largest, over the
    metrics on which the two agents differ on some case, of the equivalence test's bound
    (:func:`levelfield._core.stats.paired.equivalence_bound`), with its metric and whether it reads in
    points. None when they scored the same on every case of every metric."""
    from .._core.stats.paired import equivalence_bound

    alpha = 1 - cmp.confidence
    worst: tuple[float | None, str, bool] = (None, "", False)
    for metric in cmp.metric_names:
        inference = cmp.paired(metric, agent, than)
        if inference.n == 0 or not np.any(inference.d):
            continue  # a metric the two agents score the same on every case is never the one quoted
        drop = equivalence_bound(inference, alpha=alpha)
        if worst[0] is None or drop > worst[0]:
            worst = (drop, metric, _reads_in_points(cmp, metric))
    return worst


def _significantly_worse(cmp: Compared, agent: str, than: str) -> list[str]:
    """The metrics on which ``than`` is significantly better than ``agent`` (adjusted paired tests)."""
    out = []
    for metric in cmp.metric_names:
        for row in cmp.pairwise(metric).itertuples(index=False):
            if {row.agent_a, row.agent_b} == {agent, than} and bool(row.significant):
                lead = float(row.difference) if row.agent_a == than else -float(row.difference)
                if lead > 0:
                    out.append(metric)
    return out


def _worst(cmp: Compared, found: Sequence[MetricVerdict], best: set[str]) -> tuple[str | None, str, int]:
    """The agent lowest on the most metrics (not one of the best), why, and on how many metrics."""
    alone, shared = _count_leads(found, cmp.agents, "lowest")
    candidates = [a for a in cmp.agents if a not in best and alone[a] + shared[a] > 0]
    if not candidates:
        return None, "", 0
    worst = max(candidates, key=lambda a: (alone[a] + shared[a], alone[a], cmp.agents.index(a)))
    return worst, main_reason(cmp, worst, found), alone[worst] + shared[worst]


def main_reason(cmp: Compared, agent: str, found: Sequence[MetricVerdict] | None = None) -> str:
    """Why ``agent`` scores low, in words: its most frequent shortfall over its runs.

    Counted per run: failing (by error type), skipping a reference call, calling a reference
    tool with other arguments, making a call the reference does not have, making the reference
    calls in another order (the trajectory shortfalls only when a metric compares trajectories).
    The most frequent kind wins and its most frequent tool or error type is named; when none
    happened, the metric with the largest gap to the best agent is named instead.
    """
    trajectories = any("reference_trajectory" in getattr(m, "requires", ()) for m in cmp.metrics)
    kinds: Counter[str] = Counter()
    names: dict[str, Counter[str]] = {}
    runs = 0
    protocol = 0
    for case_id in cmp.case_ids:
        for run in cmp.case_view(case_id).runs.get(agent, []):
            runs += 1
            protocol += run.failure and getattr(run, "failure_class", None) == "protocol"
            found_here = _shortfalls(run) if run.failure or trajectories else {}
            kinds.update(found_here.keys())
            for kind, tools in found_here.items():
                names.setdefault(kind, Counter()).update(tools)
    if not kinds:
        return _largest_gap(cmp, agent, verdicts(cmp) if found is None else found)
    said = _say(kinds, names, runs, cmp.trials)
    return said + _protocol_note(protocol, kinds.get("fails", 0), said.startswith("its runs fail"))


def _protocol_note(protocol: int, failed: int, about_failures: bool) -> str:
    """What to add when failures are the protocol's fault, not the agent's answers: never blamed silently."""
    if not protocol:
        return ""
    if not about_failures:
        return f"; {protocol} of its runs failed on protocol faults (the server broke the A2A spec)"
    if protocol == failed:
        return " — protocol faults: the server broke the A2A spec; the agent's answers were not judged"
    return f" ({protocol} of them protocol faults: the server broke the A2A spec)"


def _say(kinds: Counter[str], names: dict[str, Counter[str]], runs: int, trials: int) -> str:
    # Ties go to the plainer story: a failure before a skipped call before wrong arguments before...
    kind, n = min(kinds.items(), key=lambda item: (-item[1], _ORDER.index(item[0])))
    share = f"in {n} of {runs} {'runs' if trials > 1 else 'cases'}"
    common = names.get(kind, Counter()).most_common()
    if not common:
        return _SAY[kind].format(share=share, name="", most="")
    name, count = min(common, key=lambda item: (-item[1], item[0]))
    if len(common) == 1:
        return _SAY_ONE[kind].format(share=share, name=name)
    return _SAY[kind].format(share=share, most=f" (most often {name}, {count})")


_ORDER = ("fails", "missing", "mismatch", "extra", "order")
_SAY_ONE = {
    "fails": "its runs fail with {name} {share}",
    "missing": "it skips the reference call {name} {share}",
    "mismatch": "it calls {name} with other arguments than the reference {share}",
    "extra": "it makes a call to {name} that the reference does not have {share}",
    "order": "it makes the reference calls in another order {share}",
}
_SAY = {
    "fails": "its runs fail {share}{most}",
    "missing": "it skips a reference call {share}{most}",
    "mismatch": "it calls a tool with other arguments than the reference {share}{most}",
    "extra": "it makes calls the reference does not have {share}{most}",
    "order": "it makes the reference calls in another order {share}{most}",
}


def _shortfalls(run: Any) -> dict[str, set[str]]:
    """The kinds of shortfall in one run, each with the tools (or error type) involved."""
    if run.failure:
        return {"fails": {run.error_type or "error"}}
    out: dict[str, set[str]] = {}
    for call in run.calls:
        if call.status != "match":
            out.setdefault(call.status, set()).add(_tool(call))
    matched = [c.reference_index for c in run.calls if c.status == "match" and c.reference_index is not None]
    if not out and matched != sorted(matched):
        out["order"] = set()
    return out


def _tool(call: Any) -> str:
    return (call.predicted if call.predicted is not None else call.reference).tool_name


def _largest_gap(cmp: Compared, agent: str, found: Sequence[MetricVerdict]) -> str:
    gaps = [(v.mean - float(cmp.summary.loc[agent, f"{v.metric}/mean"]), v) for v in found if v.best]
    gaps = [(g, v) for g, v in gaps if not math.isnan(g) and g > 0]
    if not gaps:
        return ""
    gap, v = max(gaps, key=lambda item: item[0])
    return f"its largest gap is on {v.metric} ({v.mean - gap:.3f} against {v.mean:.3f})"


def headline(cmp: Compared) -> str:
    """The verdict's first line: who is best, who is worst and why, and where the lead is significant."""
    return verdict(cmp).headline


def verdict_lines(cmp: Compared) -> list[str]:
    """The headline, then one sentence per metric; empty with fewer than two agents."""
    return verdict(cmp).lines()
