"""A spending limit on runs (``RunConfig.max_cost_usd``): before each run starts, the runner asks
whether what it will likely cost still fits; once one does not, no further run starts.

What a run will cost is guessed from what that agent's finished runs cost on average (every
agent's, before that agent has finished one; nothing before any run has). Runs in flight count
at their agent's average too, so ``concurrency`` slots cannot all start on the last dollar. A
resumed journal's runs count as spent: the limit is the total of the record.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..data.prices import PriceTable, run_spend
from ..data.types import AgentRun

__all__ = ["Budget"]


class Budget:
    """The dollars runs may spend, what they spent, and whether the next run of an agent may start."""

    def __init__(self, limit: float, prices: PriceTable, done: Iterable[AgentRun] = ()) -> None:
        self.limit = float(limit)
        self.prices = prices
        self.spent = 0.0
        self.stopped = False
        """Set once a run was refused: no run starts after that."""
        self.unpriced: dict[str, str] = {}
        """Agent -> why some of its runs' cost is unknown (they count as nothing spent)."""
        self._totals: dict[str, tuple[float, int]] = {}
        self._in_flight: dict[str, int] = {}
        for run in done:
            self._add(run)

    def _add(self, run: AgentRun) -> None:
        cost = run_spend(run, self.prices)
        if not cost.reported:
            return  # a run that reported no usage (failed before its first model call)
        if not cost.known:
            why = f"no price for {', '.join(map(repr, cost.unpriced))}" if cost.unpriced else "tokens without a model name"
            self.unpriced.setdefault(run.agent_name, why)
            return
        self.spent += cost.usd
        total, count = self._totals.get(run.agent_name, (0.0, 0))
        self._totals[run.agent_name] = (total + cost.usd, count + 1)

    def estimate(self, agent: str) -> float:
        """What the next run of ``agent`` will likely cost: its finished runs' mean, else all agents'."""
        total, count = self._totals.get(agent, (0.0, 0))
        if count:
            return total / count
        every = sum(t for t, _ in self._totals.values()), sum(n for _, n in self._totals.values())
        return every[0] / every[1] if every[1] else 0.0

    def admit(self, agent: str) -> bool:
        """Whether a run of ``agent`` may start now (it is then counted in flight until :meth:`settle`)."""
        if self.stopped:
            return False
        in_flight = sum(self.estimate(a) * n for a, n in self._in_flight.items())
        if self.spent >= self.limit or self.spent + in_flight + self.estimate(agent) > self.limit:
            self.stopped = True
            return False
        self._in_flight[agent] = self._in_flight.get(agent, 0) + 1
        return True

    def settle(self, run: AgentRun) -> None:
        """A run admitted earlier finished: what it cost is spent."""
        self._in_flight[run.agent_name] = max(self._in_flight.get(run.agent_name, 0) - 1, 0)
        self._add(run)
