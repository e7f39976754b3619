"""What a run command's options ask for, built and checked before any agent runs: the cases, the
user simulator, the RunConfig and StatsConfig, the dataset, metrics and agents, tools and faults."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .arguments import UsageError, judge_of, model_spec

if TYPE_CHECKING:
    from .._core.stats.config import StatsConfig

__all__ = ["some_cases", "simulator_of", "run_config", "executor_of", "load_inputs", "refuse_unscorable",
           "tool_cassette", "faults_of", "stats_config", "check_gate_options"]


def some_cases(args: argparse.Namespace, dataset: Any) -> Any:
    """The dataset, or the part ``--limit`` / ``--sample`` asks for; ``args.cases_note`` says which."""
    limit, sample, seed = getattr(args, "limit", None), getattr(args, "sample", None), getattr(args, "seed", None)
    args.cases_note = ""
    if limit is not None and sample is not None:
        raise UsageError("--limit and --sample both pick cases: give one")
    if seed is not None and sample is None and not getattr(args, "stop_early", False):
        raise UsageError("--seed goes with --sample N (the seed of the random draw) or --stop-early (the case order)")
    total = len(dataset)
    if limit is not None:
        dataset = dataset.head(limit)
        args.cases_note = f" (the first {len(dataset)} of {total}: --limit {limit})"
    elif sample is not None:
        dataset = dataset.sample(sample, seed=seed or 0)
        args.cases_note = f" ({len(dataset)} of {total} drawn at random: --sample {sample} --seed {seed or 0})"
    return dataset


def simulator_of(args: argparse.Namespace) -> Any:
    """The user simulator the command line asks for, or None (built before any agent runs):
    ``module:attr`` (a simulator such as ``lf.testing.ScriptedUser``, or a chat model; a ``make_*``
    factory is called), else a LangChain ``provider:model`` string."""
    spec = getattr(args, "simulator", None)
    if not spec:
        if getattr(args, "max_turns", None) is not None:
            raise UsageError("--max-turns needs --simulator SPEC")
        return None
    from ..simulation import SimulatedUser
    from ..simulation.llm import UserSimulator

    model = model_spec(spec)
    if isinstance(model, SimulatedUser):
        if args.max_turns is not None:
            raise UsageError(f"--max-turns: --simulator {spec} is a simulator object; set its max_turns where it is made")
        return model
    if not isinstance(model, str) and not hasattr(model, "ainvoke"):
        raise UsageError(f"--simulator {spec}: {type(model).__name__} is neither a user simulator "
                         "(lf.UserSimulator, lf.testing.ScriptedUser) nor a LangChain chat model")
    if args.max_turns is None:
        return UserSimulator(model)
    return UserSimulator(model, max_turns=args.max_turns)



def run_config(args: argparse.Namespace) -> Any:
    """The RunConfig the command line asks for (checked before any agent runs)."""
    from .._core.data.config import RunConfig

    if (args.resume or args.overwrite) and not args.out:
        raise UsageError("--resume and --overwrite need --out DIR (the folder of the run record)")
    return RunConfig(
        executor=executor_of(args),
        concurrency=args.concurrency,
        timeout=args.timeout,
        retries=args.retries,
        trials=args.trials,
        progress=not args.quiet,
        out=args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        isolation=getattr(args, "isolation", "none"),
        max_response_bytes=args.max_response,
        adaptive=getattr(args, "adaptive", True),
        a2a_preflight=getattr(args, "a2a_preflight", True),
        a2a_probe=getattr(args, "a2a_probe", False),
        requests_per_minute=_rates(getattr(args, "rpm", []), "--rpm"),
        tokens_per_minute=_rates(getattr(args, "tpm", []), "--tpm"),
        prices=getattr(args, "prices", None),
        max_cost_usd=getattr(args, "max_cost", None),
        judge_max_cost_usd=getattr(args, "judge_max_cost", None),
    )


def executor_of(args: argparse.Namespace) -> Any:
    """``--executor`` and ``--ray-address`` as a RunConfig executor."""
    executor = getattr(args, "executor", "local")
    address = getattr(args, "ray_address", None)
    if address and executor != "ray":
        raise UsageError("--ray-address needs --executor ray")
    if address:
        from ..executors.ray import RayExecutor

        return RayExecutor(address=address)
    return executor


def load_inputs(args: argparse.Namespace, specs: Sequence[tuple[str | None, str]]) -> tuple[Any, list[Any], list[Any]]:
    """Dataset, metrics and agents, all checked before any agent runs."""
    from .output import status

    status(f"loading {args.dataset} and {len(specs)} agent{'s' if len(specs) != 1 else ''}...", quiet=args.quiet)
    from ..adapters.spec import SpecAgent, agent_from_spec
    from ..formats.files import load_dataset

    args.user_simulator = simulator_of(args)
    dataset = some_cases(args, load_dataset(args.dataset))
    metrics = metrics_of(args)
    refuse_unscorable(args, dataset, metrics)
    check_fail_under(args, metrics)
    agents = []
    ship = getattr(args, "executor", "local") != "local"
    for name, spec in specs:
        try:
            if ship:  # the spec travels to the Ray workers as a string; each builds the agent itself
                agents.append(SpecAgent(spec, name=name))
            else:
                agents.append(agent_from_spec(spec, name=name, isolation=getattr(args, "isolation", "none")))
        except TypeError as exc:
            raise UsageError(f"agent {spec!r}: {exc}") from None
    for agent in agents:  # an A2A agent's card is read (for its name) within the run's timeout, as a whole
        if args.timeout is not None and hasattr(agent, "card_timeout"):
            agent.card_timeout = args.timeout
    seen = [a.name for a in agents]
    repeated = sorted({n for n in seen if seen.count(n) > 1})
    if repeated:
        raise UsageError(f"two agents are named {repeated[0]!r}: name them with --agent NAME=SPEC")
    say_resumed(args)
    return dataset, metrics, agents


def say_resumed(args: argparse.Namespace) -> None:
    """``--resume``: how many runs the journal already holds (kept, not run again), said before the runs start."""
    from pathlib import Path

    from .output import status

    path = Path(args.out) / "runs.jsonl" if getattr(args, "resume", False) and getattr(args, "out", None) else None
    if path is None or not path.is_file():
        return
    with path.open("rb") as f:
        held = sum(1 for line in f if line.startswith(b'{"kind":"run"'))
    status(f"resuming {args.out}: its journal holds {held:,} finished run{'s' if held != 1 else ''}, kept as they are; "
           "only the runs it lacks run now", quiet=args.quiet)


def refuse_unscorable(args: argparse.Namespace, dataset: Any, metrics: Sequence[Any]) -> None:
    """A metric asked for with --metric whose reference column no case has could score no row: refused
    before any agent runs (a default metric is run, and the warning says why it shows '-')."""
    if not args.metrics:
        return
    from .._core.run.notices import missing_references

    for missing in missing_references(list(dataset), metrics):
        if missing.everywhere:
            raise UsageError(missing.message(dataset.source, fix="Add the column, or leave out that --metric"))



def metrics_of(args: argparse.Namespace) -> list[Any]:
    """``--metric NAME`` (built-in or registered) or ``--metric module:attr`` (a Metric class or object
    in an importable module, e.g. your own) as metric objects; an unknown name says what the CLI takes."""
    from .._core.errors import MetricError
    from .._core.score.metrics.registry import resolve_metrics

    specs: list[Any] = []
    for name in args.metrics or []:
        specs.append(_imported_metric(name) if ":" in name else name)
    try:
        return resolve_metrics(specs or None, judge=judge_of(args))
    except MetricError as exc:
        if not str(exc).startswith("unknown metric"):
            raise
        raise UsageError(f"--metric: {exc}. The command line takes metric names, or module:attr for a metric of "
                         "your own: a Metric class or object in an importable module (e.g. --metric "
                         "my_metrics:ConciseAnswer); from Python, lf.register_metric(name, factory) makes a name") from None


def _imported_metric(spec: str) -> Any:
    import importlib
    import os
    import sys

    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--metric {spec}: cannot import module {module_name!r} ({exc}); give a metric name, or "
                         "module:attr of an importable module") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"--metric {spec}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as exc:
            raise UsageError(f"--metric {spec}: the class cannot be made without arguments ({exc}); give an "
                             "object made with them (module:attr naming the object)") from None
    return obj


def check_fail_under(args: argparse.Namespace, metrics: Sequence[Any]) -> None:
    """Each ``--fail-under METRIC=VALUE`` names a metric of the run, and a score from 0 to 1 is given as one."""
    from .._core.score.metrics.registry import SCORED_0_TO_1

    names = {m.name for m in metrics}
    for metric, floor in args.fail_under:
        if metric not in names:
            raise UsageError(f"--fail-under {metric}: not one of the metrics of this run ({', '.join(sorted(names))})")
        if floor > 1 and metric in SCORED_0_TO_1:
            percent = f": {metric}={floor / 100:g}, not {floor:g}" if 2 <= floor <= 100 else " (from 0 to 1)"
            raise UsageError(f"--fail-under {metric}={floor:g}: {metric} scores from 0 to 1, so no mean reaches "
                             f"{floor:g}; give the floor as a share{percent}")


def tool_cassette(args: argparse.Namespace) -> Any:
    """``--tools FILE --tools-mode MODE --tools-missing POLICY`` as a ToolCassette (None without --tools)."""
    path = getattr(args, "tools", None)
    mode, missing = getattr(args, "tools_mode", None), getattr(args, "tools_missing", None)
    overwrite = bool(getattr(args, "tools_overwrite", False))
    if path is None:
        unused = [flag for flag, given in (("--tools-mode", mode), ("--tools-missing", missing),
                                           ("--tools-overwrite", overwrite)) if given]
        if unused:
            raise UsageError(f"{', '.join(unused)}: only with --tools FILE")
        return None
    if overwrite and mode != "record":
        raise UsageError("--tools-overwrite: only with --tools-mode record")
    from ..tools.cassette import ToolCassette

    return ToolCassette(path, mode=mode or "replay", on_missing=missing or "error", overwrite=overwrite)


def faults_of(args: argparse.Namespace) -> Any:
    """``--faults RATE --fault-seed N --fault-kinds K,...`` as Faults (None without --faults)."""
    rate, seed = getattr(args, "faults", None), getattr(args, "fault_seed", None)
    kinds = getattr(args, "fault_kinds", None)
    if rate is None:
        unused = [flag for flag, given in (("--fault-seed", seed is not None), ("--fault-kinds", kinds)) if given]
        if unused:
            raise UsageError(f"{', '.join(unused)}: only with --faults RATE")
        return None
    from ..tools.faults import FAULT_KINDS, Faults

    chosen = FAULT_KINDS if kinds is None else [k.strip() for k in kinds.split(",") if k.strip()]
    return Faults(rate=rate, kinds=chosen, seed=seed or 0)



def stats_config(args: argparse.Namespace) -> StatsConfig:
    """The statistics options the command line gives (the rest keep ``StatsConfig``'s defaults)."""
    from .._core.stats.config import StatsConfig

    given = {name: getattr(args, name) for name in ("failed_runs", "alpha", "margin", "judge_scores") if getattr(args, name, None) is not None}
    if getattr(args, "stop_early", False) and getattr(args, "seed", None) is not None:
        given["seed"] = args.seed  # the random order of the cases
    return StatsConfig(**given)


def check_gate_options(args: argparse.Namespace, metrics: Sequence[Any]) -> None:
    """Refuse bad gate options before any agent runs."""
    if getattr(args, "allow_different_evaluators", False) and not getattr(args, "baseline", None):
        raise UsageError("--allow-different-evaluators applies to a comparison with --baseline DIR; give one or leave it out")
    gated = getattr(args, "fail_if_worse", None)
    if gated is None:
        return
    if not args.baseline:
        raise UsageError("--fail-if-worse needs --baseline DIR (the saved run to compare against)")
    names = {m.name for m in metrics}
    unknown = [m for m in (x.strip() for x in gated.split(",")) if m and m not in names]
    if unknown:
        raise UsageError(f"--fail-if-worse {', '.join(unknown)}: not one of the metrics of this run ({', '.join(sorted(names))})")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha {args.alpha:g}: must be between 0 and 1")
    if args.margin < 0:
        raise UsageError(f"--margin {args.margin:g}: must be at least 0 (in the metric's units, 0.02 = 2 points)")


def _rates(given: Sequence[tuple[str | None, int]], flag: str) -> int | dict[str, int] | None:
    """``--rpm`` / ``--tpm`` values as RunConfig takes them: one number, or one per name."""
    if not given:
        return None
    plain = [rate for name, rate in given if name is None]
    named = {name: rate for name, rate in given if name is not None}
    if plain and named:
        raise UsageError(f"{flag}: give either one N for every agent or NAME=N entries, not both")
    if len(plain) > 1:
        raise UsageError(f"{flag} N was given {len(plain)} times: give it once (or NAME=N per agent)")
    return plain[0] if plain else named
