"""The end of a run command's printout and its exit code: the comparison's tables, what was written,
the --fail-under thresholds, the change against --baseline and its gate, the --max-cost budget."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .arguments import UsageError

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["finish", "check_budget", "check_thresholds", "check_baseline"]


def finish(args: argparse.Namespace, cmp: Comparison, header: str) -> int:
    from ..comparison._text import format_comparison
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
    code = check_thresholds(cmp, args.fail_under, failed_runs=gate_rule(args))
    judged = {a: r for a, r in cmp.results.items() if cmp.baseline is None or a != cmp.baseline.name}
    unreadable = report_unreadable_judges(judged, cmp.metrics, command=args.command)
    return max(code, check_baseline(args, cmp), failed, check_budget(args, cmp), unreadable)


def check_budget(args: argparse.Namespace, cmp: Comparison) -> int:
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


def gate_rule(args: argparse.Namespace) -> str:
    """The rule the --fail-under gate reads: failed runs as 0, unless ``--failed-runs exclude`` was given."""
    return "exclude" if getattr(args, "failed_runs_given", False) and args.failed_runs == "exclude" else "zero"


def check_thresholds(cmp: Comparison, thresholds: Sequence[tuple[str, float]], *, failed_runs: str = "zero") -> int:
    """Each --fail-under METRIC=VALUE against each agent's mean by ``failed_runs`` (:func:`gate_mean`), one
    line each: the mean the gate read and how many runs failed; 1 when one is under its floor."""
    from .._core.stats.gating import gate_mean

    missed = []
    for metric, floor in thresholds:
        for agent in cmp.agents:
            read = gate_mean(cmp.summary, agent, metric, failed_runs=failed_runs)
            if read.missed(floor):
                missed.append(f"{agent}: {metric} {read.words()} is under {floor:g}")
            else:
                print(f"levelfield: --fail-under: {agent}: {metric} {read.words()} is at least {floor:g}")
    for line in missed:
        print(f"levelfield: --fail-under: {line}", file=sys.stderr)
    return 1 if missed else 0



def check_baseline(args: argparse.Namespace, cmp: Comparison) -> int:
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
            result = cmp.results[agent]
            # lf.evaluate corrected its result (eval); a comparison's agents are corrected here
            corrections = result.judge_corrections or correct_judged(
                result, args.human_labels, confidence=cmp.stats.confidence, judge_scores=cmp.stats.judge_scores)
            for correction in corrections.values():
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
