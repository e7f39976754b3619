"""``levelfield judge-check RESULT --human-labels FILE``: may this run's judge gate a build?

Prints each judged 0/1 metric's sensitivity and specificity against the human labels with their exact
one-sided lower bounds, kappa, the labels still needed and the verdict (``lf.certify_judge``).
Exit 0 when every judged metric's judge is certified, 1 when one is not, 2 on bad input (one line on
stderr). A record of several agents with labels that name them (an ``agent`` column) gets each agent's
table and the pooled one (the judge's, over every agent's labelled rows: the exit code reads it);
``--agent`` narrows to one agent, saying how many labels of others it leaves out. Also here: ``--require-certified-judge`` for the gates of ``eval`` and ``compare``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._core.errors import ConfigError
from .arguments import share, whole

__all__ = ["add_parser", "run", "add_certify_options", "check_certify_options", "certify_before_gating"]

_rate = share(what=" (the least rate to certify, e.g. 0.8)")
_confidence = share(what=" (the confidence of the lower bounds, e.g. 0.95)")
DEFAULT_MIN = 0.8


def _load(location: str, agent: str | None, labels: Any = None) -> Any:
    """The saved result at ``location`` (an --out folder or its runs.jsonl): one agent's, or, for a record of
    several agents and labels with an ``agent`` column, every agent's (a dict)."""
    from .._core.results.record import read_record
    from .._core.results.result import results_from_record

    path = Path(location)
    if not path.exists():
        raise ConfigError(f"{path}: no such folder or file (give the --out folder of eval or compare, or its runs.jsonl)")
    if path.is_dir() and not (path / "runs.jsonl").exists():
        tables = [n for n in ("metrics_table.parquet", "metrics_table.jsonl") if (path / n).exists()]
        if tables:
            raise ConfigError(f"{path}: holds saved predictions scored batch by batch ({tables[0]}), without the run "
                              "record the check reads; write it with lf.evaluate(...).save(DIR), or certify in Python "
                              "with lf.certify_judge(result, labels)")
    record = read_record(path)
    results = results_from_record(record)
    if agent is not None:
        if agent not in results:
            raise ConfigError(f"--agent {agent}: not an agent of {record.path} ({', '.join(results)})")
        return results[agent]
    if len(results) != 1:
        if labels is not None and "agent" in labels:
            return results  # per agent, and pooled
        raise ConfigError(f"{record.path} holds {len(results)} agents ({', '.join(results)}): name the one whose "
                          "answers the labels judge with --agent NAME, or give the labels an 'agent' column (each "
                          "agent's table and the pooled one)")
    return next(iter(results.values()))


def _labels_table(source: Any) -> Any:
    if source is None:
        return None
    from .._core.stats.judge_correction import read_human_labels

    return read_human_labels(source)


def _left_out_note(labels: Any, agent: str) -> str | None:
    """What ``--agent`` left out of a labels file with an ``agent`` column, said rather than dropped silently."""
    if labels is None or "agent" not in labels:
        return None
    others = labels[labels["agent"].notna() & (labels["agent"].astype(str) != agent)]
    if others.empty:
        return None
    names = ", ".join(sorted(set(others["agent"].astype(str))))
    return f"--agent {agent}: {len(others)} label(s) of other agents ({names}) left out"


def _pooled(args: argparse.Namespace, results: Any, labels: Any) -> int:
    from .._core.stats.certify import certify_judge_pooled

    if args.rows_to_label:
        raise ConfigError("--rows-to-label picks one agent's rows: give --agent NAME too")
    found = certify_judge_pooled(results, labels, min_tpr=args.min_tpr, min_tnr=args.min_tnr,
                                 confidence=args.confidence, metrics=args.metrics or None)
    print(json.dumps(found.to_dict(), indent=2, default=str) if args.json else found.table())
    return 0 if found.certified else 1


def run(args: argparse.Namespace) -> int:
    from .._core.stats.certify import certify_judge
    from .._core.stats.labelling import rows_to_label

    labels = _labels_table(args.human_labels)
    result = _load(args.result, args.agent, labels)
    if isinstance(result, dict):
        return _pooled(args, result, labels)
    if args.agent is not None and not args.json:
        note = _left_out_note(labels, args.agent)
        if note is not None:
            print(note)
    if args.human_labels is None and not any(c.metadata.get("human_label") is not None for c in result.dataset):
        raise ConfigError("no human labels: give --human-labels FILE (a CSV/JSONL of case_id,human_label), or run on "
                          "a dataset with a human_label column")
    found = certify_judge(result, labels, min_tpr=args.min_tpr, min_tnr=args.min_tnr,
                          confidence=args.confidence, metrics=args.metrics or None)
    if args.json:
        print(json.dumps(found.to_dict(), indent=2, default=str))
    else:
        print(found.table())
    if args.rows_to_label:
        picks = rows_to_label(result, args.rows_to_label, args.human_labels, metrics=found.metric_names)
        if args.rows_out:
            picks.to_csv(args.rows_out, index=False)
        if not args.json and picks.empty:
            print()
            print("Rows to label next: none; every row the judge scored has a human label")
        elif not args.json:
            print()
            print(f"Rows to label next ({len(picks)} of at most {args.rows_to_label}, the judge's least sure first):")
            for r in picks.itertuples(index=False):
                print(f"  {r.case_id} (trial {r.trial + 1}), judged {'pass' if r.verdict == 1 else 'fail'}: {r.reason}")
            if args.rows_out:
                print(f"Written: {args.rows_out} (fill in human_label, then pass it with --human-labels)")
    return 0 if found.certified else 1


def add_parser(subparsers: Any) -> Any:
    """Add ``levelfield judge-check RESULT --human-labels FILE [--min-tpr --min-tnr ...]`` to the CLI's subparsers."""
    parser = subparsers.add_parser(
        "judge-check",
        help="certify a saved run's judge against human labels before it gates (exit 1 when not certified)",
        description="For each judged pass/fail metric of a saved run: the judge's sensitivity (TPR) and specificity "
                    "(TNR) on the rows humans labelled, their exact one-sided lower bounds (Clopper-Pearson), Cohen's "
                    "kappa, the labels still needed, and certified or not. Exit 0 when every judged metric is "
                    "certified, 1 when one is not, 2 on bad input.",
    )
    parser.add_argument("result", metavar="RESULT_DIR_OR_FILE",
                        help="the --out folder of eval or compare (or its runs.jsonl)")
    parser.add_argument("--human-labels", metavar="FILE",
                        help="a CSV/JSONL/JSON with case_id and human_label (pass/fail, 1/0, true/false), and "
                             "optionally trial, metric and agent columns (default: the dataset's human_label column)")
    parser.add_argument("--min-tpr", type=_rate, default=DEFAULT_MIN,
                        help=f"the least sensitivity (TPR) to certify (default {DEFAULT_MIN})")
    parser.add_argument("--min-tnr", type=_rate, default=DEFAULT_MIN,
                        help=f"the least specificity (TNR) to certify (default {DEFAULT_MIN})")
    parser.add_argument("--confidence", type=_confidence, default=0.95,
                        help="confidence of the one-sided lower bounds (default 0.95)")
    parser.add_argument("--metric", "-m", action="append", dest="metrics", metavar="NAME",
                        help="a judged metric to certify (repeatable; default every judged pass/fail metric)")
    parser.add_argument("--agent", metavar="NAME",
                        help="with a record of several agents: certify on this agent's rows only (default, with an "
                             "'agent' column in the labels: each agent's table and the pooled one)")
    parser.add_argument("--rows-to-label", type=whole(1), metavar="N",
                        help="also list the N unlabelled rows to label next (the judge's least sure first)")
    parser.add_argument("--rows-out", metavar="FILE.csv",
                        help="with --rows-to-label: write them as a labels sheet to fill in")
    parser.add_argument("--json", action="store_true", help="print the certification as JSON")
    parser.set_defaults(func=_checked(run))
    return parser


def _checked(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        if args.rows_out and not args.rows_to_label:
            raise ConfigError("--rows-out writes the rows --rows-to-label N picks: give --rows-to-label too")
        return command(args)

    return run


# -- the gates of eval and compare -------------------------------------------------------------


def add_certify_options(p: argparse.ArgumentParser) -> None:
    """``--require-certified-judge``, ``--min-tpr``, ``--min-tnr`` on eval and compare."""
    p.add_argument("--require-certified-judge", action="store_true",
                   help="--fail-under and --fail-if-worse gate a judged metric only when its judge is certified "
                        "against --human-labels (as levelfield judge-check does); otherwise the gate refuses (exit 2) "
                        "and says why")
    p.add_argument("--min-tpr", type=_rate, default=None,
                   help=f"with --require-certified-judge: the least judge sensitivity (default {DEFAULT_MIN})")
    p.add_argument("--min-tnr", type=_rate, default=None,
                   help=f"with --require-certified-judge: the least judge specificity (default {DEFAULT_MIN})")


def _gated(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(option, metric) of every metric a gate of the command line reads."""
    out = [("--fail-under", metric) for metric, _ in getattr(args, "fail_under", [])]
    worse = getattr(args, "fail_if_worse", None) or ""
    out += [("--fail-if-worse", m.strip()) for m in worse.split(",") if m.strip()]
    return out


def check_certify_options(args: argparse.Namespace, dataset: Any, metrics: Any) -> None:
    """Refuse certification options that cannot apply, and read the labels, before any agent runs."""
    from .._core.stats.certify import scored_by_judge

    labels = getattr(args, "human_labels", None)
    if isinstance(labels, (str, Path)) and dataset is not None:
        from .._core.stats.judge_correction import check_label_cases, read_human_labels

        args.human_labels = read_human_labels(labels)
        check_label_cases(args.human_labels, dataset)
    if not getattr(args, "require_certified_judge", False):
        given = [flag for flag, value in (("--min-tpr", getattr(args, "min_tpr", None)),
                                          ("--min-tnr", getattr(args, "min_tnr", None))) if value is not None]
        if given:
            raise ConfigError(f"{', '.join(given)}: only with --require-certified-judge")
        return
    gated = _gated(args)
    if not gated:
        raise ConfigError("--require-certified-judge certifies the judge of a gated metric: give --fail-under "
                          "METRIC=VALUE or --fail-if-worse METRIC too")
    judged = [m.name for m in metrics if scored_by_judge(m)]
    if not any(metric in judged for _, metric in gated):
        names = ", ".join(dict.fromkeys(metric for _, metric in gated))
        raise ConfigError(f"--require-certified-judge: no gated metric ({names}) is scored by a judge; leave the "
                          "option out, or gate a judged metric")
    if labels is None and dataset is not None and not any(c.metadata.get("human_label") is not None for c in dataset):
        raise ConfigError("--require-certified-judge needs human labels to certify the judge: give --human-labels "
                          "FILE (a CSV/JSONL of case_id,human_label)")


def certify_before_gating(args: argparse.Namespace, results: Any, baseline: str | None = None) -> None:
    """With ``--require-certified-judge``: print the certification of the gated judged metrics on each tested
    agent's rows (``results``: agent -> result, but the ``baseline``), and refuse (``UncertifiedJudgeError``,
    exit 2) when a judge is not certified."""
    if not getattr(args, "require_certified_judge", False):
        return
    from .._core.stats.certify import UncertifiedJudgeError, certify_judge, judged_metrics

    gated = _gated(args)
    refused = []
    for agent, result in results.items():
        if agent == baseline:
            continue
        if args.human_labels is None and not any(c.metadata.get("human_label") is not None for c in result.dataset):
            raise ConfigError("--require-certified-judge needs human labels to certify the judge: give --human-labels "
                              "FILE (a CSV/JSONL of case_id,human_label)")
        judged = judged_metrics(result, binary=False)
        names = list(dict.fromkeys(metric for _, metric in gated if metric in judged))
        if not names:
            continue
        found = certify_judge(result, args.human_labels, min_tpr=args.min_tpr or DEFAULT_MIN,
                              min_tnr=args.min_tnr or DEFAULT_MIN, metrics=names)
        print()
        print(found.table())
        for m in found.failures:
            options = " and ".join(dict.fromkeys(option for option, metric in gated if metric == m.metric))
            who = f" ({agent})" if agent else ""
            refused.append(f"{options} {m.metric}{who}: the judge is not certified, so the gate does not decide on "
                           f"it: {m.reason}")
    if refused:
        raise UncertifiedJudgeError("; ".join(refused))
