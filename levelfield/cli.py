"""The ``levelfield`` command: demo, and (as they land) eval, compare, serve, report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]

DEMO_METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "rouge_l_sum",
    "bleu",
    "exact_match",
]


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


def _demo(args: argparse.Namespace) -> int:
    import levelfield as lf
    from samples.home_automation import DATASET
    from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

    dataset = lf.load_dataset(DATASET)
    summaries = {}
    for name, agent in {"careful (function)": careful_agent, "hasty (function)": hasty_agent}.items():
        result = lf.evaluate(dataset, agent, metrics=DEMO_METRICS, name=name, progress=not args.quiet)
        summaries[name] = result.summary_metrics
    print(f"levelfield demo: {len(dataset)} home-automation cases from {DATASET.name}\n")
    print(format_summary(summaries, DEMO_METRICS))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="levelfield", description="Evaluate AI agents on a level field.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="score the sample agents on the embedded home-automation dataset")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
