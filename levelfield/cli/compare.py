"""``levelfield compare``: run several agents on the same dataset and compare them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .arguments import named_spec, stop_early_switch
from .inputs import check_gate_options, faults_of, load_inputs, run_config, stats_config, tool_cassette
from .options import add_case_options, add_gate_options, add_run_options
from .readout import finish

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["add_parser", "run", "run_comparison"]


def add_parser(sub: Any) -> None:
    """The ``compare`` command and its options."""
    cmp = sub.add_parser("compare", help="run several agents on the same dataset and compare them")
    cmp.add_argument("dataset", help="a .jsonl, .json, .csv, .evalset.json or .test.json file")
    cmp.add_argument("--agent", "-a", required=True, action="append", dest="agents", metavar="NAME=SPEC",
                     help="an agent to compare, named (repeat for each agent)")
    add_run_options(cmp)
    add_case_options(cmp)
    add_gate_options(cmp)
    cmp.add_argument("--human-labels", metavar="FILE",
                     help="a CSV/JSONL of case_id,human_label (and an agent column for several agents): with "
                          "--require-certified-judge, certify the judge before it gates; also corrects each judged "
                          "0/1 metric for the judge's errors")
    cmp.add_argument("--stop-early", nargs="?", const=True, default=False, type=stop_early_switch, metavar="METRIC|off",
                     help="run the cases in a random order (--seed) and stop starting runs once every pair of agents "
                          "is decided by an always-valid sequential test at --alpha, on METRIC (default: the first "
                          "--metric); with --margin, pairs within the margin stop too. '--resume --stop-early off' "
                          "runs the cases an early stop left")
    cmp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``compare``: every agent on the same cases, the comparison printed; returns the exit code."""
    dataset, metrics, agents = load_inputs(args, [named_spec(s) for s in args.agents])
    cmp = run_comparison(args, dataset, metrics, agents)
    return finish(args, cmp, f"levelfield compare: {len(agents)} agents on {len(dataset)} cases of {dataset.source}"
                              f"{args.cases_note}")


def run_comparison(args: argparse.Namespace, dataset: Any, metrics: list[Any], agents: list[Any]) -> Comparison:
    """The agents run on the dataset through ``compare`` (recorded as ``evaluate`` for ``eval``), the
    gate and certification options checked first."""
    import warnings

    from .._entry.comparing import compare_as
    from ..comparison._failures import AllRunsFailedWarning, JudgeAnswersUnreadableWarning
    from .output import warnings_as_lines

    check_gate_options(args, metrics)
    from .judge_check import check_certify_options

    check_certify_options(args, dataset, metrics)
    kind = "evaluate" if args.command == "eval" else "compare"  # the record names the command that made it
    with warnings_as_lines(args.command):
        warnings.simplefilter("ignore", AllRunsFailedWarning)  # the CLI prints its own failure summary
        warnings.simplefilter("ignore", JudgeAnswersUnreadableWarning)  # printed by finish, with the exit code
        return compare_as(kind, dataset, {a.name: a for a in agents}, metrics, config=run_config(args),
                       stats=stats_config(args), baseline=getattr(args, "baseline", None),
                       stop_early=getattr(args, "stop_early", False),
                       simulator=getattr(args, "user_simulator", None), experiment=getattr(args, "experiment", None),
                       tools=tool_cassette(args), faults=faults_of(args),
                       allow_different_evaluators=getattr(args, "allow_different_evaluators", False))
