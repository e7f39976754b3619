"""What humans should label next: the judged rows the judge is least sure of, as a sheet to fill in.

The rows picked by doubt (a probability near 0.5, samples that disagree) find a judge's errors
fastest but are no random sample of the judged rows, which the bounds of
:mod:`levelfield._core.stats.certify` assume: label some random rows too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .certify import _metrics_to_check, _one_result, _score
from .judge_correction import labels_by_run, labels_of

__all__ = ["rows_to_label"]


def _doubt(row: Mapping[str, Any], metric: str) -> tuple[float | None, str, float, float]:
    """(doubt from 0 to 1 or None, reason, probability, agreement) of the judge on one row of ``metric``."""
    p = _score(row.get(f"{metric}/p"))
    agreement = _score(row.get(f"{metric}/agreement"))
    samples = row.get(f"{metric}/sample_values")
    found: list[tuple[float, str]] = []
    if not math.isnan(p):
        found.append((1 - 2 * abs(p - 0.5), f"{metric}: the judge's probability {p:.2f} is {abs(p - 0.5):.2f} from 0.5"))
    if not math.isnan(agreement):
        if isinstance(samples, (list, tuple)) and samples:
            modal = max(set(samples), key=list(samples).count)
            said = f"{list(samples).count(modal)} of {len(samples)} samples agree"
        else:
            said = f"the majority verdict had {agreement:.0%} of them"
        doubt = max(0.0, min(1.0, 2 * (1 - agreement)))  # a 0/1 verdict's modal share runs from 0.5 to 1
        found.append((doubt, f"{metric}: the judge's samples disagree ({said})" if doubt > 0
                      else f"{metric}: the judge's samples agree ({said})"))
    if not found:
        return None, f"{metric}: no probability or sample disagreement recorded; picked at random", p, agreement
    doubt, reason = max(found, key=lambda f: f[0])
    if doubt == 0:
        reason += "; picked at random among the rows the judge is sure of"
    return doubt, reason, p, agreement


def rows_to_label(
    result: Any,
    budget: int = 20,
    human_labels: Any = None,
    *,
    metrics: str | Sequence[str] | None = None,
    agent: str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """The unlabelled judged rows humans should label next, at most ``budget``: the ones the judge is least
    sure of first (its probability ``<metric>/p`` nearest 0.5, or its samples disagreeing most), then, when
    nothing says how sure it was, rows drawn at random (``seed``).

    Returns a table to label: ``case_id``, ``trial``, ``metric``, the judge's ``verdict``, ``p`` and
    ``agreement`` (NaN when not recorded), ``doubt`` (0 sure .. 1 a coin toss), ``reason``, the ``prompt``
    and ``response``, and an empty ``human_label`` to fill in; saved as CSV it is a labels file
    :func:`certify_judge` reads. Rows picked by doubt are not a random sample (see the module docs).

    Args:
        result: an ``EvalResult``, or a ``Comparison`` with ``agent=``.
        budget: the most rows to return (how many humans can label), 1 or more.
        human_labels: the labels so far (as :func:`certify_judge` reads them; None: the dataset's
            ``human_label`` column, if any): rows they label are left out.
        metrics: the judged metrics whose doubt counts (default: every judged 0/1 metric); a row's doubt
            is its largest over them, and ``metric`` names that one.
        seed: of the random order among rows with equal (or no recorded) doubt.
    """
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ConfigError(f"budget={budget!r}: give the number of rows humans can label, 1 or more")
    one = _one_result(result, agent)
    table = labels_of(one, human_labels)
    names = _metrics_to_check(one, table, metrics)
    rows = one.scores
    humans = {name: labels_by_run(table, one.runs, name) for name in names}
    order = np.random.default_rng(seed).permutation(len(rows))  # ties (and rows with no doubt recorded) at random
    rank = np.empty(len(rows), dtype=int)
    rank[order] = np.arange(len(rows))
    picks = []
    for i, (run, row) in enumerate(zip(one.runs, rows)):
        best = None
        for name in names:
            verdict = _score(row.get(f"{name}/score"))
            if math.isnan(verdict) or not math.isnan(humans[name][i]):
                continue  # not judged (a failed run) or already labelled for this metric
            doubt, reason, p, agreement = _doubt(row, name)
            key = (-1.0 if doubt is None else doubt)
            if best is None or key > best[0]:
                best = (key, name, verdict, p, agreement, doubt, reason)
        if best is not None:
            picks.append((best[0], rank[i], i, run, *best[1:]))
    picks.sort(key=lambda t: (-t[0], t[1]))
    table_rows = one.metrics_table if picks else None
    out = []
    for _, _, i, run, name, verdict, p, agreement, doubt, reason in picks[:budget]:
        out.append({
            "case_id": run.case_id, "trial": run.trial, "metric": name, "verdict": verdict, "p": p,
            "agreement": agreement, "doubt": math.nan if doubt is None else doubt, "reason": reason,
            "prompt": table_rows["prompt"].iloc[i] if table_rows is not None and "prompt" in table_rows else None,
            "response": table_rows["response"].iloc[i] if table_rows is not None and "response" in table_rows else None,
            "human_label": "",
        })
    columns = ["case_id", "trial", "metric", "verdict", "p", "agreement", "doubt", "reason", "prompt", "response",
               "human_label"]
    return pd.DataFrame(out, columns=columns)
