"""A spending limit in dollars: before each paid call starts (an agent's run, a judge's verdict),
ask whether what it will likely cost still fits; once one does not, the limit is reached.

``RunConfig.max_cost_usd`` limits the agents' runs (the runner asks before starting each one) and
``RunConfig.judge_max_cost_usd`` the judges' calls (the scorer asks before each judged row). What
a call will cost is guessed from what earlier calls of the same kind (the same agent, the same
metric) cost on average; calls in flight count at that average too, so many concurrent slots
cannot all start on the last dollar.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from .prices import Cost, PriceTable, run_spend
from .types import AgentRun

__all__ = ["CostLimit"]


class CostLimit:
    """The dollars calls may spend, what they spent, and whether the next call of a kind may start.

    ``shared=True`` (agents): a kind with no finished call yet is guessed at every kind's mean, and
    once the limit is reached nothing starts. ``shared=False`` (metrics): a kind is guessed from its
    own calls only, and a kind that never spent anything (a metric that calls no model) goes on.
    """

    def __init__(self, limit: float, prices: PriceTable, *, shared: bool = True) -> None:
        self.limit = float(limit)
        self.prices = prices
        self.shared = shared
        self.spent = 0.0
        self.stopped = False
        """Set once a call was refused."""
        self.refused = 0
        """Calls refused so far."""
        self.unpriced: dict[str, str] = {}
        """Kind -> why some of its calls' cost is unknown (they count as nothing spent)."""
        self._totals: dict[str, tuple[float, int]] = {}
        self._in_flight: dict[str, int] = {}
        self._settled: asyncio.Event | None = None
        self._finished: dict[str, int] = {}

    @classmethod
    def for_runs(cls, limit: float, prices: PriceTable, done: Iterable[AgentRun] = ()) -> "CostLimit":
        """The agents' budget; ``done`` (a resumed journal's runs) counts as spent: the limit is the record's total."""
        budget = cls(limit, prices, shared=True)
        for run in done:
            budget.spend(run.agent_name, run_spend(run, prices))
            budget._finished[run.agent_name] = budget._finished.get(run.agent_name, 0) + 1
        return budget

    def spend(self, kind: str, cost: Cost) -> None:
        """Count what a finished call of ``kind`` cost (nothing when it reported no usage)."""
        if not cost.reported:
            return
        if not cost.known:
            why = f"no price for {', '.join(map(repr, cost.unpriced))}" if cost.unpriced else "tokens without a model name"
            self.unpriced.setdefault(kind, why)
            return
        self.spent += cost.usd
        total, count = self._totals.get(kind, (0.0, 0))
        self._totals[kind] = (total + cost.usd, count + 1)

    def spent_before(self, kind: str, usd: float, calls: int) -> None:
        """Count ``calls`` finished calls of ``kind`` that cost ``usd`` in all, made before (a restart's)."""
        if calls <= 0:
            return
        self.spent += usd
        total, count = self._totals.get(kind, (0.0, 0))
        self._totals[kind] = (total + usd, count + calls)
        self._finished[kind] = self._finished.get(kind, 0) + calls

    def spent_by_kind(self) -> dict[str, tuple[float, int]]:
        """Kind -> (dollars spent, priced calls) so far."""
        return dict(self._totals)

    def estimate(self, kind: str) -> float:
        """What the next call of ``kind`` will likely cost."""
        total, count = self._totals.get(kind, (0.0, 0))
        if count:
            return total / count
        if not self.shared:
            return 0.0
        every = sum(t for t, _ in self._totals.values()), sum(n for _, n in self._totals.values())
        return every[0] / every[1] if every[1] else 0.0

    def _unmeasured(self, kind: str) -> bool:
        """Nothing is known yet of what a call of ``kind`` costs, and one is already in flight."""
        if self.shared:
            return not self._finished and sum(self._in_flight.values()) > 0
        return not self._finished.get(kind) and self._in_flight.get(kind, 0) > 0

    async def acquire(self, kind: str) -> bool:
        """:meth:`admit`, after waiting for the first call of a kind to finish: until one has, nothing
        says what the next will cost, and concurrent calls would all start on a guess of zero."""
        while self._unmeasured(kind) and not self.stopped:
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()
        return self.admit(kind)

    def admit(self, kind: str) -> bool:
        """Whether a call of ``kind`` may start now (it is then in flight until :meth:`settle`)."""
        paying = self.shared or self._totals.get(kind, (0.0, 0))[1] > 0
        if self.stopped and paying:
            self.refused += 1
            return False
        in_flight = sum(self.estimate(k) * n for k, n in self._in_flight.items())
        if paying and (self.spent >= self.limit or self.spent + in_flight + self.estimate(kind) > self.limit):
            self.stopped = True
            self.refused += 1
            return False
        self._in_flight[kind] = self._in_flight.get(kind, 0) + 1
        return True

    def settle(self, kind: str, cost: Cost) -> None:
        """A call admitted earlier finished: what it cost is spent."""
        self._in_flight[kind] = max(self._in_flight.get(kind, 0) - 1, 0)
        self._finished[kind] = self._finished.get(kind, 0) + 1
        self.spend(kind, cost)
        if self._settled is not None:
            settled, self._settled = self._settled, None
            settled.set()
