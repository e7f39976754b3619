"""How runs execute: one ``RunConfig`` whose defaults are defined here, and nowhere else.

Every entry point (``evaluate``, ``compare``, their async twins, ``EvalTask``, ``check_eval``,
``assert_eval``, the CLI) takes ``config=RunConfig(...)`` and/or the same names as keywords::

    lf.evaluate(ds, agent, concurrency=16, timeout=60, out="results/")
    lf.evaluate(ds, agent, config=lf.RunConfig(concurrency=16), trials=3)   # keywords win
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from ..errors import ConfigError
from .prices import price_table

__all__ = ["RunConfig", "RunOptions", "run_config", "options_applied", "ISOLATION_MODES", "EXECUTORS", "DEFAULT_MAX_RESPONSE_BYTES", "parse_size"]

ISOLATION_MODES = ("none", "process")
"""Where agents run: ``"none"`` in this process (async agents on the event loop, sync ones on
daemon threads), ``"process"`` in worker processes (see ``levelfield._core.run.isolation``)."""

EXECUTORS = ("local", "ray")
"""Where runs execute, by name: ``"local"`` (this machine) or ``"ray"`` (a Ray cluster; see
``levelfield.executors``). An executor object (``lf.RayExecutor(...)``) says where with its settings."""

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest answer an adapter reads from a server by default (32 MiB)."""

_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "K": 1 << 10, "MB": 1 << 20, "M": 1 << 20, "GB": 1 << 30, "G": 1 << 30}


def parse_size(text: str) -> int:
    """A size written for people (``"32MB"``, ``"512 KB"``, ``"1000000"``; KB = 1024 bytes) in bytes."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if match is None or unit not in _UNITS:
        raise ConfigError(f"{text!r} is not a size: write bytes or a number with KB, MB or GB (e.g. 32MB)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 1:
        raise ConfigError(f"{text!r}: a size must be at least 1 byte")
    return size


@dataclass(frozen=True)
class RunConfig:
    """How every run of an evaluation or comparison executes; the same for every agent."""

    concurrency: int = 8
    """Runs in flight at once, all agents together."""
    timeout: float | None = 120.0
    """Seconds per attempt of one turn; None for no timeout."""
    retries: int = 2
    """Retries of errors an adapter marks transient (connection refused, HTTP 429/503)."""
    backoff: float = 0.5
    """Seconds the first retry waits at most; doubles with each retry (up to 60 s), the wait drawn
    uniformly below it ("full jitter", ``levelfield._core.run.retry``)."""
    trials: int = 1
    """Runs of every case per agent."""
    progress: bool = True
    """Show a progress bar."""
    agent_concurrency: Mapping[str, int] = field(default_factory=dict)
    """Per-agent caps on runs in flight, ``{"agent name": n}`` (a rate-limited endpoint)."""
    out: str | Path | None = None
    """A folder: every finished run is journaled to ``out/runs.jsonl`` as it finishes, and the
    results (metrics table, summary, report) are written there at the end."""
    resume: bool = False
    """Run only what the journal in ``out`` lacks, then write every output as an uninterrupted run would."""
    overwrite: bool = False
    """Replace a run record already in ``out`` (otherwise that is an error: nothing is lost by accident)."""
    isolation: str = "none"
    """``"process"``: agents run in worker processes, so a crash (a segfault, ``os._exit``) fails
    that run only; agents must then be picklable or ``"pkg.mod:attr"`` spec strings."""
    workers: int = 1
    """Processes that score saved predictions (``-1``: one per core); batches are scored in
    parallel, in bounded memory (see ``levelfield._core.score.batch``)."""
    executor: Any = "local"
    """Where runs execute: ``"local"`` (this process, the default), ``"ray"`` (a Ray cluster at
    ``RAY_ADDRESS``, else a local Ray), or an executor object such as
    ``lf.RayExecutor(address="auto", num_workers=4)``. The results are the same."""
    max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES
    """The largest answer a remote agent (A2A) may send, in bytes, counted while it is read: a larger
    one stops the read and fails the run as ``response_too_large``. None for no cap."""
    adaptive: bool = True
    """Follow each endpoint's rate limits (agent, A2A host, judge, simulator): on HTTP 429/503 its calls
    in flight drop to what it carries and grow back slowly; a refused call waits its ``Retry-After``
    and is tried again without counting as a failed attempt (``levelfield._core.run.limits``).
    ``concurrency`` is the ceiling. False: a fixed ``concurrency``, rate-limit answers are retried as
    any transient error."""
    requests_per_minute: int | Mapping[str, int] | None = None
    """Calls a minute at most, per endpoint: one number for every agent, or ``{"agent name": n}``
    (``"judge"``, ``"simulator"`` name the judge and the simulated user). None: no such limit."""
    tokens_per_minute: int | Mapping[str, int] | None = None
    """Tokens a minute at most, per endpoint, counted from the usage calls report; as ``requests_per_minute``."""
    prices: Mapping[str, Any] | str | Path | None = None
    """Your own prices, ``{"model": {"input_per_mtok": ..., "output_per_mtok": ...}}`` (dollars per
    million tokens) or a JSON file of them; they override genai-prices' (``levelfield[cost]``)."""
    max_cost_usd: float | None = None
    """The dollars the agents' runs (the simulator's included) may spend together. Each agent's next
    run is estimated from its own runs so far (their mean cost, scaled up for a longer input once its
    runs show length costs) and starts only if that fits in what is left; an agent whose next run
    would not fit stops, the others go on. An estimate-based stop, not a hard cap: a run that costs
    more than expected (or an agent's first, of unknown cost) can pass it. ``result.budget`` /
    ``cmp.budget`` say what each agent spent and how many of its runs were not started; they are
    left for ``resume=True`` with a larger budget. With ``resume`` it is the total of the record,
    the journaled runs' spend included. See ``levelfield._core.data.cost_limit.RunBudget``."""
    a2a_preflight: bool = True
    """Check that each A2A agent speaks the protocol: its card before the first case, then the evaluation's
    own answers as they arrive (parts, task states, errors, ``Retry-After``); no message of its own is sent
    (see ``a2a_probe``). Kept in the run record, shown in the report and ``view`` beside the agent, warned
    about when a check fails. False: the card is not checked and nothing is recorded."""
    a2a_probe: bool = False
    """Also send each A2A agent probe messages before the first case (send and stream, with the first case's
    prompt; what ``levelfield a2a-check`` sends): two more tasks the agent runs. Only for an agent without
    side effects (one that books, pays or writes would do it again)."""
    judge_max_cost_usd: float | None = None
    """Stop sending rows to LLM judges once their spend would pass this many dollars; the rows not
    judged score NaN (a judge failure) and are judged again by ``resume=True`` with a larger budget."""

    def __post_init__(self) -> None:
        def bad(option: str, value: Any, rule: str) -> ConfigError:
            return ConfigError(f"{option}={value!r}: {rule}")

        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise bad("concurrency", self.concurrency, "must be a whole number >= 1")
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise bad("trials", self.trials, "must be a whole number >= 1")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise bad("retries", self.retries, "must be a whole number >= 0")
        if self.timeout is not None and (isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))
                                         or not 0 < self.timeout < math.inf):
            raise bad("timeout", self.timeout, "must be a number of seconds > 0, or None for no timeout")
        if isinstance(self.backoff, bool) or not isinstance(self.backoff, (int, float)) or not 0 <= self.backoff < math.inf:
            raise bad("backoff", self.backoff, "must be a number of seconds >= 0")
        caps = dict(self.agent_concurrency or {})
        for name, cap in caps.items():
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise bad("agent_concurrency", {name: cap}, "each cap must be a whole number >= 1")
        object.__setattr__(self, "agent_concurrency", caps)
        if self.isolation not in ISOLATION_MODES:
            raise bad("isolation", self.isolation, "must be 'none' (agents run in this process) or 'process' (each run "
                      "in a worker process, so a crash kills the worker, not the evaluation)")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or (self.workers < 1 and self.workers != -1):
            raise bad("workers", self.workers, "must be a whole number >= 1, or -1 for one per core")
        if isinstance(self.executor, str):
            if self.executor not in EXECUTORS:
                raise bad("executor", self.executor, "must be 'local' (this machine), 'ray' (a Ray cluster) or an "
                          "executor object such as lf.RayExecutor(address=...)")
        elif not (callable(getattr(self.executor, "run_agents", None)) and callable(getattr(self.executor, "check", None))):
            raise bad("executor", self.executor, "must be 'local', 'ray' or an executor object such as "
                      "lf.RayExecutor(...) (one with check() and run_agents())")
        if not isinstance(self.adaptive, bool):
            raise bad("adaptive", self.adaptive, "must be True (follow the endpoints' rate limits) or False")
        if not isinstance(self.a2a_preflight, bool):
            raise bad("a2a_preflight", self.a2a_preflight, "must be True (check A2A agents before the first case) or False")
        if not isinstance(self.a2a_probe, bool):
            raise bad("a2a_probe", self.a2a_probe, "must be True (send A2A agents probe messages before the first case: "
                      "only for agents without side effects) or False (the default: no message of levelfield's own)")
        for option in ("requests_per_minute", "tokens_per_minute"):
            object.__setattr__(self, option, _per_minute(option, getattr(self, option)))
        cap = self.max_response_bytes
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise bad("max_response_bytes", cap, "must be a whole number of bytes >= 1, or None for no cap")
        if self.prices is not None:
            object.__setattr__(self, "prices", price_table(self.prices))
        for option in ("max_cost_usd", "judge_max_cost_usd"):
            value = getattr(self, option)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 < value < math.inf):
                raise bad(option, value, "must be a number of dollars > 0 (the most the calls may spend), "
                                         "or None for no budget")
        if self.resume and self.out is None:
            raise ConfigError("resume=True needs out=...: the folder whose runs.jsonl journal to resume")
        if self.resume and self.overwrite:
            raise ConfigError("resume=True and overwrite=True contradict each other: pick one")

    @property
    def worker_count(self) -> int:
        """``workers`` as a number of processes (``-1``: the cores this process may use)."""
        if self.workers != -1:
            return self.workers
        import os

        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    @property
    def out_dir(self) -> Path | None:
        """``out`` as a Path, or None."""
        return None if self.out is None else Path(self.out)

    def replace(self, **options: Any) -> RunConfig:
        """A copy with some options changed (names checked)."""
        return run_config(self, **options)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values (for the run record)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["agent_concurrency"] = dict(self.agent_concurrency)
        for option in ("requests_per_minute", "tokens_per_minute"):
            value = out[option]
            out[option] = dict(value) if isinstance(value, Mapping) else value
        out["out"] = None if self.out is None else str(self.out)
        # An executor object is recorded as what it says it is (its settings), not as its state.
        out["executor"] = self.executor if isinstance(self.executor, str) else repr(self.executor)
        return out


class RunOptions(TypedDict, total=False):
    """The keywords every entry point accepts; see :class:`RunConfig` for what each means."""

    concurrency: int
    timeout: float | None
    retries: int
    backoff: float
    trials: int
    progress: bool
    agent_concurrency: Mapping[str, int]
    out: str | Path | None
    resume: bool
    overwrite: bool
    isolation: str
    workers: int
    executor: Any
    max_response_bytes: int | None
    adaptive: bool
    requests_per_minute: int | Mapping[str, int] | None
    tokens_per_minute: int | Mapping[str, int] | None
    prices: Mapping[str, Any] | str | Path | None
    max_cost_usd: float | None
    a2a_preflight: bool
    a2a_probe: bool
    judge_max_cost_usd: float | None


def _per_minute(option: str, value: Any) -> int | dict[str, int] | None:
    """A ``requests_per_minute`` / ``tokens_per_minute`` value checked: None, a whole number >= 1, or names to those."""
    def rate(v: Any) -> bool:
        return not isinstance(v, bool) and isinstance(v, int) and v >= 1

    if value is None or rate(value):
        return value
    if isinstance(value, Mapping):
        bad = {k: v for k, v in value.items() if not isinstance(k, str) or not rate(v)}
        if not bad:
            return dict(value)
        value = bad
    raise ConfigError(f"{option}={value!r}: must be a whole number >= 1 (for every agent), or "
                      f"{{'agent name': n}} (also 'judge', 'simulator'), or None for no limit")


_NAMES = tuple(f.name for f in fields(RunConfig))


def _keywords(function: Any) -> list[str]:
    """The named parameters of ``function`` (not its ``**options``), in order; [] for None."""
    if function is None:
        return []
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


def run_config(config: RunConfig | None = None, /, *, _function: Any = None, **options: Any) -> RunConfig:
    """``config`` (or the defaults) with ``options`` applied; an unknown option is a clear error. ``_function``:
    the public function (``evaluate``, ``compare``) whose ``**options`` these are: a misspelt keyword of its
    own (``metric=``) is then suggested from its keywords too (``metrics``), not only from the run options."""
    return options_applied(RunConfig, config, options, argument="config", kind="run option", function=_function)


T = TypeVar("T")


def options_applied(cls: type[T], config: T | None, options: Mapping[str, Any], *, argument: str, kind: str,
                    function: Any = None) -> T:
    """``config`` (or ``cls()``'s defaults) with ``options`` replaced, for a frozen dataclass of options;
    a wrong kind of ``config`` or an unknown option name is a ``ConfigError`` naming the nearest name (among
    ``function``'s own keywords too, when given)."""
    if config is not None and not isinstance(config, cls):
        raise ConfigError(f"{argument}={config!r}: expected an lf.{cls.__name__}(...)")
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    unknown = [k for k in options if k not in names]
    if unknown:
        own = _keywords(function)
        hints = []
        for name in unknown:
            # The function's own keywords first: metric= is a misspelt metrics=, not retries=.
            close = difflib.get_close_matches(name, own, n=1, cutoff=0.75) or difflib.get_close_matches(name, names, n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        if own:
            label = getattr(function, "__name__", "it")
            raise ConfigError(f"{label}() got an unknown keyword {', '.join(hints)}; its keywords are: {', '.join(own)}; "
                              f"and the {kind}s: {', '.join(names)}")
        raise ConfigError(f"unknown {kind} {', '.join(hints)}; the options are: {', '.join(names)}")
    base = config if config is not None else cls()
    return replace(base, **options) if options else base  # type: ignore[type-var]
