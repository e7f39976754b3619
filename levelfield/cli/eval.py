"""``levelfield eval``: run one agent on a dataset and score it, score the saved predictions a file
holds, or judge each case by an ADK test_config.json."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import UsageError, judge_of, workers
from .compare import run_comparison
from .inputs import (
    check_fail_under,
    check_gate_options,
    executor_of,
    load_inputs,
    metrics_of,
    run_config,
    simulator_of,
    some_cases,
    stats_config,
    tool_cassette,
)
from .options import add_case_options, add_gate_options, add_run_options
from .readout import finish

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``eval`` command and its options."""
    ev = sub.add_parser("eval", help="run one agent on a dataset and score it, or score the saved predictions it holds")
    ev.add_argument("dataset", help="a .jsonl, .json, .csv, .parquet, .arrow, .evalset.json or .test.json file")
    ev.add_argument("--agent", "-a", metavar="SPEC",
                    help="module:attr, an http(s):// A2A URL, or projects/P/locations/L/reasoningEngines/ID; "
                         "without one, the file's saved response/predicted_trajectory columns are scored")
    ev.add_argument("--workers", type=workers, default=1, metavar="N",
                    help="without --agent: processes that score saved predictions (-1: one per core; default 1)")
    ev.add_argument("--name", help="the agent's name in the results")
    ev.add_argument("--config", metavar="TEST_CONFIG",
                    help="an ADK test_config.json: judge each case by its criteria, exit 1 when a case fails")
    add_run_options(ev, saved=True, failed_runs="exclude")
    add_case_options(ev)
    add_gate_options(ev)
    ev.add_argument("--human-labels", metavar="FILE",
                    help="a CSV/JSONL of case_id,human_label: correct each judged 0/1 metric for the judge's errors")
    ev.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``eval``: one agent through ``lf.evaluate`` (a comparison with --baseline or --faults), the
    saved predictions of a file (no --agent), or ADK criteria (--config); returns the exit code."""
    if getattr(args, "config", None):
        return _eval_gated(args)
    if args.agent is None:
        return _eval_saved(args)
    dataset, metrics, agents = load_inputs(args, [(args.name, args.agent)])
    if args.human_labels:
        from .._core.stats.judge_correction import check_label_cases, read_human_labels

        args.human_labels = read_human_labels(args.human_labels)  # read and checked before any agent runs
        check_label_cases(args.human_labels, dataset)
    if args.baseline or args.faults is not None:
        # Against a saved run, or clean against faulted runs: two sets of runs compared, so a comparison.
        cmp = run_comparison(args, dataset, metrics, agents)
    else:
        cmp = _evaluate(args, dataset, metrics, agents[0])
    return finish(args, cmp, f"levelfield eval: {agents[0].name} on {len(dataset)} cases of {dataset.source}{args.cases_note}")


def _evaluate(args: argparse.Namespace, dataset: Any, metrics: list[Any], agent: Any) -> Comparison:
    """One agent run through ``lf.evaluate``, read as a one-agent comparison for the printout; with
    ``--out``, the folder holds what ``compare`` writes there (the record, tables, summary, report)."""
    import warnings

    from .. import report
    from .._core.stats.config import StatsConfig
    from .._entry.evaluation import evaluate
    from .._entry.shared import log_experiment, require_experiment_logging
    from ..comparison._comparison import Comparison
    from ..comparison._failures import AllRunsFailedWarning, JudgeAnswersUnreadableWarning
    from .judge_check import check_certify_options
    from .output import warnings_as_lines

    check_gate_options(args, metrics)
    check_certify_options(args, dataset, metrics)
    config, stats = run_config(args), stats_config(args)
    require_experiment_logging(args.experiment)  # before any agent runs
    with warnings_as_lines(args.command):
        warnings.simplefilter("ignore", AllRunsFailedWarning)  # the CLI prints its own failure summary
        warnings.simplefilter("ignore", JudgeAnswersUnreadableWarning)  # printed by finish, with the exit code
        result = evaluate(dataset, agent, metrics, name=agent.name, config=config, human_labels=args.human_labels,
                          simulator=args.user_simulator, tools=tool_cassette(args),
                          stats=StatsConfig(confidence=stats.confidence, judge_scores=stats.judge_scores))
    cmp = Comparison.of_evaluation(result, stats=stats, config=config)
    if args.experiment:  # logged with the statistics printed (--failed-runs), not evaluate's defaults
        from .._entry.experiment import log_evaluation

        log_experiment(lambda: log_evaluation(result, args.experiment, stats=stats), args.experiment)
    if config.out_dir is not None:
        report.save(cmp, config.out_dir)  # the comparison's summary and the HTML report, as compare writes them
    return cmp


def _eval_saved(args: argparse.Namespace) -> int:
    """``eval data --metric ...`` without ``--agent``: score the predictions the file already holds.

    Large files are read and scored a batch at a time (``--workers`` processes), the metrics table
    streamed to ``--out`` as Parquet, so a file larger than memory scores in bounded memory."""
    import time
    import warnings

    from .._entry.evaluation import evaluate
    from ..comparison._failures import JudgeAnswersUnreadableWarning
    from ..comparison._text import num
    from .output import report_unreadable_judges, warnings_as_lines

    unused = [flag for flag, given in (
        ("--simulator", args.simulator), ("--baseline", args.baseline), ("--fail-if-worse", args.fail_if_worse),
        ("--name", args.name), ("--resume", args.resume), ("--isolation", args.isolation != "none"),
        ("--max-cost", args.max_cost is not None), ("--tools", args.tools), ("--faults", args.faults is not None),
        ("--allow-different-evaluators", args.allow_different_evaluators),
    ) if given]
    if unused:
        raise UsageError(f"{', '.join(unused)}: only with --agent (without one, eval scores the saved predictions in the file)")
    metrics = metrics_of(args)
    names = {m.name for m in metrics}
    check_fail_under(args, metrics)
    from .judge_check import certify_before_gating, check_certify_options

    check_certify_options(args, None, metrics)
    data: Any = args.dataset
    if args.limit is not None or args.sample is not None or args.seed is not None:
        from ..formats.files import load_dataset

        data = some_cases(args, load_dataset(args.dataset))
    start = time.perf_counter()
    with warnings_as_lines(args.command):
        warnings.simplefilter("ignore", JudgeAnswersUnreadableWarning)  # printed below, with the exit code
        result = evaluate(data, metrics=metrics, out=args.out, overwrite=args.overwrite, workers=args.workers,
                          executor=executor_of(args), progress=not args.quiet, experiment=args.experiment,
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
    from .._core.stats.gating import result_gate_mean
    from .readout import gate_rule

    missed = []
    for metric, floor in args.fail_under:
        read = result_gate_mean(summary, metric, failed_runs=gate_rule(args))
        if read.missed(floor):
            missed.append(f"{metric} {read.words()} is under {floor:g}")
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
                        config=run_config(args), judge=judge_of(args), simulator=simulator_of(args))
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
