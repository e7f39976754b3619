"""The local executor: agents run in this process with the async runner (the default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._core.data.config import RunConfig
from .._core.data.dataset import EvalDataset
from .._core.data.protocol import AgentRunnable
from .._core.data.types import AgentRun
from .._core.run.runner import OnRun, PlayScenario, run_agents

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """Runs every agent in this process, under the run options (concurrency, timeouts, retries, trials)."""

    name = "local"

    def check(self, agents: Sequence[AgentRunnable]) -> None:
        """Nothing to check: the agents never leave this process."""

    async def run_agents(
        self,
        dataset: EvalDataset,
        agents: Sequence[AgentRunnable],
        config: RunConfig,
        *,
        on_run: OnRun | None = None,
        done: Mapping[tuple[str, str, int], AgentRun] | None = None,
        run_scenario: PlayScenario | None = None,
    ) -> dict[str, list[AgentRun]]:
        """Every agent on every case and trial; the runs finished by now (``done``) are not run again."""
        return await run_agents(dataset, agents, config, on_run=on_run, done=done, run_scenario=run_scenario)

    def __repr__(self) -> str:
        return "LocalExecutor()"
