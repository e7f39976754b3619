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

Beside it: ``plan`` (the runs, numbered and batched), ``workers`` (the actor side),
``runtime_env`` (connecting, and what the workers get); ``ray`` is imported only when a Ray run
starts: ``pip install 'levelfield[ray]'``.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..._core.data.config import RunConfig
from ..._core.data.dataset import EvalDataset
from ..._core.data.protocol import AgentRunnable
from ..._core.data.types import AgentRun
from ..._core.errors import ConfigError, ExecutorError
from ..._core.run.runner import OnRun, PlayScenario, interleaved_plan
from .plan import RunKey, _Plan, _Progress, _Queue
from .runtime_env import _describe, _ray, actor_env
from .workers import _loads, _pickled, _Worker

__all__ = ["RayExecutor"]

_DEPTH = 2  # batches queued per worker, so it starts the next one while the driver reads the last


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

    def _actor_env(self, ray: Any) -> dict[str, Any] | None:
        """The runtime_env the worker actors are started with (connecting first): None when the job's applies."""
        return actor_env(ray, self.address, self.runtime_env)

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
        if slot.ping is None and slot.state == "reviving":
            # Asked now rather than at the next beat: Ray answers it as soon as the worker is back,
            # so its runs go on without waiting up to a beat (5 s by default) after each crash.
            self.send_ping(slot)

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
                self.send_ping(slot)
            # A worker that never answered is starting (scheduled, its process started, its code
            # loaded): held to start_timeout, not to the heartbeat; the others take its runs meanwhile.
            bound = self.executor.heartbeat if slot.started else self.executor.start_timeout
            if slot.state in ("up", "reviving") and owes and now - slot.seen > bound:
                self.away(index, f"no answer for {bound:g} s" + ("" if slot.started else " since it was started"))

    def send_ping(self, slot: _Slot) -> None:
        slot.ping = asyncio.wrap_future(slot.actor.ping.remote().future())
        slot.pinged = time.monotonic()

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


def _share(rate: int | Mapping[str, int] | None, workers: int) -> int | dict[str, int] | None:
    """One worker's share of a per-minute rate (a number, or one per agent name)."""
    if rate is None:
        return None
    if isinstance(rate, Mapping):
        return {name: max(1, value // workers) for name, value in rate.items()}
    return max(1, rate // workers)


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


