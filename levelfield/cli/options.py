"""The options the run commands (``eval``, ``compare``) share, declared on their parsers: how the
agents run, which cases, the baseline and its gate. What they ask for is built in ``inputs``."""

from __future__ import annotations

import argparse
from typing import Any

from .arguments import (
    budget,
    number,
    per_minute,
    positive,
    probability,
    response_size,
    threshold,
    timeout_seconds,
    whole,
)

__all__ = ["add_run_options", "add_case_options", "add_gate_options"]


_OUT_RUNS = ("journal every run to DIR/runs.jsonl as it finishes; at the end write metrics_table.csv, "
             "summary.json and report.html there (with pyarrow also metrics_table.parquet and summary.parquet)")
_OUT_SAVED = ("without --agent (saved predictions, any number of rows): metrics_table.parquet (metrics_table.jsonl "
              "without pyarrow) and summary.json, streamed batch by batch; no runs.jsonl and no report.html "
              "(in Python, result.save(DIR) writes the full record, explanations included)")
_OUT_REFUSED = "; a DIR that holds other files but no run record is refused unless --overwrite"


class _Given(argparse.Action):
    """Store the value and note that it was given on the command line (``args.<dest>_given``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def add_run_options(p: argparse.ArgumentParser, *, saved: bool = False, failed_runs: str = "zero") -> None:
    """The options of a run; ``failed_runs`` is the default rule, the one its Python twin uses."""
    from .._core.data.config import RunConfig

    d = RunConfig()
    p.add_argument("--metric", "-m", action="append", dest="metrics", metavar="NAME",
                   help="a metric name, or module:attr for a metric of your own (a Metric class or object in an "
                        "importable module) (repeatable; default: the trajectory metrics and rouge_l_sum). A metric "
                        "given here whose reference column (e.g. reference_trajectory) no case has is refused "
                        "before any agent runs (exit 2); a default one runs with a warning")
    p.add_argument("--out", "-o", metavar="DIR",
                   help=("with --agent: " + _OUT_RUNS + "; " + _OUT_SAVED if saved else _OUT_RUNS) + _OUT_REFUSED)
    p.add_argument("--resume", action="store_true",
                   help="with --out: run only what DIR/runs.jsonl lacks (after an interruption), then write everything")
    p.add_argument("--overwrite", action="store_true",
                   help="with --out: replace a run record already in DIR, or write into a DIR holding other files")
    p.add_argument("--concurrency", type=positive, default=d.concurrency,
                   help=f"runs in flight, all agents together (default {d.concurrency})")
    p.add_argument("--timeout", type=timeout_seconds, default=d.timeout,
                   help=f"seconds per attempt, or 'none' (default {d.timeout:g})")
    p.add_argument("--max-response", type=response_size, default=d.max_response_bytes, metavar="SIZE",
                   help="the largest answer a remote (A2A) agent may send, e.g. 64MB, or 'none'; a larger one "
                        f"fails the run as response_too_large (default {d.max_response_bytes >> 20}MB)")
    p.add_argument("--retries", type=whole(0), default=d.retries,
                   help=f"retries of errors an adapter marks transient (default {d.retries})")
    p.add_argument("--no-a2a-preflight", dest="a2a_preflight", action="store_false",
                   help="do not check A2A agents (by default their card is checked before the first case and their "
                        "answers to the cases as they arrive, and the result kept in the record; no message is sent)")
    p.add_argument("--a2a-probe", dest="a2a_probe", action="store_true",
                   help="also send A2A agents two probe messages before the first case (send and stream, as "
                        "levelfield a2a-check does): only for agents without side effects, each probe is a task they run")
    p.add_argument("--no-adaptive", dest="adaptive", action="store_false",
                   help="keep --concurrency fixed: by default the calls in flight to each endpoint (agent, A2A host, "
                        "judge, simulator) follow its rate limits (HTTP 429/503), with --concurrency as the ceiling, "
                        "and a rate-limited call is waited out and tried again without spending a retry")
    p.add_argument("--rpm", type=per_minute, action="append", default=[], metavar="[NAME=]N",
                   help="requests per minute at most: N for every agent, NAME=N for one agent, judge=N, "
                        "simulator=N (repeatable)")
    p.add_argument("--tpm", type=per_minute, action="append", default=[], metavar="[NAME=]N",
                   help="tokens per minute at most, counted from the usage the calls report; as --rpm")
    p.add_argument("--trials", type=positive, default=d.trials, help=f"runs of every case per agent (default {d.trials})")
    p.add_argument("--prices", metavar="FILE",
                   help="a JSON file of your own prices, {\"model\": {\"input_per_mtok\": 0.15, \"output_per_mtok\": 0.6}} "
                        "in dollars per million tokens; they override genai-prices' (levelfield[cost])")
    p.add_argument("--max-cost", type=budget, metavar="USD",
                   help="the dollars the agents' runs may spend: each agent's next run starts only while its "
                        "estimated cost (from that agent's runs so far) fits in what is left, and an agent whose next "
                        "run would not fit stops while the others go on (an estimate, not a hard cap); with --out, "
                        "the runs not started are finished by --resume --max-cost MORE (the limit counts the "
                        "journaled runs too)")
    p.add_argument("--judge-max-cost", type=budget, metavar="USD",
                   help="stop sending rows to LLM judges once their spend would pass USD dollars (rows not judged "
                        "score NaN; --resume with more judges them)")
    p.add_argument("--fail-under", type=threshold, action="append", default=[], metavar="METRIC=VALUE",
                   help="exit 1 when an agent's mean of METRIC is under VALUE (repeatable)")
    twin = "lf.compare" if failed_runs == "zero" else "lf.evaluate"
    p.add_argument("--failed-runs", choices=("zero", "exclude"), default=failed_runs, action=_Given,
                   help=f"a failed run scores 0 ('zero') or is left out of the means ('exclude'); default "
                        f"{failed_runs!r}, as in {twin}; when a run failed, the means by the other rule are printed too. "
                        "--fail-under reads the mean with failed runs as 0 unless --failed-runs exclude is given")
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
    p.add_argument("--max-turns", type=positive, default=None, metavar="N",
                   help="with --simulator: agent turns per conversation at most")
    p.add_argument("--tools", metavar="FILE",
                   help="a tool cassette (JSON Lines): every agent's tool calls are answered from it, or recorded into "
                        "it (see --tools-mode and docs/tools.md)")
    p.add_argument("--tools-mode", choices=("replay", "record", "record_missing"), default=None,
                   help="with --tools: replay the cassette (default), record a new one, or replay what it holds and "
                        "record the rest")
    p.add_argument("--tools-overwrite", action="store_true", default=False,
                   help="with --tools-mode record: replace a cassette that already holds answers (refused otherwise)")
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


def add_case_options(p: argparse.ArgumentParser) -> None:
    """``--limit``, ``--sample`` and ``--seed``: run on part of the dataset."""
    p.add_argument("--limit", type=positive, metavar="N", help="only the first N cases of the dataset")
    p.add_argument("--sample", type=positive, metavar="N",
                   help="N cases drawn at random (the same ones for the same --seed), kept in dataset order")
    p.add_argument("--seed", type=whole(0), metavar="S",
                   help="with --sample: the random seed (default 0); with --stop-early: the seed of the case order")



def add_gate_options(p: argparse.ArgumentParser) -> None:
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
