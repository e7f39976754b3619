"""``levelfield demo``: compare the sample agents (one per framework) on the embedded dataset."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """The ``demo`` command and its options."""
    demo = sub.add_parser("demo", help="compare the sample agents (one per framework) on the embedded dataset")
    demo.add_argument("--out", "-o", metavar="DIR", help="where to write the report (default: a new temporary directory)")
    demo.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``demo``: the sample agents compared, the report written."""
    from samples.home_automation import DATASET

    from .. import report
    from .._entry.comparing import compare
    from ..comparison._text import format_comparison
    from ..formats.files import load_dataset
    from .demo_agents import DEMO_METRICS, demo_agents
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
