"""The Ray executor: agent runs fan out to a Ray cluster; journal, scoring and results stay here.

``RayExecutor`` starts one Ray actor per worker. Each actor receives the dataset (once, through
Ray's object store) and the agents, builds every agent once, and runs small batches of
(agent, case, trial) with the local async runner, so timeouts, retries and trials behave as they
do locally. Finished batches stream back to the driver as they complete; each run is handed to
the same ``on_run`` callback as locally (scored, journaled to ``out/runs.jsonl``), so ``resume``
works as it does on one machine.

Agents travel by cloudpickle. An agent given as a spec string (``"pkg.mod:attr"``, an A2A URL,
an Agent Engine resource name) travels as that string and is built on the worker, which suits
agents that do not pickle (a compiled graph holding locks, a client holding a connection). An
agent that can be neither is a :class:`ConfigError` before any run starts.

A worker that dies (``os._exit``, a segfault, a lost node) is restarted by Ray, which runs the
batch again (``max_retries`` times); a batch that still fails is split and each of its runs tried
on its own, so one crashing run costs only itself: it is recorded as a failed run
(``error_type "worker_died"``). Every run is recorded once, keyed by (agent, case, trial).

``ray`` is imported only here, when a Ray run starts: ``pip install 'levelfield[ray]'``.
"""

from __future__ import annotations

import asyncio
import json
import math
import warnings
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..adapters.auto import as_agent
from ..adapters.spec import SpecAgent, load_agent_spec
from ..core import errors
from ..core.results.result import ColumnarResult
from ..core.score.batch import RunningSummary, ScoredBatch, BatchScorer
from ..core.results.result import write_summary
from ..core.data.config import RunConfig
from ..core.data.dataset import ALIASES, EvalDataset
from ..core.errors import AdapterError, ConfigError, DatasetError, LevelfieldError, MissingExtraError
from ..core.score.metrics.base import Metric
from ..core.data.protocol import AgentRequest, AgentRunnable
from ..core.data.types import AgentRun
from ..core.run import limits
from ..core.run.runner import OnRun, PlayScenario, interleaved_plan, run_agents as run_locally
from ..core.data.types import AgentOutput
from ..formats.batches import BATCH_ROWS, table_writer
from .saved import TABLE_NAMES, check_out

__all__ = ["RayExecutor", "score_saved_on_ray", "scores_on_ray_data"]

RunKey = tuple[str, str, int]
_DEPTH = 2  # batches queued per worker, so it starts the next one while the driver reads the last
_REVIVE_SECONDS = 300.0  # how long a dead worker may take to come back before its work goes elsewhere


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray", "executor='ray'") from None
    return ray


@dataclass(frozen=True)
class RayExecutor:
    """Runs agents on a Ray cluster: ``lf.evaluate(ds, agent, executor=lf.RayExecutor(address="auto"))``."""

    address: str | None = None
    """The cluster (``"auto"``, ``"ray://host:10001"``); None: ``RAY_ADDRESS``, else a Ray started
    on this machine. Ignored when this process is already connected (``ray.init`` was called)."""
    num_workers: int | None = None
    """Actors running agents; None: one per CPU of the cluster."""
    concurrency_per_worker: int = 8
    """Runs in flight in each worker; with Ray, ``num_workers * concurrency_per_worker`` runs are in flight."""
    runtime_env: Mapping[str, Any] | None = None
    """Ray's runtime environment for the workers (``{"pip": [...], "working_dir": "."}``, env vars)."""
    max_retries: int = 2
    """Times Ray runs a batch again after its worker died."""

    def __post_init__(self) -> None:
        if self.num_workers is not None and (
            isinstance(self.num_workers, bool) or not isinstance(self.num_workers, int) or self.num_workers < 1
        ):
            raise ConfigError(f"RayExecutor(num_workers={self.num_workers!r}): must be a whole number >= 1, or None")
        if (
            isinstance(self.concurrency_per_worker, bool)
            or not isinstance(self.concurrency_per_worker, int)
            or self.concurrency_per_worker < 1
        ):
            raise ConfigError(
                f"RayExecutor(concurrency_per_worker={self.concurrency_per_worker!r}): must be a whole number >= 1"
            )
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"RayExecutor(max_retries={self.max_retries!r}): must be a whole number >= 0")
        if self.address is not None and not isinstance(self.address, str):
            raise ConfigError(f"RayExecutor(address={self.address!r}): expected a string such as 'auto'")

    name = "ray"

    def check(self, agents: Sequence[AgentRunnable]) -> None:
        """Raise a ConfigError naming the first agent that cannot be sent to Ray workers."""
        _ray()
        for agent in agents:
            _pickled(agent)

    async def run_agents(
        self,
        dataset: EvalDataset,
        agents: Sequence[AgentRunnable],
        config: RunConfig,
        *,
        on_run: OnRun | None = None,
        done: Mapping[RunKey, AgentRun] | None = None,
        run_scenario: PlayScenario | None = None,
    ) -> dict[str, list[AgentRun]]:
        """Every agent on every case and trial, run on Ray; per agent in dataset order, then trial order.

        As the local runner: ``on_run`` is called once for each fresh run as it arrives, runs in
        ``done`` are returned as they are.
        """
        if run_scenario is not None and any(c.conversation_scenario is not None for c in dataset):
            raise ConfigError("executor='ray' does not play conversation scenarios (simulator=...); run them locally")
        dataset.require_prompts()
        done = done or {}
        plan = [(a.name, c.case_id, t) for a, c, t in interleaved_plan(agents, dataset, config.trials)]
        todo = [key for key in plan if key not in done]
        finished: dict[RunKey, AgentRun] = {}
        if todo:
            ray = _ray()
            self._connect(ray)
            await self._run(ray, dataset, agents, config, todo, finished, on_run)
        out: dict[str, list[AgentRun]] = {a.name: [] for a in agents}
        for key in plan:
            kept = done.get(key)
            out[key[0]].append(kept if kept is not None else finished[key])
        return out

    def _connect(self, ray: Any) -> None:
        if not ray.is_initialized():
            ray.init(address=self.address, ignore_reinit_error=True)

    def _workers(self, ray: Any, todo: int) -> tuple[int, float]:
        """How many actors to start, and the CPUs each reserves (never more than the cluster has)."""
        cpus = float(ray.cluster_resources().get("CPU", 1.0)) or 1.0
        wanted = self.num_workers or max(1, int(cpus))
        count = max(1, min(wanted, math.ceil(todo / self.concurrency_per_worker)))
        # More workers than CPUs share them, rather than wait for CPUs that never free up.
        return count, min(1.0, cpus / count)

    async def _run(
        self,
        ray: Any,
        dataset: EvalDataset,
        agents: Sequence[AgentRunnable],
        config: RunConfig,
        todo: list[RunKey],
        finished: dict[RunKey, AgentRun],
        on_run: OnRun | None,
    ) -> None:
        count, cpus = self._workers(ray, len(todo))
        caps = {name: max(1, cap // count) for name, cap in config.agent_concurrency.items()}
        # Each worker gets its share of every rate, so the cluster does not multiply it; its adaptive
        # limits (one set per worker, shared by its batches) converge on their shares of what each
        # endpoint carries, as loss-driven windows sharing one bottleneck do.
        worker_config = config.replace(
            concurrency=self.concurrency_per_worker, agent_concurrency=caps, progress=False,
            out=None, resume=False, overwrite=False, executor="local",
            requests_per_minute=_share(config.requests_per_minute, count),
            tokens_per_minute=_share(config.tokens_per_minute, count),
        )
        options: dict[str, Any] = {
            "num_cpus": cpus,
            "max_restarts": -1,  # a worker that dies comes back; max_task_retries bounds each batch
            "max_task_retries": self.max_retries,
        }
        if self.runtime_env:
            options["runtime_env"] = dict(self.runtime_env)
        actor_class = ray.remote(_Worker).options(**options)
        blobs = [(agent.name, _pickled(agent)) for agent in agents]
        # Put in the object store once, for every worker (and every restart). Wrapped in a list, so
        # Ray hands each worker the reference (it fetches the object itself) rather than warning that
        # a restart needs constructor arguments that live in the object store.
        shared = [ray.put((dataset, blobs))]
        actors = [actor_class.remote(shared, worker_config) for _ in range(count)]
        size = self.concurrency_per_worker
        queue: deque[list[RunKey]] = deque(todo[i : i + size] for i in range(0, len(todo), size))
        # Runs of a batch whose worker died (after Ray's retries): each runs again alone on a worker,
        # so a second death names the run that causes it, and the others in its batch are not blamed.
        suspects: deque[RunKey] = deque()
        inflight: dict[asyncio.Future[Any], tuple[int, list[RunKey], bool]] = {}
        busy = [0] * count
        alone = [False] * count
        # A worker whose batch failed is fed again only once it answers (Ray restarts it): a task
        # sent while it restarts fails too, and would be blamed for a death it did not cause.
        reviving: dict[asyncio.Task[None], int] = {}
        dead: dict[int, str] = {}  # workers that will not come back, and why; their work goes to the others

        async def revive(worker: int) -> None:
            deadline = asyncio.get_running_loop().time() + _REVIVE_SECONDS
            while True:
                try:
                    await asyncio.wrap_future(actors[worker].ping.remote().future())
                    return
                except ray.exceptions.ActorDiedError as exc:  # for good (e.g. it cannot even start)
                    dead[worker] = _why_dead(exc)
                    return
                except Exception as exc:  # noqa: BLE001 - still restarting
                    if asyncio.get_running_loop().time() > deadline:
                        dead[worker] = f"not back after {_REVIVE_SECONDS:.0f} s ({_describe(exc)})"
                        return
                    await asyncio.sleep(0.2)
        progress = _Progress(len(todo), config.progress, agents, count)
        writes: list[Any] = []

        def start(worker: int, batch: list[RunKey], by_itself: bool) -> None:
            ref = actors[worker].run.remote(batch)
            inflight[asyncio.wrap_future(ref.future())] = (worker, batch, by_itself)
            busy[worker] += 1
            alone[worker] = by_itself

        def feed(worker: int) -> None:
            if worker in dead or worker in reviving.values():
                return
            while not alone[worker]:
                if suspects:
                    if not busy[worker]:  # otherwise let the worker drain first
                        start(worker, [suspects.popleft()], True)
                    return
                if not queue or busy[worker] >= _DEPTH:
                    return
                start(worker, queue.popleft(), False)

        def record(run: AgentRun) -> None:
            key = (run.agent_name, run.case_id, run.trial)
            if key in finished:
                return  # a batch run again after its worker died: the run is already recorded
            finished[key] = run
            if on_run is not None:
                written = on_run(run)
                if written is not None:
                    writes.append(written)  # the journal's flush of this run's line
            progress.update(run)

        try:
            for worker in range(count):
                feed(worker)
            while inflight or reviving:
                ready, _ = await asyncio.wait([*inflight, *reviving], return_when=asyncio.FIRST_COMPLETED)
                for future in ready:
                    if future in reviving:
                        reviving.pop(future)  # type: ignore[call-overload]
                        continue
                    worker, batch, by_itself = inflight.pop(future)
                    busy[worker] -= 1
                    alone[worker] = False
                    try:
                        runs = _loads(future.result())
                    except Exception as exc:  # noqa: BLE001 - the worker died, even after Ray's retries
                        lost = [key for key in batch if key not in finished]
                        if by_itself:
                            for key in lost:
                                record(_lost_run(key, f"its Ray worker died, also when it ran alone and when Ray "
                                                      f"ran it again ({self.max_retries} retries): {_describe(exc)}"))
                        else:
                            suspects.extend(lost)
                        if worker not in reviving.values():
                            reviving[asyncio.ensure_future(revive(worker))] = worker
                        runs = []
                    for run in runs:
                        record(run)
                for worker in range(count):
                    feed(worker)
                if writes:
                    # As locally: the batch's runs are on disk before more results are taken, and a
                    # journal that cannot be written stops the evaluation loudly.
                    pending, writes[:] = list(writes), []
                    await asyncio.gather(*pending)
            why = "; ".join(sorted(set(dead.values()))) or "a worker answered its batch without it"
            for key in todo:
                if key not in finished:  # every worker is gone (or, never expected, one skipped a run)
                    record(_lost_run(key, f"no Ray worker could run it: {why}"))
            if writes:
                await asyncio.gather(*writes)
        finally:
            progress.close()
            for future in [*inflight, *reviving]:
                future.cancel()
            for actor in actors:
                try:
                    ray.kill(actor)
                except Exception:  # noqa: BLE001 - already gone
                    pass

    def __repr__(self) -> str:
        settings = [f"{name}={getattr(self, name)!r}" for name in ("address", "num_workers", "runtime_env")
                    if getattr(self, name) is not None]
        settings.append(f"concurrency_per_worker={self.concurrency_per_worker}")
        return f"RayExecutor({', '.join(settings)})"


def _share(rate: int | Mapping[str, int] | None, workers: int) -> int | dict[str, int] | None:
    """One worker's share of a per-minute rate (a number, or one per agent name)."""
    if rate is None:
        return None
    if isinstance(rate, Mapping):
        return {name: max(1, value // workers) for name, value in rate.items()}
    return max(1, rate // workers)


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


def _describe(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _why_dead(error: BaseException) -> str:
    """Why a worker is gone for good, with the root cause Ray's message buries (an import that failed)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [line for line in lines if line.startswith(("ModuleNotFoundError", "ImportError"))]
    if causes:
        return (f"its Ray worker could not start: {causes[-1]}; install levelfield (and the agent's package) "
                "on the workers, or ship them with RayExecutor(runtime_env={'pip': [...]} or {'working_dir': ...})")
    return _describe(error)


def _lost_run(key: RunKey, error: str) -> AgentRun:
    """The failed run of a run Ray could not bring back (it is recorded: an evaluation never loses a run)."""
    return AgentRun(agent_name=key[0], case_id=key[1], trial=key[2], failure=True, error=error, error_type="worker_died")


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
            bare = (lambda o: None if o is None else o.model_copy(update={"raw": None}))
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

    def __init__(self, shared: list[Any], config: RunConfig) -> None:
        import ray
        from ray import cloudpickle

        dataset, agents = ray.get(shared[0])

        self._cases = {case.case_id: case for case in dataset}
        self._source = dataset.source
        self._config = config
        self._agents: list[Any] = []
        for name, blob in agents:
            try:
                agent = cloudpickle.loads(blob)
                if isinstance(agent, SpecAgent):
                    # Built now, once per worker, rather than in its first run (where the import would
                    # count in that run's time and hold the worker's event loop).
                    agent = as_agent(load_agent_spec(agent.spec), name=agent.name)
                self._agents.append(agent)
            except Exception as exc:  # noqa: BLE001 - e.g. its module is not installed on this worker
                self._agents.append(_Unbuildable(name, (
                    f"agent {name!r} could not be built on a Ray worker ({type(exc).__name__}: {exc}); give it as a "
                    "spec string and make its module importable there (RayExecutor(runtime_env=...))")))
        self._slots: asyncio.Semaphore | None = None
        self._limits = limits.Limits.of(config)  # the endpoints' limits of this worker, for all its batches

    async def ping(self) -> None:
        """Answer once the worker is up (after a restart)."""

    async def run(self, batch: list[RunKey]) -> bytes:
        """Run one batch of (agent, case, trial) and return its runs, pickled."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._config.concurrency)  # shared by the batches in flight here
        ids = list(dict.fromkeys(key[1] for key in batch))
        cases = EvalDataset([self._cases[i] for i in ids], source=self._source)
        names = {key[0] for key in batch}
        agents = [a for a in self._agents if a.name in names]
        with limits.using(self._limits):
            runs = await run_locally(cases, agents, self._config, only=batch, slots=self._slots)
        return _dumps([run for agent_runs in runs.values() for run in agent_runs])


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


# -- saved predictions on Ray Data ---------------------------------------------------------------

_SAVED_SUFFIXES = (".parquet", ".jsonl")
_CASE_ID_COLUMNS = ALIASES["case_id"]
_SCENARIO_COLUMNS = ("scenario", "conversation_scenario")


def scores_on_ray_data(data: Any) -> bool:
    """Whether ``data`` is a saved-predictions file Ray Data reads (``.parquet``, ``.jsonl``)."""
    return isinstance(data, (str, Path)) and str(data).lower().endswith(_SAVED_SUFFIXES)


class _RayDataScorer:
    """Scores one Ray Data batch of saved rows with the columnar scorer.

    Every input row comes back as one output row, in input order, scenario rows included
    (``_skipped``), so the driver numbers rows without an id (``_given`` false) by position,
    exactly as the local path does.
    """

    def __init__(self, metrics: Sequence[Metric], source: str, kind: str) -> None:
        self._scorer = BatchScorer(metrics)
        self._names = [m.name for m in metrics]
        self._source = source
        self._kind = kind

    def _rows(self, table: Any) -> list[Mapping[str, Any]]:
        if self._kind == "parquet":
            return table.to_pylist()
        rows = []
        for line in table.column("text").to_pylist():
            if not line.strip():
                continue
            try:
                rows.append(_json_loads(line))
            except ValueError as exc:
                raise DatasetError(f"{self._source}: a line is not valid JSON ({exc}): {line[:80]!r}") from None
        return rows

    def __call__(self, table: Any) -> dict[str, Any]:
        try:
            return self._score(table)
        except LevelfieldError as exc:
            # Ray Data would pass on only its text, wrapped in its own error: the driver raises it again.
            return self._failed(exc)

    def _failed(self, exc: LevelfieldError) -> dict[str, Any]:
        import numpy as np

        out: dict[str, Any] = {"case_id": np.array([""], dtype=object), "failure": np.zeros(1, dtype=np.int8)}
        for name in ("latency_in_seconds", *(f"{m}/score" for m in self._names)):
            out[name] = np.full(1, math.nan)
        out["_skipped"] = np.ones(1, dtype=bool)
        out["_given"] = np.ones(1, dtype=bool)
        out["_with_predictions"] = np.zeros(1, dtype=np.int64)
        for name in self._names:
            out[f"_failed/{name}"] = np.zeros(1, dtype=np.int64)
            out[f"_failed_applies/{name}"] = np.zeros(1, dtype=np.int64)
        out["_error"] = np.array([f"{type(exc).__name__}\n{exc}"], dtype=object)
        return out

    def _score(self, table: Any) -> dict[str, Any]:
        import numpy as np

        rows = self._rows(table)
        scored = self._scorer.score(_Rows(rows, self._source))
        # The scorer leaves out conversation-scenario rows (they need a user simulator); which
        # rows those are is read here the way the scorer reads it, so the others keep their places.
        gone = [i for i, row in enumerate(rows) if any(not _absent(row.get(c)) for c in _SCENARIO_COLUMNS)]
        kept = sorted(set(range(len(rows))) - set(gone))
        cols = scored.columns
        if len(kept) != len(cols["case_id"]):  # pragma: no cover - the scorer's rule for skipping changed
            raise RuntimeError("the columnar scorer skipped other rows than conversation scenarios")
        n = len(rows)
        at = np.array(kept, dtype=np.int64)
        ids = np.empty(n, dtype=object)
        ids[at] = list(cols["case_id"])
        ids[gone] = list(scored.skipped)
        out: dict[str, Any] = {"case_id": ids, "failure": np.zeros(n, dtype=np.int8)}
        out["failure"][at] = np.asarray(cols["failure"], dtype=np.int8)
        for name in ("latency_in_seconds", *(f"{m}/score" for m in self._names)):
            out[name] = np.full(n, math.nan)
            out[name][at] = np.asarray(cols[name], dtype=float)
        out["_skipped"] = np.zeros(n, dtype=bool)
        out["_skipped"][gone] = True
        out["_given"] = np.array([any(not _absent(row.get(c)) for c in _CASE_ID_COLUMNS) for row in rows], dtype=bool)
        # Counts of the whole batch ride on its first row.
        first = np.zeros(len(rows), dtype=np.int64)
        out["_with_predictions"] = first.copy()
        if len(rows):
            out["_with_predictions"][0] = scored.with_predictions
        for name in self._names:
            for key, counts in (("_failed", scored.failed), ("_failed_applies", scored.failed_applies)):
                out[f"{key}/{name}"] = first.copy()
                if len(rows) and counts.get(name):
                    out[f"{key}/{name}"][0] = counts[name]
        out["_error"] = np.array([""] * len(rows), dtype=object)
        return out


def _score_block(table: Any, metrics: Sequence[Metric], source: str, kind: str) -> dict[str, Any]:
    """One Ray Data batch of saved rows, scored (a Ray task; the scorer is cheap to build)."""
    return _RayDataScorer(metrics, source, kind)(table)


@dataclass
class _Rows:
    """Rows in memory, as the columnar scorer reads a batch (its place in the file is not known here)."""

    rows_: list[Mapping[str, Any]]
    source: str
    start: int = 0

    def rows(self) -> list[Mapping[str, Any]]:
        return self.rows_

    def where(self, i: int) -> str:
        return f"{self.source} (row {i + 1} of a Ray Data batch)"


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_loads(line: str) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson comes with pyarrow's extras
        return json.loads(line)
    return orjson.loads(line)


def score_saved_on_ray(executor: RayExecutor, data: str | Path, metrics: Sequence[Metric], config: RunConfig) -> ColumnarResult:
    """Score the saved predictions in a ``.parquet``/``.jsonl`` file on Ray Data.

    ``read_parquet`` / ``read_text`` → ``map_batches`` with the columnar scorer on ``num_workers``
    actors → the scored batches stream back in order and are summed up (and, with ``out=``,
    written to ``out/metrics_table.parquet`` and ``summary.json``) here, as the local columnar
    path does: the same scores and summary.
    """
    import numpy as np
    import pandas as pd

    ray = _ray()
    executor._connect(ray)
    path = str(data)
    source = path
    kind = "parquet" if path.lower().endswith(".parquet") else "jsonl"
    for metric in metrics:
        try:
            _cloudpickle(ray).dumps(metric)
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(
                f"executor='ray' scores on Ray workers, and metric {metric.name!r} cannot be sent there "
                f"({type(exc).__name__}: {exc}); define it at module level in an importable module"
            ) from None
    out = config.out_dir
    if out is not None:
        check_out(out, config)
    dataset = ray.data.read_parquet(path) if kind == "parquet" else ray.data.read_text(path)
    workers = executor.num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    options: dict[str, Any] = {}
    if executor.runtime_env:
        options["runtime_env"] = dict(executor.runtime_env)
    # Ray tasks (pooled worker processes, freed between batches), at most one per worker at once.
    try:
        options["compute"] = ray.data.TaskPoolStrategy(size=workers)
    except TypeError:  # an older Ray, where the cap on tasks is map_batches(concurrency=)
        options["concurrency"] = workers
    scored = dataset.map_batches(
        _score_block, fn_args=(list(metrics), source, kind), batch_format="pyarrow", batch_size=BATCH_ROWS, **options,
    )
    context = ray.data.DataContext.get_current()
    ordered, bars = context.execution_options.preserve_order, context.enable_progress_bars
    context.execution_options.preserve_order = True  # rows without an id are numbered by position
    context.enable_progress_bars = config.progress
    names = [m.name for m in metrics]
    summary = RunningSummary(names)
    writer = table_writer(out / TABLE_NAMES[0]) if out is not None else None
    kept: list[pd.DataFrame] = []
    skipped: dict[str, str] = {}
    first_row: dict[str, int] = {}
    offset = 0
    try:
        for block in _blocks(scored):
            for text in block["_error"]:
                if text:
                    kind, _, message = str(text).partition("\n")
                    error = getattr(errors, kind, None)
                    raise (error if isinstance(error, type) and issubclass(error, LevelfieldError) else DatasetError)(message)
            n = len(block["case_id"])
            ids = [str(c) if given else str(offset + i) for i, (c, given) in enumerate(zip(block["case_id"], block["_given"]))]
            live = ~np.asarray(block["_skipped"], dtype=bool)
            for case_id, keep in zip(ids, live):
                if not keep:
                    skipped[case_id] = "a conversation_scenario case needs a user simulator"
            columns: dict[str, Any] = {"case_id": [c for c, keep in zip(ids, live) if keep]}
            for name in ("failure", "latency_in_seconds", *(f"{m}/score" for m in names)):
                columns[name] = np.asarray(block[name])[live]
            for case_id, row in zip(columns["case_id"], (offset + np.flatnonzero(live) + 1).tolist()):
                seen = first_row.setdefault(case_id, row)
                if seen != row:
                    raise DatasetError(f"{source}: case ids must be unique; {case_id!r} is at row {seen} and again "
                                       f"at row {row}. Give each row its own id, or drop the id column to number the rows")
            batch = ScoredBatch(
                columns,
                failed={m: int(block[f"_failed/{m}"].sum()) for m in names if block[f"_failed/{m}"].sum()},
                with_predictions=int(block["_with_predictions"].sum()),
                failed_applies={m: int(block[f"_failed_applies/{m}"].sum()) for m in names},
            )
            summary.add(batch)
            if writer is not None:
                writer.write(batch)
            else:
                kept.append(pd.DataFrame(columns))
            offset += n
    except BaseException as exc:
        if writer is not None:
            writer.abort()
        own = _levelfield_error(exc)
        if own is not None:
            raise own from None  # a bad row or metric, named as locally, not wrapped in Ray's task error
        raise
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = ordered, bars
    if not summary.rows and not skipped:
        raise DatasetError(f"{source}: the dataset has no rows")
    if not summary.with_predictions and not skipped:
        raise DatasetError(f"{source}: no agent was given and no row has a 'response' or 'predicted_trajectory' "
                           "to score; pass an agent, or a dataset with saved predictions")
    totals = summary.summary()
    if writer is not None:
        assert out is not None
        table_path = writer.close()
        write_summary(out / "summary.json", totals)
        return ColumnarResult(metrics, totals, source=source, config=config, table_path=table_path, skipped=skipped)
    table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return ColumnarResult(metrics, totals, source=source, config=config, table=table, skipped=skipped)


def _blocks(scored: Any) -> Iterator[dict[str, Any]]:
    """The scored blocks in order, streamed (a block is in memory only while the driver reads it)."""
    with warnings.catch_warnings():
        # A file smaller than a batch is one block: Ray Data's note that fewer tasks than allowed
        # could start is no news to the user.
        warnings.filterwarnings("ignore", message="The maximum number of concurrent tasks")
        yield from scored.iter_batches(batch_size=None, batch_format="numpy")


def _levelfield_error(exc: BaseException) -> LevelfieldError | None:
    """The levelfield error a Ray task error carries (a bad row, a metric), if it carries one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, LevelfieldError):
            return current
        seen.add(id(current))
        current = getattr(current, "cause", None) or current.__cause__
    return None


def _cloudpickle(ray: Any) -> Any:
    from ray import cloudpickle

    return cloudpickle
