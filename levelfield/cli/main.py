"""The ``levelfield`` command: demo, eval, compare, report, plan, view, watch (and serve, from the A2A adapter).

Exit codes: 0 done; 1 a ``--fail-under`` threshold was missed, ``--fail-if-worse`` found a
significant regression against ``--baseline``, every run of an agent failed (unless
``--allow-failures``), or most rows of a judged metric failed because no parser could read the
judge's answers (``--judge``); 2 bad input (agent spec, dataset, metric, option, saved run, an ``--out``
folder of other files, a ``--metric`` whose reference column no case has), reported as one line
on stderr, before any agent runs, or a gate that cannot decide (``--require-certified-judge`` with
a judge not certified against ``--human-labels``; ``judge-check`` tells why). Warnings (a reference
some cases lack, an agent that never called a tool, a resumed journal whose references or metrics
changed) print as ``levelfield CMD: warning: ...`` lines and do not change the exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import budget as _budget, judge_of as _judge, model_spec as _model_spec
from .arguments import http_url, number, port, probability, share, whole

if TYPE_CHECKING:
    from ..comparison import Comparison
    from ..comparison_text import format_comparison
    from .._core.stats.config import StatsConfig

__all__ = ["main", "format_summary", "format_comparison"]


def __getattr__(name: str) -> Any:
    # The text of a comparison needs pandas: it loads when a command prints one, not at start-up.
    if name == "format_comparison":
        from ..comparison_text import format_comparison

        return format_comparison
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")



class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit code 2."""


def format_summary(rows: dict[str, dict], metric_names: Sequence[str]) -> str:
    """A plain-text table: one row per agent, mean of each metric, failures and mean latency."""
    import pandas as pd

    table = pd.DataFrame(
        {
            name: {
                **{m: s.get(f"{m}/mean") for m in metric_names},
                "failures": s.get("failure/count", 0),
                "latency_s": s.get("latency_in_seconds/mean"),
            }
            for name, s in rows.items()
        }
    ).T
    return table.to_string(float_format=lambda v: f"{v:.3f}")


# -- argument types ----------------------------------------------------------------------------


_positive_int = whole(1)


def _timeout(text: str) -> float | None:
    if text.lower() in ("none", "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (or 'none'), got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds more than 0, or 'none' for no timeout")
    return value


def _max_response(text: str) -> int | None:
    from .._core.data.config import parse_size
    from .._core.errors import ConfigError

    if text.lower() == "none":
        return None
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _per_minute(text: str) -> tuple[str | None, int]:
    """``--rpm N`` / ``--rpm NAME=N``: (None or the name, N)."""
    name, sep, value = text.rpartition("=")
    try:
        rate = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or NAME=N (a whole number per minute), got {text!r}") from None
    if rate < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 a minute, got {rate}")
    return (name.strip() or None) if sep else None, rate


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


def _threshold(text: str) -> tuple[str, float]:
    metric, sep, value = text.partition("=")
    try:
        if not sep or not metric.strip():
            raise ValueError
        bound = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (e.g. trajectory_exact_match=0.8), got {text!r}") from None
    if not math.isfinite(bound) or bound < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of 0 or more for {metric.strip()} "
                                         "(a score from 0 to 1, or a count)")
    return metric.strip(), bound


_NAME = re.compile(r"^[\w .()\-]+$")


def _named_spec(text: str) -> tuple[str | None, str]:
    """``name=SPEC`` -> (name, spec); a bare SPEC (no name) -> (None, spec)."""
    name, sep, spec = text.partition("=")
    if sep and name and _NAME.match(name) and spec:
        return name.strip(), spec
    return None, text


# -- running -----------------------------------------------------------------------------------


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more processes, or -1 for one per core")
    return value


_OUT_RUNS = ("journal every run to DIR/runs.jsonl as it finishes; at the end write metrics_table.csv, "
             "summary.json and report.html there (with pyarrow also metrics_table.parquet and summary.parquet)")
_OUT_SAVED = ("without --agent (saved predictions, any number of rows): metrics_table.parquet (metrics_table.jsonl "
              "without pyarrow) and summary.json, streamed batch by batch; no runs.jsonl and no report.html "
              "(in Python, result.save(DIR) writes the full record, explanations included)")
_OUT_REFUSED = "; a DIR that holds other files but no run record is refused unless --overwrite"


def _add_run_options(p: argparse.ArgumentParser, *, saved: bool = False, failed_runs: str = "zero") -> None:
    """The options of a run; ``failed_runs`` is the default rule, the one its Python twin uses."""
    from .._core.data.config import RunConfig

    d = RunConfig()
    p.add_argument("--metric", "-m", action="append", dest="metrics", metavar="NAME",
                   help="a metric name (repeatable; default: the trajectory metrics and rouge_l_sum). A metric "
                        "given here whose reference column (e.g. reference_trajectory) no case has is refused "
                        "before any agent runs (exit 2); a default one runs with a warning")
    p.add_argument("--out", "-o", metavar="DIR",
                   help=("with --agent: " + _OUT_RUNS + "; " + _OUT_SAVED if saved else _OUT_RUNS) + _OUT_REFUSED)
    p.add_argument("--resume", action="store_true",
                   help="with --out: run only what DIR/runs.jsonl lacks (after an interruption), then write everything")
    p.add_argument("--overwrite", action="store_true",
                   help="with --out: replace a run record already in DIR, or write into a DIR holding other files")
    p.add_argument("--concurrency", type=_positive_int, default=d.concurrency,
                   help=f"runs in flight, all agents together (default {d.concurrency})")
    p.add_argument("--timeout", type=_timeout, default=d.timeout,
                   help=f"seconds per attempt, or 'none' (default {d.timeout:g})")
    p.add_argument("--max-response", type=_max_response, default=d.max_response_bytes, metavar="SIZE",
                   help="the largest answer a remote (A2A) agent may send, e.g. 64MB, or 'none'; a larger one "
                        f"fails the run as response_too_large (default {d.max_response_bytes >> 20}MB)")
    p.add_argument("--retries", type=whole(0), default=d.retries,
                   help=f"retries of errors an adapter marks transient (default {d.retries})")
    p.add_argument("--no-a2a-preflight", dest="a2a_preflight", action="store_false",
                   help="do not check A2A agents before the first case (by default their card and a few probe "
                        "messages are checked, as levelfield a2a-check does, and the result kept in the record)")
    p.add_argument("--no-adaptive", dest="adaptive", action="store_false",
                   help="keep --concurrency fixed: by default the calls in flight to each endpoint (agent, A2A host, "
                        "judge, simulator) follow its rate limits (HTTP 429/503), with --concurrency as the ceiling, "
                        "and a rate-limited call is waited out and tried again without spending a retry")
    p.add_argument("--rpm", type=_per_minute, action="append", default=[], metavar="[NAME=]N",
                   help="requests per minute at most: N for every agent, NAME=N for one agent, judge=N, "
                        "simulator=N (repeatable)")
    p.add_argument("--tpm", type=_per_minute, action="append", default=[], metavar="[NAME=]N",
                   help="tokens per minute at most, counted from the usage the calls report; as --rpm")
    p.add_argument("--trials", type=_positive_int, default=d.trials, help=f"runs of every case per agent (default {d.trials})")
    p.add_argument("--prices", metavar="FILE",
                   help="a JSON file of your own prices, {\"model\": {\"input_per_mtok\": 0.15, \"output_per_mtok\": 0.6}} "
                        "in dollars per million tokens; they override genai-prices' (levelfield[cost])")
    p.add_argument("--max-cost", type=_budget, metavar="USD",
                   help="the dollars the agents' runs may spend: each agent's next run starts only while its "
                        "estimated cost (from that agent's runs so far) fits in what is left, and an agent whose next "
                        "run would not fit stops while the others go on (an estimate, not a hard cap); with --out, "
                        "the runs not started are finished by --resume --max-cost MORE (the limit counts the "
                        "journaled runs too)")
    p.add_argument("--judge-max-cost", type=_budget, metavar="USD",
                   help="stop sending rows to LLM judges once their spend would pass USD dollars (rows not judged "
                        "score NaN; --resume with more judges them)")
    p.add_argument("--fail-under", type=_threshold, action="append", default=[], metavar="METRIC=VALUE",
                   help="exit 1 when an agent's mean of METRIC is under VALUE (repeatable)")
    twin = "lf.compare" if failed_runs == "zero" else "lf.evaluate"
    p.add_argument("--failed-runs", choices=("zero", "exclude"), default=failed_runs,
                   help=f"a failed run scores 0 ('zero') or is left out of the means ('exclude'); default "
                        f"{failed_runs!r}, as in {twin}; when a run failed, the means by the other rule are printed too")
    p.add_argument("--allow-failures", action="store_true",
                   help="exit 0 even when every run of an agent failed (default: exit 1)")
    p.add_argument("--experiment", metavar="NAME",
                   help="log each agent's run to this MLflow experiment (MLFLOW_TRACKING_URI, else ./mlflow.db)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--isolation", choices=("none", "process"), default="none",
                   help="'process': run agents in worker processes, so a crash fails that run only (default none)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where agents run: 'local' (this process, default) or 'ray' (a Ray cluster; "
                        "needs levelfield[ray]); the results are the same")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="with --executor ray: the cluster ('auto', 'ray://host:10001'; default RAY_ADDRESS, "
                        "else a Ray started on this machine)")
    p.add_argument("--judge", metavar="SPEC",
                   help="the judge of judged metrics and criteria (final_response_match_v2, safety_v1, rubric_based_*...): "
                        "provider:model (LangChain), module:attr (a chat model, a function prompt -> answer, or an agent), "
                        "or an A2A agent's http(s):// URL")
    p.add_argument("--simulator", metavar="SPEC",
                   help="who plays the user of conversation-scenario cases (otherwise they are skipped): provider:model "
                        "(a LangChain chat model) or module:attr (a chat model, or a simulator such as lf.testing.ScriptedUser)")
    p.add_argument("--max-turns", type=_positive_int, default=None, metavar="N",
                   help="with --simulator: agent turns per conversation at most")
    p.add_argument("--tools", metavar="FILE",
                   help="a tool cassette (JSON Lines): every agent's tool calls are answered from it, or recorded into "
                        "it (see --tools-mode and docs/tools.md)")
    p.add_argument("--tools-mode", choices=("replay", "record", "record_missing"), default=None,
                   help="with --tools: replay the cassette (default), record a new one, or replay what it holds and "
                        "record the rest")
    p.add_argument("--tools-missing", choices=("error", "live"), default=None,
                   help="with --tools in replay mode: a call the cassette lacks is a tool error the agent sees "
                        "(default) or runs the live tool")
    p.add_argument("--faults", type=float, default=None, metavar="RATE",
                   help="inject seeded tool faults into this share of tool calls (0..1); the same calls meet the same "
                        "faults for every agent and every rerun")
    p.add_argument("--fault-seed", type=int, default=None, metavar="N",
                   help="with --faults: the schedule's seed (default 0)")
    p.add_argument("--fault-kinds", default=None, metavar="KIND,...",
                   help="with --faults: the kinds drawn from, comma-separated (default all: error, timeout, empty, "
                        "malformed, rate_limit, slow)")


def _add_case_options(p: argparse.ArgumentParser) -> None:
    """``--limit``, ``--sample`` and ``--seed``: run on part of the dataset."""
    p.add_argument("--limit", type=_positive_int, metavar="N", help="only the first N cases of the dataset")
    p.add_argument("--sample", type=_positive_int, metavar="N",
                   help="N cases drawn at random (the same ones for the same --seed), kept in dataset order")
    p.add_argument("--seed", type=whole(0), metavar="S",
                   help="with --sample: the random seed (default 0); with --stop-early: the seed of the case order")


def _some_cases(args: argparse.Namespace, dataset: Any) -> Any:
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


def _simulator(args: argparse.Namespace) -> Any:
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

    model = _model_spec(spec)
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



def _run_config(args: argparse.Namespace) -> Any:
    """The RunConfig the command line asks for (checked before any agent runs)."""
    from .._core.data.config import RunConfig

    if (args.resume or args.overwrite) and not args.out:
        raise UsageError("--resume and --overwrite need --out DIR (the folder of the run record)")
    return RunConfig(
        executor=_executor(args),
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
        requests_per_minute=_rates(getattr(args, "rpm", []), "--rpm"),
        tokens_per_minute=_rates(getattr(args, "tpm", []), "--tpm"),
        prices=getattr(args, "prices", None),
        max_cost_usd=getattr(args, "max_cost", None),
        judge_max_cost_usd=getattr(args, "judge_max_cost", None),
    )


def _executor(args: argparse.Namespace) -> Any:
    """``--executor`` and ``--ray-address`` as a RunConfig executor."""
    executor = getattr(args, "executor", "local")
    address = getattr(args, "ray_address", None)
    if address and executor != "ray":
        raise UsageError("--ray-address needs --executor ray")
    if address:
        from ..executors.ray import RayExecutor

        return RayExecutor(address=address)
    return executor


def _load_inputs(args: argparse.Namespace, specs: Sequence[tuple[str | None, str]]) -> tuple[Any, list[Any], list[Any]]:
    """Dataset, metrics and agents, all checked before any agent runs."""
    from .output import status

    status(f"loading {args.dataset} and {len(specs)} agent{'s' if len(specs) != 1 else ''}...", quiet=args.quiet)
    from ..adapters.spec import SpecAgent, agent_from_spec
    from ..formats.files import load_dataset
    from .._core.score.metrics.registry import resolve_metrics

    args.user_simulator = _simulator(args)
    dataset = _some_cases(args, load_dataset(args.dataset))
    metrics = resolve_metrics(args.metrics, judge=_judge(args))
    _refuse_unscorable(args, dataset, metrics)
    names = {m.name for m in metrics}
    for metric, _ in args.fail_under:
        if metric not in names:
            raise UsageError(f"--fail-under {metric}: not one of the metrics of this run ({', '.join(sorted(names))})")
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
    seen = [a.name for a in agents]
    repeated = sorted({n for n in seen if seen.count(n) > 1})
    if repeated:
        raise UsageError(f"two agents are named {repeated[0]!r}: name them with --agent NAME=SPEC")
    return dataset, metrics, agents


def _refuse_unscorable(args: argparse.Namespace, dataset: Any, metrics: Sequence[Any]) -> None:
    """A metric asked for with --metric whose reference column no case has could score no row: refused
    before any agent runs (a default metric is run, and the warning says why it shows '-')."""
    if not args.metrics:
        return
    from .._core.run.notices import missing_references

    for missing in missing_references(list(dataset), metrics):
        if missing.everywhere:
            raise UsageError(missing.message(dataset.source, fix="Add the column, or leave out that --metric"))


def _run(args: argparse.Namespace, dataset: Any, metrics: list[Any], agents: list[Any]) -> Comparison:
    import warnings

    from .output import warnings_as_lines
    from ..evaluation import compare_as
    from ..failure_summary import AllRunsFailedWarning, JudgeAnswersUnreadableWarning

    _check_gate_options(args, metrics)
    from .judge_check import check_certify_options

    check_certify_options(args, dataset, metrics)
    kind = "evaluate" if args.command == "eval" else "compare"  # the record names the command that made it
    with warnings_as_lines(args.command):
        warnings.simplefilter("ignore", AllRunsFailedWarning)  # the CLI prints its own failure summary
        warnings.simplefilter("ignore", JudgeAnswersUnreadableWarning)  # printed by _finish, with the exit code
        return compare_as(kind, dataset, {a.name: a for a in agents}, metrics, config=_run_config(args),
                       stats=_stats_config(args), baseline=getattr(args, "baseline", None),
                       stop_early=getattr(args, "stop_early", False),
                       simulator=getattr(args, "user_simulator", None), experiment=getattr(args, "experiment", None),
                       tools=_tool_cassette(args), faults=_faults(args),
                       allow_different_evaluators=getattr(args, "allow_different_evaluators", False))


def _tool_cassette(args: argparse.Namespace) -> Any:
    """``--tools FILE --tools-mode MODE --tools-missing POLICY`` as a ToolCassette (None without --tools)."""
    path = getattr(args, "tools", None)
    mode, missing = getattr(args, "tools_mode", None), getattr(args, "tools_missing", None)
    if path is None:
        unused = [flag for flag, given in (("--tools-mode", mode), ("--tools-missing", missing)) if given]
        if unused:
            raise UsageError(f"{', '.join(unused)}: only with --tools FILE")
        return None
    from ..tools.cassette import ToolCassette

    return ToolCassette(path, mode=mode or "replay", on_missing=missing or "error")


def _faults(args: argparse.Namespace) -> Any:
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


def _stop_early(value: str) -> bool | str:
    """``--stop-early METRIC`` / ``--stop-early off``."""
    return False if value.lower() in ("off", "no", "false") else value


def _stats_config(args: argparse.Namespace) -> StatsConfig:
    """The statistics options the command line gives (the rest keep ``StatsConfig``'s defaults)."""
    from .._core.stats.config import StatsConfig

    given = {name: getattr(args, name) for name in ("failed_runs", "alpha", "margin", "judge_scores") if getattr(args, name, None) is not None}
    if getattr(args, "stop_early", False) and getattr(args, "seed", None) is not None:
        given["seed"] = args.seed  # the random order of the cases
    return StatsConfig(**given)


def _finish(args: argparse.Namespace, cmp: Comparison, header: str) -> int:
    from ..comparison_text import format_comparison
    from .output import limit_lines, report_failures, report_unreadable_judges

    print(header)
    print()
    print(format_comparison(cmp))
    for line in limit_lines(cmp):
        print(line)
    failed = report_failures(cmp, command=args.command, allow_failures=getattr(args, "allow_failures", False))
    if args.out:
        out = Path(args.out)
        print()
        print(f"Report: {out / 'report.html'}")
        written = ["runs.jsonl", "metrics_table.csv", "summary.json"]
        written += [name for name in ("metrics_table.parquet", "summary.parquet") if (out / name).exists()]
        print(f"Also written: {', '.join(written)} in {out}")
    from .judge_check import certify_before_gating

    certify_before_gating(args, cmp.results, cmp.baseline.name if cmp.baseline is not None else None)
    code = _check_thresholds(cmp, args.fail_under)
    judged = {a: r for a, r in cmp.results.items() if cmp.baseline is None or a != cmp.baseline.name}
    unreadable = report_unreadable_judges(judged, cmp.metrics, command=args.command)
    return max(code, _check_baseline(args, cmp), failed, _check_budget(args, cmp), unreadable)


def _check_budget(args: argparse.Namespace, cmp: Comparison) -> int:
    """1 when --max-cost kept runs from starting: the results cover part of the plan only."""
    if not cmp.not_started:
        return 0
    again = (f"finish them with --out {args.out} --resume --max-cost MORE" if args.out
             else "give --out DIR to keep the runs and finish them later with --resume")
    budget = getattr(cmp, "budget", None)
    if budget is None:
        print(f"levelfield {args.command}: --max-cost {args.max_cost:g} reached: {len(cmp.not_started)} run(s) not "
              f"started; {again}", file=sys.stderr)
        return 1
    left = f"${budget.left_usd:.4g} left" if budget.left_usd >= 0 else f"${-budget.left_usd:.4g} over"
    print(f"levelfield {args.command}: --max-cost {args.max_cost:g} reached: ${budget.spent_usd:.4g} spent, {left}; "
          f"{len(cmp.not_started)} run(s) not started; {again}", file=sys.stderr)
    for line in budget.agent_lines():
        print(f"  {line}", file=sys.stderr)
    return 1


def _check_thresholds(cmp: Comparison, thresholds: Sequence[tuple[str, float]]) -> int:
    from ..comparison_text import num

    missed = []
    for metric, floor in thresholds:
        for agent in cmp.agents:
            mean = float(cmp.summary.loc[agent, f"{metric}/mean"])
            if math.isnan(mean) or mean < floor:
                missed.append(f"{agent}: {metric} mean {num(mean)} is under {floor:g}")
    for line in missed:
        print(f"levelfield: --fail-under: {line}", file=sys.stderr)
    return 1 if missed else 0


# -- baseline, regression gate, judge correction -----------------------------------------------


def _add_gate_options(p: argparse.ArgumentParser) -> None:
    """``--baseline``, ``--fail-if-worse``, ``--margin``, ``--alpha`` (and ``--human-labels`` on eval)."""
    p.add_argument("--baseline", metavar="DIR",
                   help="the --out folder of an earlier run: its runs join as an agent named after the folder, not re-run")
    p.add_argument("--fail-if-worse", metavar="METRIC[,METRIC...]",
                   help="exit 1 when an agent is significantly worse than --baseline on one of these metrics "
                        "(paired test, Holm-adjusted p < --alpha)")
    p.add_argument("--margin", type=number(0), default=0.0,
                   help="with --fail-if-worse: fail only when worse by more than this, in the metric's units "
                        "(0.02 = 2 points; default 0)")
    p.add_argument("--alpha", type=probability, default=0.05, help="significance level of --fail-if-worse (default 0.05)")
    p.add_argument("--judge-scores", choices=("verdict", "probability"), default=None,
                   help="what binary judged metrics' statistics and judge correction use: the judge's 0/1 verdicts "
                        "(default) or its probability of a pass per row")
    from .judge_check import add_certify_options

    add_certify_options(p)
    p.add_argument("--allow-different-evaluators", action="store_true",
                   help="compare with a --baseline whose judged scores came from other evaluators (another judge, prompt, "
                        "rubric set or metric version): warn and label the comparison instead of refusing")


def _check_gate_options(args: argparse.Namespace, metrics: Sequence[Any]) -> None:
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


def _check_baseline(args: argparse.Namespace, cmp: Comparison) -> int:
    """Print every metric's change against the baseline in words; 1 when --fail-if-worse finds a regression."""
    from .._core.stats.change import describe_change
    from ..gate import baseline_changes, check_regressions

    gated = getattr(args, "fail_if_worse", None)
    if getattr(args, "human_labels", None) is not None:
        from .._core.stats.judge_correction import correct_judged

        print()
        for agent in cmp.agents:
            if cmp.baseline is not None and agent == cmp.baseline.name:
                continue
            for correction in correct_judged(cmp.results[agent], args.human_labels, confidence=cmp.stats.confidence,
                                             judge_scores=cmp.stats.judge_scores).values():
                print(f"{agent}: {correction.describe()}")
    if cmp.baseline is None:
        if gated:
            raise UsageError("--fail-if-worse needs --baseline DIR (the saved run to compare against)")
        return 0
    if gated:  # the gate refuses (exit 2) when a gated metric has no case on both sides
        changes = check_regressions(cmp, gated).changes  # alpha and margin: cmp.stats, from --alpha/--margin
    else:
        changes = baseline_changes(cmp)
    print()
    print(cmp.baseline.describe())
    label = f"Against {cmp.baseline.name}" + (" (gated metrics, Holm-adjusted p):" if gated else " (Holm-adjusted p):")
    print(label)
    for c in changes:
        print(f"  {c.metric} ({c.agent}): {describe_change(c)}")
    failed = [c for c in changes if c.regression]
    if gated and failed:
        for c in failed:
            print(f"levelfield: --fail-if-worse: {c.metric} ({c.agent}): {describe_change(c)}", file=sys.stderr)
        return 1
    return 0


def _eval(args: argparse.Namespace) -> int:
    if getattr(args, "config", None):
        return _eval_gated(args)
    if args.agent is None:
        return _eval_saved(args)
    dataset, metrics, agents = _load_inputs(args, [(args.name, args.agent)])
    if args.human_labels:
        from .._core.stats.judge_correction import check_label_cases, read_human_labels

        args.human_labels = read_human_labels(args.human_labels)  # read and checked before any agent runs
        check_label_cases(args.human_labels, dataset)
    cmp = _run(args, dataset, metrics, agents)
    return _finish(args, cmp, f"levelfield eval: {agents[0].name} on {len(dataset)} cases of {dataset.source}{args.cases_note}")


def _eval_saved(args: argparse.Namespace) -> int:
    """``eval data --metric ...`` without ``--agent``: score the predictions the file already holds.

    Large files are read and scored a batch at a time (``--workers`` processes), the metrics table
    streamed to ``--out`` as Parquet, so a file larger than memory scores in bounded memory."""
    import time

    import warnings

    from ..comparison_text import num
    from .output import report_unreadable_judges, warnings_as_lines
    from .._core.score.metrics.registry import resolve_metrics
    from ..evaluation import evaluate
    from ..failure_summary import JudgeAnswersUnreadableWarning

    unused = [flag for flag, given in (
        ("--simulator", args.simulator), ("--baseline", args.baseline), ("--fail-if-worse", args.fail_if_worse),
        ("--name", args.name), ("--resume", args.resume), ("--isolation", args.isolation != "none"),
        ("--max-cost", args.max_cost is not None), ("--tools", args.tools), ("--faults", args.faults is not None),
        ("--allow-different-evaluators", args.allow_different_evaluators),
    ) if given]
    if unused:
        raise UsageError(f"{', '.join(unused)}: only with --agent (without one, eval scores the saved predictions in the file)")
    metrics = resolve_metrics(args.metrics, judge=_judge(args))
    names = {m.name for m in metrics}
    for metric, _ in args.fail_under:
        if metric not in names:
            raise UsageError(f"--fail-under {metric}: not one of the metrics of this run ({', '.join(sorted(names))})")
    from .judge_check import certify_before_gating, check_certify_options

    check_certify_options(args, None, metrics)
    data: Any = args.dataset
    if args.limit is not None or args.sample is not None or args.seed is not None:
        from ..formats.files import load_dataset

        data = _some_cases(args, load_dataset(args.dataset))
    start = time.perf_counter()
    with warnings_as_lines(args.command):
        warnings.simplefilter("ignore", JudgeAnswersUnreadableWarning)  # printed below, with the exit code
        result = evaluate(data, metrics=metrics, out=args.out, overwrite=args.overwrite, workers=args.workers,
                          executor=_executor(args), progress=not args.quiet, experiment=args.experiment,
                          human_labels=getattr(args, "human_labels", None), prices=args.prices,
                          judge_max_cost_usd=args.judge_max_cost)
    seconds = time.perf_counter() - start
    summary = result.summary_metrics
    rows = summary["row_count"]
    print(f"levelfield eval: saved predictions in {args.dataset}: {rows:,} rows scored in {seconds:.1f} s "
          f"({rows / seconds:,.0f} rows/s)")
    print()
    width = max(len(n) for n in names) if names else 6
    print(f"{'metric':<{width}}  {'mean':>7}  {'std':>7}  {'scored':>9}")
    for m in metrics:
        mean, std = summary.get(f"{m.name}/mean", math.nan), summary.get(f"{m.name}/std", math.nan)
        scored = rows - summary.get(f"{m.name}/nan_count", 0)
        print(f"{m.name:<{width}}  {num(mean):>7}  {num(std):>7}  {scored:>9,}")
    if summary.get("failure/count"):
        print(f"\n{summary['failure/count']:,} rows are saved failures (not scored)")
    if args.out:
        written = sorted(p.name for p in Path(args.out).iterdir() if p.is_file() and not p.name.startswith("."))
        print(f"\nWritten: {', '.join(written)} in {Path(args.out)}")
    certify_before_gating(args, {"": result})
    missed = []
    for metric, floor in args.fail_under:
        mean = summary.get(f"{metric}/mean", math.nan)
        if math.isnan(mean) or mean < floor:
            missed.append(f"{metric} mean {num(mean)} is under {floor:g}")
    for line in missed:
        print(f"levelfield: --fail-under: {line}", file=sys.stderr)
    unreadable = report_unreadable_judges({"saved": result}, metrics, command=args.command)
    return 1 if missed or unreadable else 0


def _eval_gated(args: argparse.Namespace) -> int:
    """``eval --config test_config.json``: judge every case by ADK criteria; exit 1 when one fails."""
    from ..adapters.spec import load_agent_spec
    from ..testing.gating import check_eval

    if args.metrics or args.fail_under:
        raise UsageError("--config sets the metrics and thresholds; leave out --metric and --fail-under")
    if args.baseline or args.fail_if_worse or args.human_labels or args.require_certified_judge:
        raise UsageError("--config judges each case by its criteria; --baseline, --fail-if-worse, --human-labels and "
                         "--require-certified-judge work without --config")
    if args.experiment:
        raise UsageError("--experiment is not available with --config (a gate run); run eval without --config to log it")
    if args.limit is not None or args.sample is not None:
        raise UsageError("--limit and --sample do not combine with --config yet; pick the cases with FILE:case_1,case_2")
    if args.agent is None:
        raise UsageError("--config runs an agent: give --agent SPEC")
    report = check_eval(args.dataset, load_agent_spec(args.agent), criteria=args.config, name=args.name,
                        config=_run_config(args), judge=_judge(args), simulator=_simulator(args))
    ds = report.result.dataset
    print(f"levelfield eval: {report.result.agent_name} on {len(ds)} cases of {ds.source}, criteria from {args.config}")
    print()
    print(report.table())
    if args.out:
        print(f"Written: runs.jsonl, metrics_table.csv, summary.json in {Path(args.out)}")
    if report.passed:
        return 0
    print()
    print(report.message())
    return 1


def _compare(args: argparse.Namespace) -> int:
    dataset, metrics, agents = _load_inputs(args, [_named_spec(s) for s in args.agents])
    cmp = _run(args, dataset, metrics, agents)
    return _finish(args, cmp, f"levelfield compare: {len(agents)} agents on {len(dataset)} cases of {dataset.source}"
                              f"{args.cases_note}")


def _report(args: argparse.Namespace) -> int:
    from ..comparison_text import format_comparison
    from .. import report
    from ..comparison import Comparison

    directory = Path(args.directory)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (expected the --out directory of eval, compare or watch)")
    from ..watch.summary import is_watch_folder

    if is_watch_folder(directory):
        from .watch import print_watch_report

        return print_watch_report(str(directory))
    tables = [n for n in ("metrics_table.parquet", "metrics_table.jsonl") if (directory / n).exists()]
    if tables and not (directory / "runs.jsonl").exists():
        raise UsageError(
            f"{directory}: holds saved predictions scored batch by batch ({tables[0]}, summary.json), "
            "which keep scores but no runs to report on; read the table with pandas, or write the full record "
            "with lf.evaluate(...).save(DIR) (runs.jsonl, explanations included) for a report"
        )
    cmp = Comparison.load(directory)
    if cmp.missing_runs:
        print(_missing_note(directory, cmp.missing_runs, cmp), file=sys.stderr)
    path = report.write(cmp, args.out or directory / "report.html")
    print(format_comparison(cmp))
    print()
    print(f"Report: {path}")
    return 0


def _view(args: argparse.Namespace) -> int:
    from ..view import serve

    try:
        serve(args.directories, host=args.host, port=args.port, token=args.auth_token)
    except OSError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    return 0


def _missing_note(directory: Path, missing: Sequence[tuple[str, str, int]], cmp: Comparison) -> str:
    shown = "; ".join(f"{a} on case {c!r}" + (f" trial {t + 1}" if cmp.trials > 1 else "") for a, c, t in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    total = len(cmp.agents) * len(cmp.dataset) * cmp.trials
    return (
        f"levelfield report: {directory / 'runs.jsonl'} lacks {len(missing)} of {total} runs ({shown}{more}); "
        "the run was interrupted: finish it with the same command and --resume. The report shows the runs it has."
    )


# -- demo --------------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from ..comparison_text import format_comparison
    from samples.home_automation import DATASET

    from .. import report
    from ..demo import DEMO_METRICS, demo_agents
    from ..evaluation import compare
    from ..formats.files import load_dataset

    from .output import status

    status("starting the sample agents (importing LangGraph, the Vertex AI SDK and a2a-sdk takes a few seconds)...",
           quiet=args.quiet)
    dataset = load_dataset(DATASET)
    notes: list[str] = []
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="levelfield-demo-"))
    with contextlib.ExitStack() as stack:
        agents = demo_agents(stack, notes)
        cmp = compare(dataset, agents, DEMO_METRICS, progress=not args.quiet, timeout=30.0)
    paths = report.save(cmp, out)
    frameworks = [a for a in agents if a != "function-hasty"]
    print(f"levelfield demo: {len(dataset)} home-automation cases, the same careful agent built with "
          f"{len(frameworks)} framework{'s' if len(frameworks) != 1 else ''} ({', '.join(frameworks)}), "
          "and a hasty function agent for contrast.")
    for note in notes:
        print(f"  note: {note}")
    print()
    print(format_comparison(cmp))
    print()
    print(f"Report: {paths['report']}")
    print(f"Runs, metrics table and summary: {out}")
    return 0


# -- plan --------------------------------------------------------------------------------------


def _add_plan_command(sub: Any) -> None:
    plan = sub.add_parser("plan", help="how many cases an evaluation needs to detect a change")
    kind = plan.add_mutually_exclusive_group(required=True)
    kind.add_argument("--p0", type=share(what=" (a rate, e.g. 0.80)"), help="a 0/1 metric: its current rate (e.g. 0.80)")
    kind.add_argument("--sd", type=number(0, above=True),
                      help="a continuous metric: SD of the per-case differences (paired) or of the metric (--unpaired)")
    kind.add_argument("--from", dest="from_dir", metavar="DIR",
                      help="measure p0, the discordance or SD, and the intra-case correlation from a saved comparison "
                           "(two agents, or a run and its baseline); with --metric")
    plan.add_argument("--metric", "-m", help="with --from: the metric to plan for")
    plan.add_argument("--baseline", metavar="AGENT",
                      help="with --from: the agent of the saved comparison to plan against (default: the baseline it "
                           "was saved with; between two agents without one, the second)")
    plan.add_argument("--agent", metavar="AGENT",
                      help="with --from: the agent whose change is to be detected (needed with more than two agents)")
    plan.add_argument("--mde", type=number(0, above=True), required=True, help="the change to detect, in the metric's units (0.05 = 5 points)")
    plan.add_argument("--power", type=share(what=" (e.g. 0.8)"), default=0.8, help="chance of detecting it (default 0.8)")
    plan.add_argument("--alpha", type=probability, default=0.05, help="significance level (default 0.05)")
    plan.add_argument("--one-sided", action="store_true", help="only a drop matters (default: two-sided)")
    plan.add_argument("--unpaired", action="store_true", help="the agents run on different cases (default: the same cases)")
    plan.add_argument("--discordance", type=share(what=" (a share of cases)"),
                      help="paired 0/1: share of cases where the two agents disagree (default: as if independent)")
    plan.add_argument("--trials", type=_positive_int, default=1, help="runs of every case (default 1)")
    plan.add_argument("--icc", type=share(open_low=False, open_high=False), default=0.5,
                      help="with --trials: intra-case correlation of a case's trials, 0..1 (default 0.5)")
    plan.set_defaults(func=_plan)


def _plan(args: argparse.Namespace) -> int:
    from .._core.stats.planning import minimum_detectable_effect, sample_size

    if args.from_dir:
        return _plan_from(args)
    if args.baseline or args.agent:
        raise UsageError("--baseline and --agent pick agents of a saved comparison: use them with --from DIR")

    options = dict(p0=args.p0, sd=args.sd, paired=not args.unpaired, discordance=args.discordance, alpha=args.alpha,
                   power=args.power, alternative="one-sided" if args.one_sided else "two-sided", trials=args.trials,
                   icc=args.icc)
    plan = sample_size(mde=args.mde, **options)
    per = " per agent" if args.unpaired else ""
    what = (f"a change of {args.mde * 100:g} points from {args.p0 * 100:g}%" if args.p0 is not None
            else f"a change of {args.mde:g} (SD {args.sd:g})")
    print(f"levelfield plan: {plan.cases} cases{per} ({plan.runs} runs per agent) to detect {what} "
          f"with {args.power:.0%} power at alpha {args.alpha:g} ({plan.alternative}); {plan.design}.")
    if plan.assumptions:
        print(f"Assumes: {plan.assumptions}.")
    grid = sorted({max(2, plan.cases // 2), plan.cases, plan.cases * 2})
    scale, unit = (100, " points") if args.p0 is not None else (1, "")
    print("Smallest change detectable at other sizes: " + ", ".join(
        f"{n} cases: {minimum_detectable_effect(n, **options) * scale:.3g}{unit}" for n in grid))
    return 0


def _plan_from(args: argparse.Namespace) -> int:
    """``plan --from DIR --metric M``: the next run's size from what a saved comparison measured."""
    from ..comparison import Comparison
    from ..gate import plan_from

    if not args.metric:
        raise UsageError("plan --from DIR needs --metric (the metric to plan for)")
    if args.unpaired or args.discordance is not None:
        raise UsageError("plan --from measures a paired design; leave out --unpaired and --discordance")
    directory = Path(args.from_dir)
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (expected the --out folder of eval or compare)")
    cmp = Comparison.load(directory)
    _check_plan_agents(args, cmp, directory)
    trials = args.trials if args.trials > 1 else None
    plan, measured = plan_from(cmp, args.metric, mde=args.mde, power=args.power, alpha=args.alpha,
                               alternative="one-sided" if args.one_sided else "two-sided", trials=trials,
                               baseline=args.baseline, agent=args.agent)
    found = (f"p0 {measured.p0:.2f}, discordance {measured.discordance:.2f}" if measured.binary
             else f"SD of differences {measured.sd:.3g}")
    icc = f", intra-case correlation {measured.icc:.2f}" if measured.icc is not None else ""
    print(f"Measured in {directory} ({measured.cases} cases, {measured.trials} trial(s)): {found}{icc}.")
    unit = f"{args.mde * 100:g} points" if measured.binary else f"{args.mde:g}"
    print(f"levelfield plan: {plan.cases} cases ({plan.runs} runs per agent) to detect a change of {unit} on "
          f"{args.metric} with {args.power:.0%} power at alpha {args.alpha:g} ({plan.alternative}); {plan.design}.")
    return 0


def _check_plan_agents(args: argparse.Namespace, cmp: Comparison, directory: Path) -> None:
    """``--baseline`` and ``--agent`` name agents of the saved comparison; more than two need them."""
    agents = list(cmp.agents)
    listed = ", ".join(agents)
    for flag, name in (("--baseline", args.baseline), ("--agent", args.agent)):
        if name is not None and name not in agents:
            raise UsageError(f"{flag} {name}: not an agent of {directory} ({listed})")
    if args.baseline is not None and args.baseline == args.agent:
        raise UsageError(f"--baseline and --agent are both {args.baseline!r}: plan one agent against another")
    saved = cmp.baseline.name if cmp.baseline is not None else cmp.saved_baseline if cmp.saved_baseline in agents else None
    base = args.baseline or saved
    if base is None and len(agents) > 2:
        raise UsageError(f"{directory} compares {len(agents)} agents ({listed}): name the one to plan against "
                         "with --baseline AGENT and the other with --agent AGENT")
    others = [a for a in agents if a != base]
    if base is not None and args.agent is None and len(others) > 1:
        raise UsageError(f"which agent to plan against {base!r}? give --agent AGENT, one of: {', '.join(others)}")


# -- entry point -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from .. import __version__

    parser = argparse.ArgumentParser(prog="levelfield", description="Evaluate AI agents on a level field.")
    parser.add_argument("--version", action="version", version=f"levelfield {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="compare the sample agents (one per framework) on the embedded dataset")
    demo.add_argument("--out", "-o", metavar="DIR", help="where to write the report (default: a new temporary directory)")
    demo.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    demo.set_defaults(func=_demo)

    ev = sub.add_parser("eval", help="run one agent on a dataset and score it, or score the saved predictions it holds")
    ev.add_argument("dataset", help="a .jsonl, .json, .csv, .parquet, .arrow, .evalset.json or .test.json file")
    ev.add_argument("--agent", "-a", metavar="SPEC",
                    help="module:attr, an http(s):// A2A URL, or projects/P/locations/L/reasoningEngines/ID; "
                         "without one, the file's saved response/predicted_trajectory columns are scored")
    ev.add_argument("--workers", type=_workers, default=1, metavar="N",
                    help="without --agent: processes that score saved predictions (-1: one per core; default 1)")
    ev.add_argument("--name", help="the agent's name in the results")
    ev.add_argument("--config", metavar="TEST_CONFIG",
                    help="an ADK test_config.json: judge each case by its criteria, exit 1 when a case fails")
    _add_run_options(ev, saved=True, failed_runs="exclude")
    _add_case_options(ev)
    _add_gate_options(ev)
    ev.add_argument("--human-labels", metavar="FILE",
                    help="a CSV/JSONL of case_id,human_label: correct each judged 0/1 metric for the judge's errors")
    ev.set_defaults(func=_eval)

    cmp = sub.add_parser("compare", help="run several agents on the same dataset and compare them")
    cmp.add_argument("dataset", help="a .jsonl, .json, .csv, .evalset.json or .test.json file")
    cmp.add_argument("--agent", "-a", required=True, action="append", dest="agents", metavar="NAME=SPEC",
                     help="an agent to compare, named (repeat for each agent)")
    _add_run_options(cmp)
    _add_case_options(cmp)
    _add_gate_options(cmp)
    cmp.add_argument("--human-labels", metavar="FILE",
                     help="a CSV/JSONL of case_id,human_label (and an agent column for several agents): with "
                          "--require-certified-judge, certify the judge before it gates; also corrects each judged "
                          "0/1 metric for the judge's errors")
    cmp.add_argument("--stop-early", nargs="?", const=True, default=False, type=_stop_early, metavar="METRIC|off",
                     help="run the cases in a random order (--seed) and stop starting runs once every pair of agents "
                          "is decided by an always-valid sequential test at --alpha, on METRIC (default: the first "
                          "--metric); with --margin, pairs within the margin stop too. '--resume --stop-early off' "
                          "runs the cases an early stop left")
    cmp.set_defaults(func=_compare)

    rep = sub.add_parser("report", help="re-render the HTML report of a saved run, or sum up a watch folder")
    rep.add_argument("directory", help="the --out directory of eval or compare (an HTML report), or of watch (windows, "
                                       "trends, alerts and the worst traces, printed)")
    rep.add_argument("--out", "-o", metavar="FILE", help="where to write the report (default: DIR/report.html)")
    rep.set_defaults(func=_report)

    _add_plan_command(sub)

    view = sub.add_parser("view", help="browse, filter and diff every run under some folders in a local web app")
    view.add_argument("directories", nargs="*", default=["."], metavar="DIR",
                      help="folders to find run records in (runs.jsonl of eval/compare --out, saved-prediction "
                           "score tables), searched below too (default: the current folder)")
    view.add_argument("--host", default="127.0.0.1",
                      help="interface to listen on (default 127.0.0.1: this machine only; a wider one warns)")
    view.add_argument("--port", type=port, default=0, help="port to listen on (default 0: a free one, printed)")
    view.add_argument("--auth-token", metavar="TOKEN", default=os.environ.get("LEVELFIELD_VIEW_TOKEN") or None,
                      help="require this token (Authorization: Bearer TOKEN, or ?token=TOKEN once, which sets a "
                           "cookie); for --host other than 127.0.0.1 (default: $LEVELFIELD_VIEW_TOKEN)")
    view.set_defaults(func=_view)

    from .watch import add_watch_command  # light: the watcher's packages are imported when it starts

    add_watch_command(sub)

    from ..adapters.a2a.server import add_serve_command  # light: imports a2a only when serving

    add_serve_command(sub, port_reader=port, url_reader=http_url)

    from .a2a_check import add_a2a_check_command  # light: httpx and a2a only when checking

    add_a2a_check_command(sub)

    from .judge_check import add_judge_check_command

    add_judge_check_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    from .._core.errors import LevelfieldError

    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    terminated: list[int] = []
    try:
        with _terminate_as_interrupt(terminated, args.command in _RUNS_AGENTS):
            return args.func(args)
    except (UsageError, LevelfieldError) as exc:
        print(f"levelfield {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(_interrupted_note(args, argv, "terminated (SIGTERM)" if terminated else "interrupted"), file=sys.stderr)
        return 128 + signal.SIGTERM if terminated else 130


_RUNS_AGENTS = ("eval", "compare", "demo")
"""The commands SIGTERM stops as Ctrl-C does (the others keep their own handling, or Python's)."""


@contextlib.contextmanager
def _terminate_as_interrupt(terminated: list[int], active: bool) -> Iterator[None]:
    """While ``active``, SIGTERM does what Ctrl-C does (the runs that finished stay journaled, those in
    flight are left for ``--resume``, the command that resumes is printed) and is noted in ``terminated``,
    so the exit code can be 143 rather than 130. A service manager, ``timeout`` or ``docker stop`` sends
    SIGTERM, and by default it would end the process without a word."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_terminate(signum: int, frame: Any) -> None:
        terminated.append(signum)
        # Whatever answers Ctrl-C now (asyncio.run cancelling the evaluation, the runner's counter of
        # the user's interrupts, Python's default) answers this signal too.
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupted_note(args: argparse.Namespace, argv: Sequence[str], how: str = "interrupted") -> str:
    """What Ctrl-C (or SIGTERM, ``how``) left: the runs kept in the journal, and the command that resumes."""
    import shlex

    out = getattr(args, "out", None)
    if not out or args.command == "demo":
        return f"levelfield {args.command}: {how}; nothing was saved (give --out DIR to journal runs as they finish)"
    from .._core.errors import LevelfieldError
    from .._core.results.record import read_record

    try:
        record = read_record(out)
        kept = f"{len(record.runs)} of {len(record.expected_keys())} runs are saved in {record.path}"
    except LevelfieldError:
        kept = f"no run had finished; nothing is saved in {out}"
    from ..adapters.a2a.secrets import hide_url_credentials  # light: a2a-sdk is imported only by A2AAgent

    again = [a for a in argv if a != "--overwrite"]
    if "--resume" not in again:
        again.append("--resume")
    command = shlex.join(again)
    shown = hide_url_credentials(command)
    hidden = "" if shown == command else " (with the URL credentials shown as *** put back)"
    return f"levelfield {args.command}: {how}; {kept}. Resume with{hidden}:\n  levelfield {shown}"


if __name__ == "__main__":
    sys.exit(main())
