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
import sys
import time
import warnings
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...adapters.auto import as_agent
from ...adapters.spec import SpecAgent, load_agent_spec
from ..._core import errors
from ..._core.results.result import EvalResult
from ..._core.score.batch import RunningSummary, ScoredBatch, BatchScorer
from ..._core.results.result import write_summary
from ..._core.data.config import RunConfig
from ..._core.data.dataset import ALIASES, EvalDataset
from ..._core.errors import AdapterError, ConfigError, DatasetError, ExecutorError, LevelfieldError, MissingExtraError
from ..._core.score.metrics.base import Metric
from ..._core.data.protocol import AgentRequest, AgentRunnable
from ..._core.data.types import AgentRun
from ..._core.run import limits
from ..._core.run.runner import OnRun, PlayScenario, interleaved_plan, run_agents as run_locally
from ..._core.data.types import AgentOutput
from ...formats.batches import BATCH_ROWS, batch_source, table_writer
from ..saved import TABLE_NAMES, check_out

__all__ = ["RayExecutor", "score_saved_on_ray", "scores_on_ray_data"]

RunKey = tuple[str, str, int]
_LOOPBACK = "127.0.0.2"  # levelfield.testing.ray_cluster.LOOPBACK: see _on_loopback
_DEPTH = 2  # batches queued per worker, so it starts the next one while the driver reads the last


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
    heartbeat: float = 30.0
    """Seconds a busy worker may go without answering (its node lost, its process stuck) before its
    runs are handed to the other workers."""
    wait_for_workers: float = 300.0
    """Seconds to wait, with no worker answering, for the cluster to bring one back (a node that
    restarts, one the autoscaler adds) before the evaluation stops with an ExecutorError; the
    journal keeps every finished run, so ``resume=True`` runs only the rest."""
    start_timeout: float = 300.0
    """Seconds a worker may take to first answer (scheduled, its process started, its runtime_env
    set up, its agents loaded; perhaps on a node the autoscaler adds) before it counts as lost;
    ``heartbeat`` applies once it has answered. After a heartbeat, ready workers with nothing
    left to do take over its runs meanwhile."""

    can_stream: ClassVar[bool] = True
    """``run_agents(..., keep=False)`` is understood: runs the journal holds are not held here too."""

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
        for name in ("heartbeat", "wait_for_workers", "start_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
                raise ConfigError(f"RayExecutor({name}={value!r}): must be a number of seconds > 0")
        if self.address is not None and not isinstance(self.address, str):
            raise ConfigError(f"RayExecutor(address={self.address!r}): expected a string such as 'auto'")

    name = "ray"

    def check(self, agents: Sequence[AgentRunnable]) -> None:
        """Raise a ConfigError naming the first agent that cannot be sent to Ray workers, or a bad runtime_env.

        Called before the journal exists: connects to Ray (with the runtime_env) and uploads the
        code it ships, so an error there leaves nothing behind.
        """
        ray = _ray()
        for agent in agents:
            _pickled(agent)
        self._actor_env(ray)

    async def run_agents(
        self,
        dataset: EvalDataset,
        agents: Sequence[AgentRunnable],
        config: RunConfig,
        *,
        on_run: OnRun | None = None,
        done: Mapping[RunKey, AgentRun] | None = None,
        run_scenario: PlayScenario | None = None,
        keep: bool = True,
    ) -> dict[str, list[AgentRun]]:
        """Every agent on every case and trial, run on Ray; per agent in dataset order, then trial order.

        As the local runner: ``on_run`` is called once for each fresh run as it arrives, runs in
        ``done`` are returned as they are. ``keep=False``: the runs go to ``on_run`` only (which
        journals them) and are not held here; the lists returned are empty.
        """
        if run_scenario is not None and any(c.conversation_scenario is not None for c in dataset):
            raise ConfigError("executor='ray' does not play conversation scenarios (simulator=...); run them locally")
        dataset.require_prompts()
        done = done or {}
        plan = _Plan([a.name for a in agents], [c.case_id for c in dataset], config.trials, done)
        finished: dict[RunKey, AgentRun] | None = {} if keep else None
        if plan.total:
            ray = _ray()
            env = self._actor_env(ray)
            await _Dispatch(self, ray, dataset, agents, config, plan, finished, on_run, env).run()
        out: dict[str, list[AgentRun]] = {a.name: [] for a in agents}
        if finished is None:
            return out
        for key in interleaved_plan([a.name for a in agents], [c.case_id for c in dataset], config.trials):
            kept = done.get(key)
            out[key[0]].append(kept if kept is not None else finished[key])
        return out

    def _connect(self, ray: Any) -> None:
        """Connect to the cluster, with the runtime_env as the job's, unless this process already is."""
        if ray.is_initialized():
            return
        env = _checked_env(self.runtime_env)
        try:
            ray.init(address=self.address, runtime_env=env or None, ignore_reinit_error=True, **_on_loopback(self.address))
        except (ValueError, TypeError, FileNotFoundError, NotADirectoryError, RuntimeError) as exc:
            if env and ray.is_initialized():  # connected, then the runtime_env (its upload) failed
                ray.shutdown()
            if env and _about_env(exc):
                raise ConfigError(f"RayExecutor(runtime_env={self.runtime_env!r}): Ray refused it ({_describe(exc)}). "
                                  "Give working_dir / py_modules as existing local folders (small: Ray uploads them) "
                                  "or as URIs, pip as a list of requirements") from None
            raise
        if env:
            try:
                _probe_env(ray, None, self.runtime_env)  # the job's env, set up on the cluster (a pip install)
            except ConfigError:
                ray.shutdown()  # a later call starts again, rather than keep a job whose env cannot start
                raise
            _UPLOADED[_env_key(ray, env)] = None  # the job carries it: actors need nothing of their own

    def _actor_env(self, ray: Any) -> dict[str, Any] | None:
        """The runtime_env the worker actors are started with: None when the job's applies.

        When this process was connected before (the user's ``ray.init(runtime_env=...)``, which
        stays as it is), local ``working_dir`` / ``py_modules`` folders are uploaded here and the
        actors get their URIs: Ray takes local folders only at the job level.
        """
        self._connect(ray)
        env = _checked_env(self.runtime_env)
        if not env:
            return None
        key = _env_key(ray, env)
        if key not in _UPLOADED:
            _UPLOADED[key] = _upload(env, self.runtime_env)
        return _UPLOADED[key]

    def _workers(self, ray: Any, todo: int) -> tuple[int, float]:
        """How many actors to start, and the CPUs each reserves (never more than the cluster has)."""
        cpus = float(ray.cluster_resources().get("CPU", 1.0)) or 1.0
        wanted = self.num_workers or max(1, int(cpus))
        count = max(1, min(wanted, math.ceil(todo / self.concurrency_per_worker)))
        # More workers than CPUs share them, rather than wait for CPUs that never free up.
        return count, min(1.0, cpus / count)

    def __repr__(self) -> str:
        settings = [f"{name}={getattr(self, name)!r}" for name in ("address", "num_workers", "runtime_env")
                    if getattr(self, name) is not None]
        settings.append(f"concurrency_per_worker={self.concurrency_per_worker}")
        return f"RayExecutor({', '.join(settings)})"


def _on_loopback(address: str | None) -> dict[str, Any]:
    """Options of ``ray.init`` that keep a Ray this process starts on its own on loopback; ``{}`` when
    ``ray.init`` joins a cluster (an address given, ``RAY_ADDRESS``, one ``ray start`` left here).

    On Linux Ray names a local node by the machine's LAN address, and swaps ``127.0.0.1`` given as
    ``_node_ip_address`` for it too (``resolve_ip_for_localhost``); another loopback address it keeps,
    so the GCS, the raylet and the workers are reached at 127.0.0.2. On macOS and Windows Ray uses
    127.0.0.1 already (where 127.0.0.2 need not exist).
    """
    if address is not None or not sys.platform.startswith("linux"):
        return {}
    try:
        from ray._private.services import canonicalize_bootstrap_address

        joins = canonicalize_bootstrap_address(None) is not None  # what ray.init(address=None) connects to
    except Exception:  # noqa: BLE001 - another Ray: leave the choice to it
        return {}
    return {} if joins else {"_node_ip_address": _LOOPBACK}


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


@dataclass
class _Slot:
    """One worker actor as the driver sees it."""

    actor: Any
    seen: float
    """When it last answered (a batch, a ping)."""
    busy: int = 0
    """Batches sent to it and not answered (not counting those handed elsewhere)."""
    alone: bool = False
    """It runs one suspect run by itself (see ``_Dispatch.failed``)."""
    state: str = "up"
    """``up``; ``reviving``: its batch failed, fed again once it answers; ``away``: not answering, its runs
    went to the others; ``dead``: it will not come back (it cannot even start)."""
    failed: list[RunKey] = field(default_factory=list)
    """Runs of its failed batch, blamed on nobody until it answers again (see ``revived``)."""
    ping: asyncio.Future[Any] | None = None
    pinged: float = 0.0
    why: str = ""
    started: bool = False
    """It has answered once; until then it is starting (see ``_Dispatch.listen``)."""


@dataclass
class _Batch:
    slot: int
    keys: list[RunKey]
    by_itself: bool
    handed_on: bool = False
    """Its worker went away and its runs were handed to the others: whatever it answers now is a bonus."""


class _Dispatch:
    """Hands batches to the worker actors and takes their runs as they come back; nothing waits unbounded.

    A worker that stops answering (its node lost, its process stuck) is noticed by the heartbeat:
    the driver pings every busy worker, and one that has not answered for ``heartbeat`` seconds is
    ``away``; its unfinished runs go back to the queue for the others (its batch, if it ever comes
    back, counts only for runs not recorded yet). A batch that fails (its worker died, even after
    Ray's retries) is blamed on nobody until its worker answers again: a worker back on its feet
    died of one of the batch's runs, so each runs alone (a second death names the run); a worker
    that stays away lost its node, so its runs are simply run elsewhere. The dispatch ends when
    every run is recorded, or with an ExecutorError once no worker has answered for
    ``wait_for_workers`` seconds.
    """

    def __init__(self, executor: RayExecutor, ray: Any, dataset: EvalDataset, agents: Sequence[AgentRunnable],
                 config: RunConfig, plan: _Plan, kept: dict[RunKey, AgentRun] | None, on_run: OnRun | None,
                 env: dict[str, Any] | None) -> None:
        self.executor, self.ray, self.config = executor, ray, config
        self.plan, self.kept, self.on_run = plan, kept, on_run
        """``plan`` knows which runs are recorded; ``kept`` holds them too, unless the caller journals them and keeps none."""
        count, cpus = executor._workers(ray, plan.total)
        caps = {name: max(1, cap // count) for name, cap in config.agent_concurrency.items()}
        # Each worker gets its share of every rate, so the cluster does not multiply it; its adaptive
        # limits (one set per worker, shared by its batches) converge on their shares of what each
        # endpoint carries, as loss-driven windows sharing one bottleneck do.
        worker_config = config.replace(
            concurrency=executor.concurrency_per_worker, agent_concurrency=caps, progress=False,
            out=None, resume=False, overwrite=False, executor="local",
            requests_per_minute=_share(config.requests_per_minute, count),
            tokens_per_minute=_share(config.tokens_per_minute, count),
        )
        options: dict[str, Any] = {
            "num_cpus": cpus,
            "max_restarts": -1,  # a worker that dies comes back; max_task_retries bounds each batch
            "max_task_retries": executor.max_retries,
        }
        if env:
            options["runtime_env"] = env
        blobs = [(agent.name, _pickled(agent)) for agent in agents]
        # In the object store once, for every worker and every restart. Each batch carries the
        # reference (nested in a list, so Ray passes it as it is) and a worker fetches it, awaited,
        # on its first batch: no blocking get in the async actor, and no constructor argument that a
        # restart would need from the object store.
        self.shared = [ray.put((dataset, blobs))]
        now = time.monotonic()
        actor_class = ray.remote(_Worker).options(**options)
        self.slots = [_Slot(actor_class.remote(worker_config), seen=now) for _ in range(count)]
        size = executor.concurrency_per_worker
        self.queue = _Queue(plan, size)
        # Runs of a batch whose worker died and came back: each runs again alone on a worker, so a
        # second death names the run that causes it, and the others in its batch are not blamed.
        self.suspects: deque[RunKey] = deque()
        self.inflight: dict[asyncio.Future[Any], _Batch] = {}
        self.writes: list[Any] = []
        self.beat = min(5.0, executor.heartbeat / 4)  # how often a busy worker is pinged
        self.answered = now  # when any worker last answered
        self.progress = _Progress(plan.total, config.progress, agents, count)

    async def run(self) -> None:
        try:
            for index in range(len(self.slots)):
                self.feed(index)
            while not self.plan.finished:
                waiting = [*self.inflight, *(s.ping for s in self.slots if s.ping is not None)]
                if waiting:
                    ready, _ = await asyncio.wait(waiting, timeout=self.beat, return_when=asyncio.FIRST_COMPLETED)
                else:
                    ready = set()
                    await asyncio.sleep(self.beat)
                for future in ready:
                    if future in self.inflight:
                        self.answer(self.inflight.pop(future), future)
                    else:
                        self.pong(future)
                self.listen()
                for index in range(len(self.slots)):
                    self.feed(index)
                await self.flush()
                if not self.plan.finished:
                    self.give_up_if_no_worker()
            await self.flush()
        finally:
            self.progress.close()
            for future in [*self.inflight, *(s.ping for s in self.slots if s.ping is not None)]:
                future.cancel()
            for slot in self.slots:
                try:
                    self.ray.kill(slot.actor)
                except Exception:  # noqa: BLE001 - already gone
                    pass

    # -- work out ------------------------------------------------------------------------------

    def start(self, index: int, batch: list[RunKey], by_itself: bool) -> None:
        slot = self.slots[index]
        ref = slot.actor.run.remote(batch, self.shared)
        self.inflight[asyncio.wrap_future(ref.future())] = _Batch(index, batch, by_itself)
        slot.busy += 1
        slot.alone = by_itself

    def feed(self, index: int) -> None:
        slot = self.slots[index]
        if slot.state != "up":
            return
        while not slot.alone:
            if self.suspects:
                if not slot.busy:  # otherwise let the worker drain first
                    self.start(index, [self.suspects.popleft()], True)
                return
            if slot.busy >= _DEPTH or not (self.queue or (slot.started and self.take_from_a_starting_worker())):
                return
            self.start(index, self.queue.popleft(), False)

    def take_from_a_starting_worker(self) -> bool:
        """Hand on a batch of a worker still starting after a heartbeat, for a ready worker with
        nothing left to do: a worker that never starts holds no run for long. The starting worker
        is not given up (it may be installing its runtime_env); whichever brings a run back first
        records it (see ``record``)."""
        now = time.monotonic()
        for batch in self.inflight.values():
            owner = self.slots[batch.slot]
            if not owner.started and not batch.handed_on and now - owner.seen > self.executor.heartbeat:
                batch.handed_on = True
                owner.busy -= 1
                self.hand_on(batch.keys)
                return True
        return False

    def hand_on(self, keys: Sequence[RunKey]) -> None:
        """Runs a worker will not bring back: first in line for the others."""
        left = [key for key in keys if not self.plan.done(key)]
        if left:
            self.queue.appendleft(left)

    # -- work back -----------------------------------------------------------------------------

    def record(self, run: AgentRun) -> None:
        key = (run.agent_name, run.case_id, run.trial)
        if not self.plan.mark(key):
            return  # a batch run again (by Ray, or elsewhere after its worker went away): already recorded
        if self.kept is not None:
            self.kept[key] = run
        if self.on_run is not None:
            written = self.on_run(run)
            if written is not None:
                self.writes.append(written)  # the journal's flush of this run's line
        self.progress.update(run)

    def answer(self, batch: _Batch, future: asyncio.Future[Any]) -> None:
        slot = self.slots[batch.slot]
        if not batch.handed_on:
            slot.busy -= 1
            slot.alone = False
        try:
            runs = _loads(future.result())
        except Exception as exc:  # noqa: BLE001 - the worker died, even after Ray's retries
            if not batch.handed_on:
                self.failed(batch, exc)
            return
        slot.seen = self.answered = time.monotonic()
        slot.started = True
        for run in runs:
            self.record(run)

    def failed(self, batch: _Batch, error: BaseException) -> None:
        slot = self.slots[batch.slot]
        lost = [key for key in batch.keys if not self.plan.done(key)]
        if batch.by_itself:
            for key in lost:
                self.record(_lost_run(key, f"its Ray worker died, also when it ran alone and when Ray ran it "
                                           f"again ({self.executor.max_retries} retries): {_describe(error)}"))
        else:
            slot.failed.extend(lost)  # blamed on nobody until the worker answers (see revived)
        if slot.state == "up":
            slot.state = "reviving"  # a task sent while it restarts would fail too, and be blamed
        slot.why = _describe(error)

    async def flush(self) -> None:
        if self.writes:
            # As locally: the batch's runs are on disk before more results are taken, and a journal
            # that cannot be written stops the evaluation loudly.
            pending, self.writes[:] = list(self.writes), []
            await asyncio.gather(*pending)

    # -- heartbeat -----------------------------------------------------------------------------

    def listen(self) -> None:
        """Ping the workers that owe an answer; hand on the runs of those silent for too long."""
        now = time.monotonic()
        for index, slot in enumerate(self.slots):
            if slot.state == "dead":
                continue
            owes = slot.busy or slot.state != "up"
            if slot.ping is None and owes and now - max(slot.seen, slot.pinged) >= self.beat:
                slot.ping = asyncio.wrap_future(slot.actor.ping.remote().future())
                slot.pinged = now
            # A worker that never answered is starting (scheduled, its process started, its code
            # loaded): held to start_timeout, not to the heartbeat; the others take its runs meanwhile.
            bound = self.executor.heartbeat if slot.started else self.executor.start_timeout
            if slot.state in ("up", "reviving") and owes and now - slot.seen > bound:
                self.away(index, f"no answer for {bound:g} s" + ("" if slot.started else " since it was started"))

    def away(self, index: int, why: str) -> None:
        """A worker that does not answer (its node is lost): its runs go to the others, unblamed."""
        slot = self.slots[index]
        slot.state, slot.why = "away", why
        for batch in self.inflight.values():
            if batch.slot == index and not batch.handed_on:
                batch.handed_on = True
                self.hand_on(batch.keys)
        self.hand_on(slot.failed)
        slot.failed, slot.busy, slot.alone = [], 0, False

    def pong(self, future: asyncio.Future[Any]) -> None:
        index = next(i for i, s in enumerate(self.slots) if s.ping is future)
        slot = self.slots[index]
        slot.ping = None
        try:
            loaded = future.result()
        except self.ray.exceptions.ActorDiedError as exc:  # for good (e.g. it cannot even start)
            slot.state, slot.why = "dead", _why_dead(exc)
            for batch in self.inflight.values():
                if batch.slot == index:
                    batch.handed_on = True
                    self.hand_on(batch.keys)
            self.hand_on(slot.failed)
            slot.failed, slot.busy = [], 0
            return
        except Exception:  # noqa: BLE001 - restarting, or its node is unreachable: the heartbeat decides
            return
        slot.seen = self.answered = time.monotonic()
        # Up, but perhaps still loading its agents (an import may hold its loop for seconds): it
        # has started once they are loaded, or it answered a batch.
        slot.started = slot.started or loaded is True
        if slot.state == "reviving":
            # Back on its feet: it died of one of its batch's runs, which now run one by one.
            self.suspects.extend(key for key in slot.failed if not self.plan.done(key))
            slot.failed = []
        slot.state = "up"

    def give_up_if_no_worker(self) -> None:
        """Record what cannot run when every worker is gone for good; stop when none answers for too long."""
        states = {slot.state for slot in self.slots}
        if states == {"dead"}:
            why = "; ".join(sorted({slot.why for slot in self.slots}))
            for key in list(self.plan.left()):
                self.record(_lost_run(key, f"no Ray worker could run it: {why}"))
            return
        silent = time.monotonic() - self.answered
        # Before any worker first answered, the cluster is still starting them.
        bound = self.executor.wait_for_workers if any(s.started for s in self.slots) else self.executor.start_timeout
        if "up" not in states and silent > bound:
            left = self.plan.total - self.plan.count
            where = ("; the journal keeps the finished runs: resume=True (--resume) runs only the rest"
                     if self.config.out_dir is not None else "; give out= to keep finished runs across such a stop")
            raise ExecutorError(
                f"executor='ray': no Ray worker has answered for {silent:.0f} s (the cluster lost its nodes: "
                f"{'; '.join(sorted({s.why for s in self.slots if s.why}))}); {self.plan.count} of "
                f"{self.plan.total} runs finished, {left} not run{where}")


# -- runtime_env: the code and packages the workers get -----------------------------------------

# The actors' runtime_env for each (cluster, runtime_env) this process has prepared: None when the
# job carries it (levelfield connected with it), else the env with local folders uploaded as URIs.
_UPLOADED: dict[tuple[str, str], dict[str, Any] | None] = {}
_PROBE_SECONDS = 900.0  # a pip install on the cluster may take minutes; a setup that never ends must not


def _checked_env(env: Mapping[str, Any] | None) -> dict[str, Any]:
    """The runtime_env as a dict, or a ConfigError naming the field that Ray would refuse later."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"RayExecutor(runtime_env={env!r}): expected a dict such as "
                          "{'working_dir': '.', 'pip': ['requests']}")
    from ray.runtime_env import RuntimeEnv

    unknown = sorted(str(k) for k in env if k not in RuntimeEnv.known_fields)
    if unknown:
        known = ", ".join(sorted(k for k in RuntimeEnv.known_fields if not k.startswith("_")))
        raise ConfigError(f"RayExecutor(runtime_env=...): unknown field(s) {', '.join(map(repr, unknown))}; "
                          f"Ray knows {known}")
    checked = dict(env)
    for field_name in ("working_dir", "py_modules"):
        value = checked.get(field_name)
        paths = value if isinstance(value, (list, tuple)) else [value]
        for path in paths:
            if isinstance(path, (str, Path)) and "://" not in str(path) and not Path(path).exists():
                raise ConfigError(f"RayExecutor(runtime_env={{{field_name!r}: ...}}): {str(path)!r} does not exist "
                                  f"(from {Path.cwd()}); give an existing folder (or .zip) or a URI")
        if isinstance(value, Path):
            checked[field_name] = str(value)
        elif isinstance(value, (list, tuple)):
            checked[field_name] = [str(p) if isinstance(p, Path) else p for p in value]
    try:
        RuntimeEnv(**checked)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"RayExecutor(runtime_env={dict(env)!r}): {_describe(exc)}") from None
    return checked


def _env_key(ray: Any, env: Mapping[str, Any]) -> tuple[str, str]:
    try:
        where = str(ray.get_runtime_context().gcs_address)
    except Exception:  # noqa: BLE001 - a Ray client connection has no GCS address here
        where = "client"
    return where, json.dumps(env, sort_keys=True, default=str)


def _about_env(exc: BaseException) -> bool:
    """Whether an error of ``ray.init`` is about its runtime_env (a folder, a package, its size)."""
    text = str(exc).lower()
    return any(word in text for word in ("runtime_env", "working_dir", "py_modules", "package", "uri", "path"))


def _upload(env: dict[str, Any], given: Any) -> dict[str, Any]:
    """The runtime_env with its local working_dir / py_modules uploaded to the cluster (as ``gcs://`` URIs).

    What ``ray.init(runtime_env=...)`` does for a job, done for the actors of a process that was
    already connected; then a Ray task starts with it, so a package that does not install is a
    ConfigError now rather than workers that never start.
    """
    ray = _ray()
    try:
        from ray.util.client import ray as client

        remote = client.is_connected()
    except ImportError:  # pragma: no cover
        remote = False
    shipped = dict(env)
    if not remote and ("working_dir" in env or "py_modules" in env):  # a Ray client uploads them itself
        try:
            from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
            from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
            from ray._private.worker import global_worker
        except ImportError:  # pragma: no cover - Ray moved its helpers
            raise ConfigError(
                f"RayExecutor(runtime_env={given!r}): this process was connected to Ray before (ray.init) and this "
                "Ray cannot upload local folders for its actors; pass the runtime_env to ray.init(...) instead"
            ) from None
        scratch = global_worker.node.get_runtime_env_dir_path()
        try:
            shipped = upload_py_modules_if_needed(shipped, include_gitignore=True, scratch_dir=scratch)
            shipped = upload_working_dir_if_needed(shipped, include_gitignore=True, scratch_dir=scratch)
        except (ValueError, TypeError, OSError, RuntimeError) as exc:
            raise ConfigError(f"RayExecutor(runtime_env={given!r}): could not upload it to the cluster "
                              f"({_describe(exc)}); keep the folders small (Ray's limit is a few hundred MiB)") from None
        shipped.pop("excludes", None)
    _probe_env(ray, shipped, given)
    return shipped


def _probe_env(ray: Any, env: dict[str, Any] | None, given: Any) -> None:
    """Start one small Ray task with the runtime_env: a ConfigError if Ray cannot set it up."""
    probe = ray.remote(_probe).options(num_cpus=0, max_retries=0, **({"runtime_env": env} if env else {}))
    try:
        ray.get(probe.remote(), timeout=_PROBE_SECONDS)
    except ray.exceptions.RuntimeEnvSetupError as exc:
        raise ConfigError(f"RayExecutor(runtime_env={given!r}): Ray could not set it up on the cluster "
                          f"({_describe(exc)})") from None
    except ray.exceptions.GetTimeoutError:
        raise ConfigError(f"RayExecutor(runtime_env={given!r}): not set up on the cluster after "
                          f"{_PROBE_SECONDS:.0f} s") from None


def _probe() -> None:
    """A Ray task that does nothing: it starts only where the runtime_env could be set up."""


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
        self._limits = limits.Limits.of(config)  # the endpoints' limits of this worker, for all its batches

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
        cases = EvalDataset([self._cases[i] for i in ids], source=self._source)
        names = {key[0] for key in batch}
        agents = [a for a in every_agent if a.name in names]
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


def score_saved_on_ray(executor: RayExecutor, data: str | Path, metrics: Sequence[Metric], config: RunConfig) -> EvalResult:
    """Score the saved predictions in a ``.parquet``/``.jsonl`` file on Ray Data.

    ``read_parquet`` / ``read_text`` → ``map_batches`` with the columnar scorer on ``num_workers``
    actors → the scored batches stream back in order and are summed up (and, with ``out=``,
    written to ``out/metrics_table.parquet`` and ``summary.json``) here, as the local columnar
    path does: the same scores and summary.
    """
    import numpy as np
    import pandas as pd

    ray = _ray()
    source = str(data)
    # Ray Data reads on the workers, whose working folder is not this one (a job's working_dir):
    # a local path goes as an absolute one; a URI (s3://, gs://) as it is.
    path = source if "://" in source else str(Path(source).resolve())
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
    env = executor._actor_env(ray)
    if env:
        options["runtime_env"] = env
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
    # A file on this machine is read again here when explanations, cases or runs are asked for.
    again = None if "://" in source else (lambda: batch_source(path, source=source).batches)
    if writer is not None:
        assert out is not None
        table_path = writer.close()
        write_summary(out / "summary.json", totals)
        return EvalResult.from_batches(metrics, totals, source=source, config=config, table_path=table_path, skipped=skipped,
                                       rows=again)
    table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
    return EvalResult.from_batches(metrics, totals, source=source, config=config, table=table, skipped=skipped, rows=again)


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
