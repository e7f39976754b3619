"""The runs of a Ray dispatch: numbered in the runner's order, which are recorded, cut into
batches as they are handed out, and counted on the driver's progress bar."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..._core.data.protocol import AgentRunnable
from ..._core.data.types import AgentRun

__all__ = ["RunKey"]  # and, for the executor, _Plan, _Queue and _Progress

RunKey = tuple[str, str, int]
"""(agent, case id, trial): one run."""


class _Plan:
    """The runs to make, by number in :func:`interleaved_plan`'s order (case, trial, agent), and which
    are recorded: a byte a run, not a key, so a million runs streaming back are not a million tuples."""

    def __init__(self, agents: Sequence[str], case_ids: Sequence[str], trials: int, done: Mapping[RunKey, Any]) -> None:
        self.agents, self.case_ids, self.trials = list(agents), list(case_ids), trials
        self._agent = {name: i for i, name in enumerate(self.agents)}
        self._case = {case_id: i for i, case_id in enumerate(self.case_ids)}
        self.recorded = np.zeros(len(self.case_ids) * trials * len(self.agents), dtype=bool)
        for key in done:
            if key in self:
                self.recorded[self.index(key)] = True
        self.todo = np.flatnonzero(~self.recorded)
        """The runs to make now (numbers), in plan order."""
        self.total = len(self.todo)
        self.count = 0
        """Runs recorded by this dispatch."""

    def key(self, i: int) -> RunKey:
        per_case = self.trials * len(self.agents)
        return self.agents[i % len(self.agents)], self.case_ids[i // per_case], (i % per_case) // len(self.agents)

    def index(self, key: RunKey) -> int:
        return (self._case[key[1]] * self.trials + key[2]) * len(self.agents) + self._agent[key[0]]

    def __contains__(self, key: RunKey) -> bool:
        return key[0] in self._agent and key[1] in self._case and 0 <= key[2] < self.trials

    def done(self, key: RunKey) -> bool:
        return bool(self.recorded[self.index(key)])

    def mark(self, key: RunKey) -> bool:
        """Record ``key``; False when it already was (a batch run again elsewhere)."""
        i = self.index(key)
        if self.recorded[i]:
            return False
        self.recorded[i] = True
        self.count += 1
        return True

    @property
    def finished(self) -> bool:
        return self.count >= self.total

    def left(self) -> Iterator[RunKey]:
        """The runs to make that are not recorded yet."""
        for i in self.todo:
            if not self.recorded[i]:
                yield self.key(int(i))


class _Queue:
    """The batches not handed out yet: runs handed back first, then the plan's next ``size`` runs,
    cut as they are taken (the whole plan is never a list of batches)."""

    def __init__(self, plan: _Plan, size: int) -> None:
        self.plan, self.size = plan, size
        self.back: deque[list[RunKey]] = deque()
        self.next = 0

    def __bool__(self) -> bool:
        return bool(self.back) or self.next < self.plan.total

    def popleft(self) -> list[RunKey]:
        if self.back:
            return self.back.popleft()
        start, self.next = self.next, min(self.next + self.size, self.plan.total)
        return [self.plan.key(int(i)) for i in self.plan.todo[start : self.next]]

    def appendleft(self, keys: list[RunKey]) -> None:
        self.back.appendleft(keys)


class _Progress:
    """The driver's progress bar: runs finished across the cluster, with runs/s and failures."""

    def __init__(self, total: int, enabled: bool, agents: Sequence[AgentRunnable], workers: int) -> None:
        self.failures = 0
        self.bar = None
        if enabled:
            from tqdm import tqdm

            what = agents[0].name if len(agents) == 1 else f"{len(agents)} agents"
            self.bar = tqdm(total=total, desc=f"{what} on Ray ({workers} workers)", unit="run", leave=False,
                            dynamic_ncols=True)

    def update(self, run: AgentRun) -> None:
        if run.failure:
            self.failures += 1
            if self.bar is not None:
                self.bar.set_postfix(failures=self.failures, refresh=False)
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
