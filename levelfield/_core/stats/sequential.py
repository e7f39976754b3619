"""Sequential comparisons: stop running cases once every pair of agents is decided.

Each pair is tested with a *test by betting* (Shafer 2021, "Testing by betting", JRSS-A 184(2);
Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS-B
86(1)). Cases enter in a random order fixed in advance by ``seed``; for each case both agents have
run, ``d = a − b`` is the difference of their scores (a metric in [0, 1], so ``d`` in [−1, 1]).
Two bettors start with wealth 1; before each case one stakes a share ``λ⁺`` of its wealth on ``d``
being positive, the other ``λ⁻`` on it being negative, each share chosen from the cases before
(aGRAPA, capped at ``MAX_BET``) so it never depends on the case it bets on:

    K⁺ₜ = Π (1 + λ⁺ᵢ dᵢ),   K⁻ₜ = Π (1 − λ⁻ᵢ dᵢ),   Eₜ = (K⁺ₜ + K⁻ₜ) / 2.

If the agents do equally well on average (E[d] = 0), ``E`` is a nonnegative martingale starting at
1, so by Ville's inequality it ever reaches ``1/α`` with probability at most ``α`` — however often
it is looked at and whenever the looking stops. That is what makes stopping early valid: the
always-valid p-value ``min(1, 1 / max Eₛ)`` may be read after every case. Across ``m`` pairs the
level is ``α/m`` each (Bonferroni; valid at any stopping time).

A pair is decided when:

- **significant**: ``E ≥ m/α``; the agent with the higher mean wins;
- **equivalent** (only with ``margin > 0``): two one-sided bettors reject both "a is better by at
  least the margin" and "b is better by at least the margin" at ``α/m`` each (an intersection-union
  test, as two one-sided tests are for equivalence);
- **futile**: even if every remaining case were won outright at the largest stake, ``E`` could not
  reach ``m/α`` before the dataset ends, so the full run could not reach significance either.

**Where it stops depends on the seed and the scores, not on timing.** The looks are the cases of
the seeded order, one at a time: a case enters the analysis only once every agent's every trial of
it, and of every case before it, has finished, whatever order the runs finished in; a pair is
decided only on cases that entered. Runs of later cases still in flight when the last pair is
decided finish and are journaled, but the comparison's results (and so every count and summary
printed) hold the cases analysed only: the same seed and agents give the same stop, the same
verdict and the same numbers (``EarlyStop.report``: ``cases_analysed``, ``runs_analysed``; the
timing-dependent ``runs_made`` / ``runs_left_out`` say what was spent beyond).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = ["MAX_BET", "Bettor", "PairTest", "SequentialMonitor", "Decision", "StopRule", "analysed_cases"]

MAX_BET = 0.5
"""The largest share of wealth staked on one case: a bettor can at most multiply its wealth by 1.5
per case, and never loses more than half of it."""

Decision = Literal["undecided", "significant", "equivalent", "futile"]


@dataclass
class Bettor:
    """One bettor's wealth on ``x`` having a positive mean, with ``x`` in [−1, 1] (aGRAPA bets)."""

    wealth: float = 1.0
    peak: float = 1.0
    """The largest wealth so far (the always-valid p-value is ``1/peak``)."""
    _n: int = 0
    _sum: float = 0.0
    _sum_sq: float = 0.0

    def bet(self) -> float:
        """The share staked on the next value, from the values before it only (predictable)."""
        if self._n == 0:
            return 0.0
        mean = self._sum / self._n
        second = self._sum_sq / self._n
        if mean <= 0 or second <= 0:
            return 0.0
        return min(MAX_BET, mean / second)  # aGRAPA: maximises expected log wealth to second order

    def update(self, x: float) -> None:
        self.wealth *= 1.0 + self.bet() * x
        self.peak = max(self.peak, self.wealth)
        self._n += 1
        self._sum += x
        self._sum_sq += x * x


@dataclass
class PairTest:
    """The sequential test of one pair of agents on one metric."""

    a: str
    b: str
    margin: float = 0.0
    up: Bettor = field(default_factory=Bettor)
    """Bets that ``a`` scores higher."""
    down: Bettor = field(default_factory=Bettor)
    """Bets that ``b`` scores higher."""
    below_margin: Bettor = field(default_factory=Bettor)
    """Bets against "a is better by at least the margin" (equivalence, upper side)."""
    above_margin: Bettor = field(default_factory=Bettor)
    """Bets against "b is better by at least the margin" (equivalence, lower side)."""
    n: int = 0
    total: float = 0.0
    decision: Decision = "undecided"
    decided_at: int | None = None
    """The number of paired cases when the pair was decided."""

    def update(self, d: float) -> None:
        """One more paired case: ``d`` = a's score − b's score, in [−1, 1]."""
        self.up.update(d)
        self.down.update(-d)
        if self.margin > 0:
            # Scaled into [−1, 1]: (margin − d) lies in [margin − 1, margin + 1].
            self.below_margin.update((self.margin - d) / (1 + self.margin))
            self.above_margin.update((d + self.margin) / (1 + self.margin))
        self.n += 1
        self.total += d

    @property
    def evidence(self) -> float:
        """The largest ``(K⁺ + K⁻)/2`` reached so far."""
        return max(1.0, (self.up.peak + self.down.peak) / 2) if self.n else 1.0

    @property
    def p_value(self) -> float:
        """The always-valid p-value: valid whenever it is read, for any stopping rule."""
        return min(1.0, 1.0 / self.evidence)

    @property
    def mean_difference(self) -> float:
        return self.total / self.n if self.n else math.nan

    def decide(self, threshold: float, remaining: int) -> Decision:
        """Decide the pair at evidence ``threshold`` (= m/α) with ``remaining`` cases still to come."""
        if self.decision != "undecided":
            return self.decision
        now = (self.up.wealth + self.down.wealth) / 2
        if self.evidence >= threshold:
            self.decision = "significant"
        elif self.margin > 0 and min(self.below_margin.peak, self.above_margin.peak) >= threshold:
            self.decision = "equivalent"
        elif self._best_reachable(remaining) < threshold and now < threshold:
            self.decision = "futile"
        if self.decision != "undecided":
            self.decided_at = self.n
        return self.decision

    def _best_reachable(self, remaining: int) -> float:
        # Every remaining case won outright at the largest stake by one bettor, the other's wealth kept.
        grow = (1 + MAX_BET) ** remaining
        return max(self.up.wealth * grow + self.down.wealth, self.up.wealth + self.down.wealth * grow) / 2

    @property
    def winner(self) -> str | None:
        if self.decision != "significant":
            return None
        return self.a if self.total > 0 else self.b


class SequentialMonitor:
    """Every pair of agents watched as paired cases arrive in a fixed order; says when to stop.

    ``order`` is the case ids in the order they are analysed (the random order runs start in).
    ``add(agent, case_id, value)`` records an agent's value on a case (its trials already reduced,
    a failed run already scored by the failed-run rule; NaN when the metric does not apply); a case
    enters the analysis once every agent has a value for it and every case before it in ``order``
    has entered (so the order never depends on which runs finish first).
    """

    def __init__(self, agents: Sequence[str], order: Sequence[str], *, alpha: float = 0.05, margin: float = 0.0,
                 pairs: Sequence[tuple[str, str]] | None = None) -> None:
        self.agents = list(agents)
        self.order = list(order)
        self.alpha = alpha
        self.pairs = [PairTest(a, b, margin) for a, b in (pairs if pairs is not None else _all_pairs(self.agents))]
        self.threshold = len(self.pairs) / alpha
        self._values: dict[str, dict[str, float]] = {}
        self._next = 0
        self.analysed = 0
        """Cases (a prefix of ``order``) that have entered the analysis."""
        self.decided_at: int | None = None
        """Cases analysed when the last pair was decided (runs in flight then still finish)."""

    def add(self, agent: str, case_id: str, value: float) -> None:
        self._values.setdefault(case_id, {})[agent] = value
        self._advance()

    def add_many(self, values: Mapping[str, Mapping[str, float]]) -> None:
        """``{case_id: {agent: value}}`` at once (runs of a resumed journal)."""
        for case_id, by_agent in values.items():
            self._values.setdefault(case_id, {}).update(by_agent)
        self._advance()

    def _advance(self) -> None:
        while self._next < len(self.order):
            got = self._values.get(self.order[self._next], {})
            if any(a not in got for a in self.agents):
                return
            for pair in self.pairs:
                x, y = got[pair.a], got[pair.b]
                if not (math.isnan(x) or math.isnan(y)) and pair.decision == "undecided":
                    pair.update(float(np.clip(x, 0, 1) - np.clip(y, 0, 1)))
            self._next += 1
            self.analysed = self._next
            remaining = len(self.order) - self._next
            for pair in self.pairs:
                pair.decide(self.threshold, remaining)
            if self.decided_at is None and self.done:
                self.decided_at = self.analysed

    @property
    def done(self) -> bool:
        """Every pair is decided: running more cases cannot change the verdict."""
        return all(p.decision != "undecided" for p in self.pairs)

    def summary(self) -> str:
        """In words: where it stopped and what each pair's verdict is."""
        lines = []
        for p in self.pairs:
            if p.decision == "significant":
                loser = p.b if p.winner == p.a else p.a
                lines.append(f"{p.winner} beats {loser} (always-valid p = {p.p_value:.3g} < {self.alpha / len(self.pairs):.3g})")
            elif p.decision == "equivalent":
                lines.append(f"{p.a} and {p.b} are within ±{p.margin:g} of each other")
            elif p.decision == "futile":
                lines.append(f"{p.a} vs {p.b}: no significant difference is reachable in the cases left")
            else:
                lines.append(f"{p.a} vs {p.b}: undecided (always-valid p = {p.p_value:.3g})")
        return "; ".join(lines)


def _all_pairs(agents: Sequence[str]) -> list[tuple[str, str]]:
    return [(a, b) for i, a in enumerate(agents) for b in agents[i + 1:]]


@dataclass(frozen=True)
class StopRule:
    """``compare(stop_early=...)``: which metric decides, in which order cases run, at which level."""

    metric: str
    """The metric whose paired differences are tested (its scores must lie in [0, 1])."""
    seed: int = 0
    """Fixes the random order the cases run in."""
    alpha: float = 0.05
    margin: float = 0.0
    """With a margin, a pair within ±margin of each other is decided "equivalent" (and stops)."""
    failed_runs: str = "zero"
    reducer: str = "mean"
    pairs: tuple[tuple[str, str], ...] | None = None
    """The pairs of interest (default: every pair of agents)."""

    def order(self, case_ids: Sequence[str]) -> list[str]:
        """The case ids in the random order the runs start in (the same for the same seed)."""
        rng = np.random.default_rng(self.seed)
        return [case_ids[i] for i in rng.permutation(len(case_ids))]

    def to_dict(self) -> dict[str, object]:
        return {"metric": self.metric, "seed": self.seed, "alpha": self.alpha, "margin": self.margin}


def analysed_cases(stopped_early: Mapping[str, object], case_ids: Sequence[str]) -> list[str]:
    """The case ids a sequential comparison's statistics are over, from what its run record keeps
    (``cmp.stopped_early``) and the record's non-scenario cases in dataset order: the first
    ``cases_analysed`` of the seeded order, or every case when it did not stop."""
    if not stopped_early.get("stopped"):
        return list(case_ids)
    rule = stopped_early.get("rule") or {}
    assert isinstance(rule, Mapping)
    order = StopRule(str(rule.get("metric", "")), seed=int(rule.get("seed", 0))).order(list(case_ids))
    return order[: int(stopped_early["cases_analysed"])]  # type: ignore[call-overload]
