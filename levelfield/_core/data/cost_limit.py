"""Spending limits in dollars: before each paid call starts (an agent's run, a judge's verdict),
ask whether what it will likely cost still fits in what is left.

``RunConfig.max_cost_usd`` limits the agents' runs (:class:`RunBudget`: the runner asks before
starting each one; an agent whose next run would not fit stops, the others go on) and
``RunConfig.judge_max_cost_usd`` the judges' calls (:class:`CostLimit`: the scorer asks before each
judged row). Both are **estimate-based stops, not hard caps**: a call's cost is known only once it
has ended, so what one will cost is guessed from the calls of the same kind before it, and a call
that costs more than its guess (or the first call of a kind, guessed at nothing) can take the
spend past the limit. Calls in flight count at their guess, so many concurrent slots cannot all
start on the last dollar.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .dataset import EvalCase
from .prices import Cost, PriceTable, run_spend
from .types import AgentRun

__all__ = ["CostLimit", "RunBudget", "AgentSpend", "BudgetReport", "input_size"]


class CostLimit:
    """The dollars calls may spend, what they spent, and whether the next call of a kind may start.

    ``shared=True``: a kind with no finished call yet is guessed at every kind's mean, and once the
    limit is reached nothing starts. ``shared=False`` (judged metrics): a kind is guessed from its
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


def input_size(case: EvalCase) -> int:
    """How long a case's input is, in characters (every turn's prompt and the history; at least 1):
    what a run's cost is estimated against."""
    size = len(case.prompt or "") + sum(len(m.content) for m in case.history)
    size += sum(len(t.prompt) for t in case.turns[1:])  # the first turn is ``prompt``
    return max(size, 1)


_FIT_AFTER = 3
"""Priced runs an agent needs before its cost is fitted against input length (before: their mean)."""


class _Agent:
    """One agent's side of a :class:`RunBudget`: its finished runs' sizes and costs, its runs in flight."""

    __slots__ = ("sizes", "costs", "finished", "in_flight", "stopped_at", "left_at_stop", "unpriced")

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.costs: list[float] = []
        self.finished = 0
        self.in_flight = 0
        self.stopped_at: float | None = None
        """What the run it was stopped at was estimated to cost (None: not stopped)."""
        self.left_at_stop: float | None = None
        """What was left then (in flight runs' estimates taken off)."""
        self.unpriced: str | None = None

    @property
    def spent(self) -> float:
        return math.fsum(self.costs)

    def estimate(self, size: int) -> float:
        """What a run on a case of ``size`` characters will likely cost: the mean of the agent's priced
        runs, or, once it has ``_FIT_AFTER`` of them, the least-squares line of cost on input size
        (slope at least 0) where that line is above the mean. A longer input costs more when the
        agent's own runs show it; a shorter one is never guessed below the mean (the instructions,
        tools and answer cost the same whatever the prompt). Nothing priced yet: 0."""
        n = len(self.costs)
        if not n:
            return 0.0
        mean_cost = self.spent / n
        if n < _FIT_AFTER:
            return mean_cost
        mean_size = sum(self.sizes) / n
        spread = sum((s - mean_size) ** 2 for s in self.sizes)
        if spread <= 0:
            return mean_cost
        slope = sum((s - mean_size) * (c - mean_cost) for s, c in zip(self.sizes, self.costs)) / spread
        return max(mean_cost, mean_cost + max(slope, 0.0) * (size - mean_size))


class RunBudget:
    """``RunConfig.max_cost_usd``: the dollars the agents' runs may spend together, and which may start.

    Each agent's next run is estimated from that agent's own finished runs (see
    :meth:`_Agent.estimate`: their mean cost, scaled by the case's input length once the runs show
    that length costs). A run starts when its estimate fits in what is left (the limit, less what
    was spent and the estimates of the runs in flight); the first run of an agent whose next would
    not fit stops that agent (its remaining runs are not started) while the others go on. An
    agent's first run is guessed at nothing (nothing is known of it before it ends): it starts
    whenever money is left, alone until it has finished.

    The guarantee is that of an estimate: no run starts that is expected to take the spend past the
    limit; a run that costs more than expected (or an agent's first run) can. Runs that report no
    usage, or usage without a known price, count as nothing (a warning names them).
    """

    def __init__(self, limit: float, prices: PriceTable, agents: Sequence[str], done: Iterable[tuple[AgentRun, int]] = ()) -> None:
        self.limit = float(limit)
        self.prices = prices
        self._agents = {name: _Agent() for name in agents}
        self._reserved = 0.0
        self._settled: asyncio.Event | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        for run, size in done:  # a resumed journal's runs: the limit is the record's total
            self._count(self._agent(run.agent_name), size, run_spend(run, prices))

    def _agent(self, name: str) -> _Agent:
        return self._agents.setdefault(name, _Agent())

    @property
    def spent(self) -> float:
        """Dollars the runs spent so far (a resumed journal's included)."""
        return math.fsum(a.spent for a in self._agents.values())

    @property
    def left(self) -> float:
        """Dollars not spent yet and not held by the runs in flight (negative once passed)."""
        return self.limit - self.spent - self._reserved

    def stopped(self, agent: str) -> bool:
        """Whether ``agent``'s runs no longer start."""
        return self._agent(agent).stopped_at is not None

    def estimate(self, agent: str, size: int) -> float:
        """What ``agent``'s next run, on a case of ``size`` characters, will likely cost."""
        return self._agent(agent).estimate(size)

    async def acquire(self, agent: str, size: int) -> float | None:
        """Wait until ``agent``'s first run has finished (if one is in flight: until then nothing says
        what the next will cost), then :meth:`admit`. An agent's runs are admitted in the order they
        asked (a lock per agent, first come first served), so the runs it stops at are its last ones."""
        state = self._agent(agent)
        lock = self._locks.get(agent)
        if lock is None:
            lock = self._locks[agent] = asyncio.Lock()
        async with lock:
            while not state.finished and state.in_flight and state.stopped_at is None:
                if self._settled is None:
                    self._settled = asyncio.Event()
                await self._settled.wait()
            return self.admit(agent, size)

    def admit(self, agent: str, size: int) -> float | None:
        """The estimate held for ``agent``'s run on a case of ``size`` characters, which may start now
        (it is in flight until :meth:`settle`), or None: it would not fit, and the agent is stopped."""
        state = self._agent(agent)
        if state.stopped_at is not None:
            return None
        guess = state.estimate(size)
        left = self.left
        if left <= 0 or guess > left:
            state.stopped_at, state.left_at_stop = guess, left
            return None
        state.in_flight += 1
        self._reserved += guess
        return guess

    def settle(self, agent: str, size: int, held: float, run: AgentRun) -> None:
        """A run admitted earlier (holding ``held`` dollars) finished: what it cost is spent."""
        state = self._agent(agent)
        state.in_flight = max(state.in_flight - 1, 0)
        self._reserved = max(self._reserved - held, 0.0)
        self._count(state, size, run_spend(run, self.prices))
        if self._settled is not None:
            settled, self._settled = self._settled, None
            settled.set()

    @staticmethod
    def _count(state: _Agent, size: int, cost: Cost) -> None:
        state.finished += 1
        if not cost.reported:
            return
        if not cost.known:
            why = f"no price for {', '.join(map(repr, cost.unpriced))}" if cost.unpriced else "tokens without a model name"
            state.unpriced = state.unpriced or why
            return
        state.sizes.append(size)
        state.costs.append(cost.usd)

    @property
    def unpriced(self) -> dict[str, str]:
        """Agent -> why some of its runs' cost is unknown (they count as nothing spent)."""
        return {name: a.unpriced for name, a in self._agents.items() if a.unpriced}

    def report(self, not_started: Mapping[str, int]) -> BudgetReport:
        """What each agent spent and was kept from starting (``not_started``: agent -> runs)."""
        agents = {}
        for name, a in self._agents.items():
            agents[name] = AgentSpend(
                spent_usd=a.spent, runs=a.finished, per_run_usd=a.spent / len(a.costs) if a.costs else math.nan,
                not_started=int(not_started.get(name, 0)),
                next_run_usd=a.stopped_at if not_started.get(name) else None,
                left_then_usd=a.left_at_stop if not_started.get(name) else None, unpriced=a.unpriced)
        return BudgetReport(limit_usd=self.limit, agents=agents)


@dataclass(frozen=True)
class AgentSpend:
    """What one agent's runs spent under ``max_cost_usd``, and how many the limit kept from starting."""

    spent_usd: float
    """Dollars its runs cost (a resumed journal's included; runs of unknown cost count as nothing)."""
    runs: int
    """Its runs made (a resumed journal's included)."""
    per_run_usd: float
    """The mean cost of its priced runs (NaN when none is priced)."""
    not_started: int
    """Its planned runs the limit kept from starting (``resume=True`` with a larger limit runs them)."""
    next_run_usd: float | None = None
    """What its first run not started was expected to cost (None when every run started)."""
    left_then_usd: float | None = None
    """What was left of the limit when that run was refused (the runs then in flight held at their estimates)."""
    unpriced: str | None = None
    """Why some of its runs' cost is unknown (None when every run reporting usage was priced)."""

    def to_dict(self) -> dict[str, Any]:
        return {"spent_usd": self.spent_usd, "runs": self.runs, "per_run_usd": self.per_run_usd,
                "not_started": self.not_started, "next_run_usd": self.next_run_usd, "left_then_usd": self.left_then_usd,
                "unpriced": self.unpriced}


@dataclass(frozen=True)
class BudgetReport:
    """``result.budget`` / ``cmp.budget``: the limit, what was spent and is left, per agent."""

    limit_usd: float
    """``max_cost_usd``."""
    agents: dict[str, AgentSpend] = field(default_factory=dict)
    """Agent -> what it spent and was kept from starting."""

    @property
    def spent_usd(self) -> float:
        """Dollars every agent's runs cost together."""
        return math.fsum(a.spent_usd for a in self.agents.values())

    @property
    def left_usd(self) -> float:
        """Dollars of the limit not spent (negative when the spend passed it)."""
        return self.limit_usd - self.spent_usd

    @property
    def not_started(self) -> int:
        """Planned runs the limit kept from starting, every agent's."""
        return sum(a.not_started for a in self.agents.values())

    @property
    def reached(self) -> bool:
        """Whether the limit kept any run from starting."""
        return self.not_started > 0

    def headline(self) -> str:
        """One line: the limit, spent and left, and the runs not started."""
        left = (f"${self.left_usd:.4g} left" if self.left_usd >= 0
                else f"${-self.left_usd:.4g} over (a run cost more than expected)")
        started = f"{self.not_started} run(s) not started" if self.not_started else "every run started"
        reached = " reached" if self.not_started else ""
        return f"max_cost_usd={self.limit_usd:g}{reached}: ${self.spent_usd:.4g} spent, {left}; {started}"

    def agent_lines(self) -> list[str]:
        """One line per agent: spent, runs, cost per run, and whether (and why) it stopped."""
        lines = []
        for name, a in self.agents.items():
            per_run = "" if math.isnan(a.per_run_usd) else f", ${a.per_run_usd:.4g} a run"
            if a.not_started:
                then = "" if a.left_then_usd is None else f" (${max(a.left_then_usd, 0.0):.4g})"
                why = (f": its next run was expected to cost ${a.next_run_usd:.4g}, more than was left then{then}"
                       if a.next_run_usd else ": nothing was left")
                state = f"stopped, {a.not_started} run(s) not started{why}"
            else:
                state = "all its runs started"
            unknown = f" (cost of some runs unknown: {a.unpriced})" if a.unpriced else ""
            lines.append(f"{name}: ${a.spent_usd:.4g} spent on {a.runs} run(s){per_run}; {state}{unknown}")
        return lines

    def __str__(self) -> str:
        return "\n".join([self.headline(), *(f"  {line}" for line in self.agent_lines())])

    def to_dict(self) -> dict[str, Any]:
        """As JSON (the run record's header keeps it)."""
        return {"limit_usd": self.limit_usd, "spent_usd": self.spent_usd, "left_usd": self.left_usd,
                "agents": {name: a.to_dict() for name, a in self.agents.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BudgetReport:
        agents = {}
        for name, a in (data.get("agents") or {}).items():
            per_run = a.get("per_run_usd")
            agents[name] = AgentSpend(
                spent_usd=float(a.get("spent_usd") or 0.0), runs=int(a.get("runs") or 0),
                per_run_usd=math.nan if per_run is None else float(per_run), not_started=int(a.get("not_started") or 0),
                next_run_usd=a.get("next_run_usd"), left_then_usd=a.get("left_then_usd"), unpriced=a.get("unpriced"))
        return cls(limit_usd=float(data["limit_usd"]), agents=agents)
