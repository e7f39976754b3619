"""The execution engine: every case of a dataset through one or more agents, nothing lost.

Runs are async with a bounded number in flight; each attempt has a timeout; errors an adapter
marks transient are retried with exponential backoff; every case and trial yields an
``AgentRun``, whatever the agent did. Sync agents run in a thread pool as large as the
concurrency limit (see ``run_sync``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .config import RunConfig
from .dataset import EvalCase, EvalDataset
from .errors import AdapterError, AgentOutputError
from .protocol import AgentRequest, AgentRunnable
from .types import AgentOutput, AgentRun, Message

__all__ = ["RunConfig", "run_agents", "run_sync", "run_coroutine", "describe_error", "is_transient"]

T = TypeVar("T")
_timeout_scope = getattr(asyncio, "timeout", None)  # Python 3.11+

_executor: contextvars.ContextVar[ThreadPoolExecutor | None] = contextvars.ContextVar(
    "levelfield_executor", default=None
)


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking call in the runner's worker threads (as many as its concurrency)."""
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, fn, *args, **kwargs)
    return await loop.run_in_executor(_executor.get(), call)


def run_coroutine(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="levelfield-run")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: those an adapter marks transient."""
    return bool(getattr(exc, "transient", False)) or getattr(exc, "error_type", None) == "transient"


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(error text, error type) for a failed run."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc):
        return "timed out", "timeout"
    error_type = getattr(exc, "error_type", None) or type(exc).__name__
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, AdapterError):
        text = f"{type(exc).__name__}: {text}"
    return text, error_type


class _Progress:
    def __init__(self, total: int, enabled: bool, desc: str) -> None:
        self.failures = 0
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="run", leave=False, dynamic_ncols=True)

    def update(self, run: AgentRun) -> None:
        if run.failure:
            self.failures += 1
        if self.bar is not None:
            if run.failure:
                self.bar.set_postfix(failures=self.failures, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


async def _attempt(agent: AgentRunnable, request: AgentRequest, timeout: float | None) -> AgentOutput:
    if timeout is None:
        output = await agent.arun(request)
    elif _timeout_scope is not None:
        # asyncio.timeout cancels in place; wait_for would wrap every run in one more task.
        async with _timeout_scope(timeout):
            output = await agent.arun(request)
    else:
        output = await asyncio.wait_for(agent.arun(request), timeout)
    if not isinstance(output, AgentOutput):
        raise AgentOutputError(
            f"agent {agent.name!r} returned {type(output).__name__} from arun(); an adapter must return AgentOutput"
        )
    return output


async def _run_turn(
    agent: AgentRunnable, request: AgentRequest, config: RunConfig
) -> tuple[AgentOutput | None, BaseException | None, float, int]:
    attempt = 0
    while True:
        attempt += 1
        start = time.perf_counter()
        try:
            output = await _attempt(agent, request, config.timeout)
            return output, None, time.perf_counter() - start, attempt
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every failure is recorded, never raised
            latency = time.perf_counter() - start
            if attempt <= config.retries and is_transient(exc):
                delay = config.backoff * (2 ** (attempt - 1))
                await asyncio.sleep(delay * (0.5 + random.random()))
                continue
            return None, exc, latency, attempt


async def run_case(agent: AgentRunnable, case: EvalCase, trial: int, config: RunConfig, run_id: str) -> AgentRun:
    """Run one case (all its turns) once; always returns an AgentRun."""
    session_id = f"lf-{run_id}-{case.case_id}-{trial}"
    prompts = [t.prompt for t in case.turns] if case.turns else [case.prompt or ""]
    history: list[Message] = list(case.history)
    turns: list[AgentOutput] = []
    latency = 0.0
    attempts = 0
    for index, prompt in enumerate(prompts):
        # The fields are already validated (they come from an EvalCase): skip re-validation.
        request = AgentRequest.model_construct(
            prompt=prompt,
            history=list(history),
            case_id=case.case_id,
            session_id=session_id,
            turn=index,
            state=dict(case.state),
        )
        output, error, turn_latency, turn_attempts = await _run_turn(agent, request, config)
        latency += turn_latency
        attempts = max(attempts, turn_attempts)
        if error is not None:
            text, error_type = describe_error(error)
            if len(prompts) > 1:
                text = f"turn {index + 1} of {len(prompts)}: {text}"
            partial = getattr(error, "partial", None)
            if partial is None and hasattr(agent, "partial_output"):
                # Adapters that track progress (e.g. a timed-out graph) can say what they had.
                try:
                    partial = agent.partial_output(request)
                except Exception:
                    partial = None
            return AgentRun(
                case_id=case.case_id,
                agent_name=agent.name,
                trial=trial,
                output=None,
                latency_in_seconds=latency,
                failure=True,
                error=text,
                error_type=error_type,
                attempts=attempts,
                partial_output=partial if isinstance(partial, AgentOutput) else None,
                turns=turns,
            )
        turns.append(output)
        if index + 1 < len(prompts):
            history += [Message(role="user", content=prompt), Message(role="assistant", content=output.response)]
    return AgentRun(
        case_id=case.case_id,
        agent_name=agent.name,
        trial=trial,
        output=turns[-1],
        latency_in_seconds=latency,
        failure=False,
        attempts=attempts,
        turns=turns if len(turns) > 1 else [],
    )


async def run_agents(
    dataset: EvalDataset,
    agents: Sequence[AgentRunnable],
    config: RunConfig,
    *,
    on_run: Callable[[AgentRun], None] | None = None,
    done: Mapping[tuple[str, str, int], AgentRun] | None = None,
) -> dict[str, list[AgentRun]]:
    """Every agent on every case and trial; runs per agent in dataset order, then trial order.

    ``on_run(run)`` is called as each run finishes (e.g. to score it while others are in flight).
    ``done`` maps (agent name, case id, trial) to runs finished earlier (a resumed journal): they
    are returned as they are, not run again, and ``on_run`` is not called for them.
    """
    dataset.require_prompts()
    done = done or {}
    run_id = uuid.uuid4().hex[:8]
    limit = asyncio.Semaphore(config.concurrency)
    per_agent = {
        a.name: asyncio.Semaphore(config.agent_concurrency[a.name])
        for a in agents
        if a.name in config.agent_concurrency
    }
    plan = [(a, case, trial) for a in agents for case in dataset for trial in range(config.trials)]
    jobs = [job for job in plan if (job[0].name, job[1].case_id, job[2]) not in done]
    desc = agents[0].name if len(agents) == 1 else f"{len(agents)} agents"
    progress = _Progress(len(jobs), config.progress, desc)

    async def one(agent: AgentRunnable, case: EvalCase, trial: int) -> AgentRun:
        own = per_agent.get(agent.name)
        if own is not None:
            await own.acquire()
        try:
            async with limit:
                run = await run_case(agent, case, trial, config, run_id)
        finally:
            if own is not None:
                own.release()
        if on_run is not None:
            on_run(run)
        progress.update(run)
        return run

    executor = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="levelfield")
    token = _executor.set(executor)
    # Objects that exist before the runs start outlive them: keep the garbage collector from
    # re-scanning that whole heap mid-run (a full collection holds the GIL for tens of ms,
    # stalling every run in flight). They return to the collector when the runs end.
    gc.freeze()
    try:
        fresh = iter(await asyncio.gather(*(one(*job) for job in jobs)))
    finally:
        gc.unfreeze()
        _executor.reset(token)
        progress.close()
        # Threads of sync agents that timed out may still be running: don't wait for them.
        executor.shutdown(wait=False, cancel_futures=True)
    out: dict[str, list[AgentRun]] = {a.name: [] for a in agents}
    for agent, case, trial in plan:
        kept = done.get((agent.name, case.case_id, trial))
        out[agent.name].append(kept if kept is not None else next(fresh))
    return out
