"""``levelfield watch``: the command line of :func:`levelfield.watch.watch`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

__all__ = ["add_parser", "run", "print_watch_report"]


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a share between 0 and 1 (0.1 = one trace in ten)") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a share between 0 and 1 (0.1 = one trace in ten)")
    return value


def _seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], units[text[-1]]) if text and text[-1] in units else (text, 1)
    try:
        value = float(number) * unit
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, or a number with s, m, h or d (30s, 1h)") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds more than 0")
    return value


def _prices(text: str) -> str:
    from .._core.data.prices import price_table
    from .._core.errors import ConfigError

    try:
        price_table(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_parser(sub: Any) -> None:
    """Add ``watch`` to the subcommands."""
    from .arguments import dollars, http_url, number, probability, whole
    w = sub.add_parser("watch", help="score production traces as they arrive (OTLP/HTTP, a folder, MLflow) until stopped")
    w.add_argument("--out", "-o", metavar="DIR", required=True,
                   help="where scored traces are journaled in time windows (DIR/windows/*.jsonl); a restart with the "
                        "same DIR resumes without losing or repeating a trace")
    w.add_argument("--metric", "-m", action="append", dest="metrics", metavar="NAME",
                   help="a metric to score each trace with (repeatable; default: the trajectory metrics and rouge_l_sum, "
                        "which need --references; reference-free and judged metrics score every trace)")
    w.add_argument("--judge", metavar="SPEC",
                   help="the judge of judged metrics (provider:model, module:attr, or an A2A agent's URL), as in eval")
    w.add_argument("--max-cost", type=dollars, metavar="USD",
                   help="dollars the judged metrics may spend per hour; once spent, the hour's traces get the other "
                        "metrics and the judged ones are recorded as skipped for the budget (priced by --prices or "
                        "genai-prices)")
    w.add_argument("--prices", type=_prices, metavar="FILE",
                   help="a JSON file of your own prices, {\"model\": {\"input_per_mtok\": 0.15, \"output_per_mtok\": 0.6}}")
    w.add_argument("--otlp-port", type=whole(0, 65535, also=(-1,), what=" (0: any free port; -1: no receiver)"), default=4318, metavar="PORT",
                   help="receive OTLP/HTTP traces (POST /v1/traces, protobuf or JSON) on this port (default 4318; 0: any "
                        "free port; -1: no receiver)")
    w.add_argument("--host", default="127.0.0.1", help="the receiver's address (default 127.0.0.1: this machine only)")
    w.add_argument("--auth-token", metavar="TOKEN", default=os.environ.get("LEVELFIELD_WATCH_TOKEN") or None,
                   help="require 'Authorization: Bearer TOKEN' on every request (default $LEVELFIELD_WATCH_TOKEN)")
    w.add_argument("--folder", metavar="DIR", help="also score new JSON Lines / Parquet trace files that appear in DIR")
    w.add_argument("--mlflow-experiment", metavar="NAME", help="also score new traces of this MLflow experiment")
    w.add_argument("--mlflow-tracking-uri", metavar="URI", help="the MLflow tracking server (default $MLFLOW_TRACKING_URI)")
    w.add_argument("--references", metavar="FILE",
                   help="a dataset whose prompts are matched to the traces' requests: matching traces get its "
                        "reference and reference_trajectory (canary prompts with known answers)")
    w.add_argument("--sample", type=_share, default=1.0, metavar="SHARE",
                   help="score this share of traces, chosen by trace id (default 1: all)")
    w.add_argument("--sample-rule", action="append", default=[], dest="sample_rules", metavar="KEY=PATTERN:RATE",
                   help="score the traces whose KEY matches PATTERN at RATE instead (repeatable; the first matching rule "
                        "wins; KEY: route (http.route), agent (gen_ai.agent.name), service, name (the root span's), or "
                        "any span attribute; PATTERN may use * and ?), e.g. 'route=/checkout:1.0' 'agent=support:0.05'")
    w.add_argument("--trace-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                   help="a trace whose root span never arrives is scored this long after its last span (default 30s)")
    w.add_argument("--window", type=_seconds, default=3600.0, metavar="SECONDS", help="the journal's time window (default 1h)")
    w.add_argument("--max-queue", type=whole(1), default=10_000, metavar="TRACES",
                   help="traces held in memory at most; beyond it requests get 503 + Retry-After (default 10000)")
    w.add_argument("--baseline", metavar="DIR",
                   help="the --out folder of an earlier watch (or of eval) to compare each closed window with")
    w.add_argument("--alert-if-worse", action="append", default=[], metavar="METRIC",
                   help="with --baseline: alert when a window is significantly worse on METRIC (repeatable or "
                        "comma-separated; Holm-corrected across them)")
    w.add_argument("--alpha", type=probability, default=0.05, help="significance level of the drift alerts (default 0.05)")
    w.add_argument("--margin", type=number(0, what=" (metric units)"), default=0.0, help="alert only for drops beyond this margin (metric units)")
    w.add_argument("--allow-different-evaluators", action="store_true",
                   help="with --baseline: test windows against a baseline scored by other evaluators (another judge, "
                        "prompt, rubric set or metric version), labelling each alert, instead of refusing")
    w.add_argument("--min-window", type=whole(1), default=20, metavar="N", help="windows with fewer scored traces are not tested")
    w.add_argument("--export-otlp", type=http_url, metavar="URL",
                   help="send scores (gen_ai.evaluation.result events) and alerts to this OTLP/HTTP endpoint")
    mlflow = w.add_mutually_exclusive_group()
    mlflow.add_argument("--export-mlflow", nargs="?", const=True, default=None, metavar="TRACKING_URI",
                        help="log scores as MLflow assessments on every trace MLflow holds (found by its OpenTelemetry "
                             "trace id); TRACKING_URI defaults to --mlflow-tracking-uri. Traces from "
                             "--mlflow-experiment get them without this option")
    mlflow.add_argument("--no-export-mlflow", dest="export_mlflow", action="store_false",
                        help="do not log assessments on the traces of --mlflow-experiment")
    w.add_argument("--no-fsync", action="store_true",
                   help="acknowledge requests once written to the OS, without waiting for the disk (faster; a power "
                        "cut, unlike a crash, may then lose acknowledged traces)")
    w.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``watch``: score traces as they arrive until Ctrl-C, then print what was seen."""
    from .._serving import check_token, is_loopback
    from ..watch import Watcher
    from .arguments import judge_of

    port = None if args.otlp_port is not None and args.otlp_port < 0 else args.otlp_port
    if args.auth_token is not None:
        check_token(args.auth_token, "--auth-token")
    metrics = args.metrics or ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
                               "trajectory_precision", "trajectory_recall", "rouge_l_sum"]
    watcher = Watcher(
        metrics, args.out, otlp_port=port, host=args.host, folder=args.folder, mlflow_experiment=args.mlflow_experiment,
        mlflow_tracking_uri=args.mlflow_tracking_uri, sample=args.sample, sample_rules=args.sample_rules,
        trace_timeout=args.trace_timeout,
        window=args.window, max_queue=args.max_queue, auth_token=args.auth_token, baseline=args.baseline,
        alert_if_worse=args.alert_if_worse, alpha=args.alpha, margin=args.margin, min_window=args.min_window,
        export_otlp=args.export_otlp, export_mlflow=args.export_mlflow, references=args.references, fsync=not args.no_fsync,
        judge=judge_of(args), max_cost=args.max_cost, prices=args.prices,
        allow_different_evaluators=args.allow_different_evaluators,
    )

    async def watch_until_stopped() -> None:
        task = asyncio.create_task(watcher.run())
        while watcher.port is None and watcher.otlp_port is not None and not task.done():
            await asyncio.sleep(0.01)
        if watcher.port is not None:
            if not is_loopback(args.host):
                guard = ("every request must bring the auth token" if args.auth_token else
                         "with no --auth-token, anyone who can reach it can send traces to be scored: pass --auth-token")
                print(f"levelfield watch: warning: listening on {args.host}, reachable from other machines; {guard}",
                      file=sys.stderr, flush=True)
            print(f"levelfield watch: receiving OTLP/HTTP on http://{args.host}:{watcher.port}/v1/traces", flush=True)
        print(f"levelfield watch: journaling to {args.out}/windows; stop with Ctrl-C", flush=True)
        await task

    asyncio.run(watch_until_stopped())
    s = watcher.stats
    print(f"levelfield watch: stopped; {s.scored_traces} traces scored, {watcher.pending} left for the next start, "
          f"{s.shed_traces} shed, {s.bad_requests} bad requests, {s.alerts} alerts"
          + (f", {s.judge_skipped_for_budget} judged scores skipped for the hourly budget" if args.max_cost is not None else ""),
          flush=True)
    if watcher.assessments is not None:
        print(f"levelfield watch: MLflow ({watcher.assessments.tracking_uri}): {s.mlflow_assessments} assessments logged, "
              f"{s.mlflow_missing_traces} traces not in MLflow, {s.mlflow_failed_traces} traces failed", flush=True)
    return 0


def print_watch_report(directory: str) -> int:
    """``levelfield report DIR`` on a watch folder: windows, trends, alerts, worst traces."""
    from ..watch.summary import format_watch_summary, summarize

    sys.stdout.write(format_watch_summary(summarize(directory)))
    return 0
