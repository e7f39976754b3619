"""The worker side of a Ray run: the actor that builds each agent once and runs batches with the
local runner, and the agents and runs pickled for the trip to it and back."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..._core.data.config import RunConfig
from ..._core.data.dataset import EvalDataset
from ..._core.data.protocol import AgentRequest, AgentRunnable
from ..._core.data.types import AgentOutput, AgentRun
from ..._core.errors import AdapterError, ConfigError
from ..._core.run import endpoints
from ..._core.run.runner import run_agents as run_locally
from ...adapters.auto import as_agent
from ...adapters.spec import SpecAgent, load_agent_spec

if TYPE_CHECKING:  # a worker needs no plan (its NumPy is the driver's)
    from .plan import RunKey

__all__: list[str] = []  # private helpers of the Ray executor: _Worker, _pickled, _loads


def _pickled(agent: AgentRunnable) -> bytes:
    """The agent as cloudpickle bytes (a spec agent as its spec), or a ConfigError saying what to do."""
    from ray import cloudpickle

    try:
        return cloudpickle.dumps(agent)
    except Exception as exc:  # noqa: BLE001 - pickling raises TypeError, PicklingError, AttributeError...
        raise ConfigError(
            f"executor='ray': agent {agent.name!r} ({type(agent).__name__}) cannot be sent to Ray workers "
            f"({type(exc).__name__}: {exc}). Give it as a spec string, which each worker builds itself: "
            "'package.module:attr' (an agent, or a make_*/build_*/create_* factory), an http(s):// A2A URL, "
            "or an Agent Engine resource name"
        ) from None


def _dumps(runs: list[AgentRun]) -> bytes:
    """The runs for the trip back; a run whose framework objects (``raw``) do not pickle goes without them."""
    from ray import cloudpickle

    try:
        return cloudpickle.dumps(runs)
    except Exception:  # noqa: BLE001
        pass
    sendable = []
    for run in runs:
        try:
            cloudpickle.dumps(run)
        except Exception:  # noqa: BLE001
            def bare(o: Any) -> Any:
                return None if o is None else o.model_copy(update={"raw": None})

            run = run.model_copy(update={
                "output": bare(run.output), "partial_output": bare(run.partial_output),
                "turns": [bare(t) for t in run.turns],
            })
        sendable.append(run)
    return cloudpickle.dumps(sendable)


def _loads(blob: bytes) -> list[AgentRun]:
    from ray import cloudpickle

    return cloudpickle.loads(blob)


class _Unbuildable:
    """Stands for an agent that could not be built on a worker: each of its runs fails saying why."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self._message = message

    async def arun(self, request: AgentRequest) -> AgentOutput:
        raise AdapterError(self._message, error_type="worker_setup")


class _Worker:
    """A Ray actor: the dataset and the agents (each built once here), running batches with the local runner."""

    def __init__(self, config: RunConfig) -> None:
        self._config = config
        self._cases: dict[str, Any] = {}
        self._source: str | None = None
        self._agents: list[Any] | None = None
        self._loading: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None
        self._limits = endpoints.Limits.of(config)  # the endpoints' limits of this worker, for all its batches

    async def ping(self) -> bool:
        """Answer (once the worker is up after a restart): whether its dataset and agents are loaded."""
        return self._agents is not None

    async def _load(self, shared: list[Any]) -> list[Any]:
        """The dataset and agents, fetched from the object store (awaited) and built on the first batch."""
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            if self._agents is None:
                from ray import cloudpickle

                dataset, blobs = await shared[0]
                self._cases = {case.case_id: case for case in dataset}
                self._source = dataset.source
                agents: list[Any] = []
                for name, blob in blobs:
                    try:
                        agent = cloudpickle.loads(blob)
                        if isinstance(agent, SpecAgent):
                            # Built before any run starts, so the import counts in no run's time.
                            agent = as_agent(load_agent_spec(agent.spec), name=agent.name)
                        agents.append(agent)
                    except Exception as exc:  # noqa: BLE001 - e.g. its module is not installed on this worker
                        agents.append(_Unbuildable(name, (
                            f"agent {name!r} could not be built on a Ray worker ({type(exc).__name__}: {exc}); give it "
                            "as a spec string and make its module importable there (RayExecutor(runtime_env=...))")))
                self._agents = agents
        return self._agents

    async def run(self, batch: list[RunKey], shared: list[Any]) -> bytes:
        """Run one batch of (agent, case, trial) and return its runs, pickled."""
        every_agent = await self._load(shared)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._config.concurrency)  # shared by the batches in flight here
        ids = list(dict.fromkeys(key[1] for key in batch))
        cases = EvalDataset([self._cases[i] for i in ids], source=self._source or "dataset")  # the default name when the dataset had none
        names = {key[0] for key in batch}
        agents = [a for a in every_agent if a.name in names]
        with endpoints.using(self._limits):
            runs = await run_locally(cases, agents, self._config, only=batch, slots=self._slots)
        return _dumps([run for agent_runs in runs.values() for run in agent_runs])
