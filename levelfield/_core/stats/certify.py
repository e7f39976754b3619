"""Certify a judge before it gates: its sensitivity and specificity against human labels, with exact lower bounds.

A judged 0/1 metric may fail a build only when its judge is good enough. On the rows humans
labelled, the judge's sensitivity (TPR: the share of human passes it passes) and specificity (TNR:
the share of human fails it fails) are counted, and each gets the exact one-sided lower confidence
bound of Clopper & Pearson (1934), "The use of confidence or fiducial limits illustrated in the case
of the binomial", Biometrika 26(4):404-413 (the beta quantile of ``scipy.stats.beta``; the same as the lower
end of ``scipy.stats.binomtest(x, n, alternative="greater").proportion_ci(method="exact")``)::

    lower = B⁻¹(1 − confidence; x, n − x + 1)      x of n human passes (fails) the judge got right

The judge is certified for a metric when both lower bounds reach the minimums (``min_tpr``,
``min_tnr``). The labels still needed are projected at the observed rate: the smallest number of
labelled passes (fails) whose bound, with the same share right, would reach the minimum; a rate at
or below the minimum cannot be certified by more labels. Agreement is Cohen's kappa.

The bounds assume the labelled rows are a random sample of the judged rows.
:func:`levelfield._core.stats.labelling.rows_to_label` picks the rows the judge is least sure of (a
probability near 0.5, samples that disagree), which finds its errors fastest but is not such a
sample: label some random rows too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ConfigError, MetricError
from . import inference as stats
from .judge_correction import check_label_cases, cohen_kappa, read_human_labels

if TYPE_CHECKING:
    from ..results.result import EvalResult

__all__ = [
    "MetricCertification",
    "JudgeCertification",
    "UncertifiedJudgeError",
    "certify_judge",
    "certify_judge_pooled",
    "PooledCertification",
    "certify_rates",
    "lower_bound",
    "labels_needed",
    "judged_metrics",
    "scored_by_judge",
    "require_certified",
]


class UncertifiedJudgeError(ConfigError):
    """A gate on a judged metric asked for a certified judge (``require_certified_judge=True``) and the
    judge is not certified, or there were no human labels to certify it: the gate refuses to decide."""


# -- the numbers -------------------------------------------------------------------------------


def lower_bound(successes: int, trials: int, confidence: float = 0.95) -> float:
    """The exact (Clopper–Pearson) one-sided lower bound of a rate: ``successes`` of ``trials``; NaN for no trials."""
    if trials == 0:
        return math.nan
    if successes == 0:
        return 0.0
    from scipy.stats import beta

    return float(beta.ppf(1 - confidence, int(successes), int(trials) - int(successes) + 1))


def _projected_bound(rate: float, n: int, confidence: float) -> float:
    """The Clopper–Pearson lower bound of ``n`` trials with a share ``rate`` right (``rate·n`` need not be whole)."""
    from scipy.stats import beta

    x = rate * n
    return 0.0 if x <= 0 else float(beta.ppf(1 - confidence, x, n - x + 1))


def labels_needed(rate: float, have: int, minimum: float, confidence: float = 0.95) -> int | None:
    """More labelled rows (of one side: passes for sensitivity, fails for specificity) needed for the
    lower bound to reach ``minimum`` when the judge keeps getting ``rate`` of them right; 0 when the
    ``have`` rows already do, None when no number can (``rate`` at or below ``minimum``).

    With ``have`` = 0 and ``rate`` = 1: the fewest a judge right on every one needs."""
    if math.isnan(rate) or rate <= minimum:
        return None
    if have > 0 and _projected_bound(rate, have, confidence) >= minimum:
        return 0
    low, high = have, max(2 * have, 1)
    while _projected_bound(rate, high, confidence) < minimum:  # the bound rises toward ``rate`` as n grows
        low, high = high, 2 * high
    while high - low > 1:  # the smallest n reaching the minimum lies in (low, high]
        mid = (low + high) // 2
        if _projected_bound(rate, mid, confidence) >= minimum:
            high = mid
        else:
            low = mid
    return high - have


# -- one metric --------------------------------------------------------------------------------


def _num(value: float, digits: int = 2) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _low(value: float) -> str:
    """A lower bound shown rounded down, so that the number printed is still a lower bound."""
    return "-" if math.isnan(value) else f"{math.floor(value * 100 + 1e-9) / 100:.2f}"


def _minimum(value: float) -> str:
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"


@dataclass(frozen=True)
class MetricCertification:
    """Whether a judge may gate one judged 0/1 metric: its rates against human labels and their lower bounds."""

    metric: str
    judged: int
    """Rows the judge scored (a verdict of 0 or 1)."""
    labeled: int
    """Of those, rows with a human label."""
    positives: int
    """Labelled rows the humans passed."""
    negatives: int
    """Labelled rows the humans failed."""
    true_positives: int
    """Human passes the judge passed."""
    true_negatives: int
    """Human fails the judge failed."""
    sensitivity: float
    """TPR: ``true_positives / positives`` (NaN without human passes)."""
    specificity: float
    """TNR: ``true_negatives / negatives`` (NaN without human fails)."""
    sensitivity_low: float
    """Exact one-sided lower bound of the sensitivity at ``confidence``."""
    specificity_low: float
    kappa: float
    """Cohen's kappa between judge and humans on the labelled rows (NaN when undefined)."""
    min_tpr: float
    min_tnr: float
    confidence: float
    more_positives: int | None
    """More human passes to label for the sensitivity bound to reach ``min_tpr`` at the observed rate
    (0: it does; None: it cannot, the rate is at or below the minimum or unknown)."""
    more_negatives: int | None
    more_rows: int | None
    """More rows to label, at the labelled rows' pass rate, to get both (None when either cannot)."""
    certified: bool
    reasons: tuple[str, ...]
    """Why not certified (each condition missed, or that cannot be measured); when certified, the two conditions met."""
    met: tuple[str, ...] = ()
    """The conditions met (when not certified: the ones that were)."""

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def describe(self) -> str:
        """One line: the metric, certified or not, and why."""
        verdict = "certified" if self.certified else "not certified"
        return f"{self.metric}: {verdict}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The fields and the reason, NaN as None (as JSON has it)."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__} | {"reason": self.reason}
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


def certify_rates(
    judged: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    metric: str = "metric",
    min_tpr: float = 0.8,
    min_tnr: float = 0.8,
    confidence: float = 0.95,
) -> MetricCertification:
    """Certify a judge from its 0/1 verdicts ``judged`` (one per row, NaN = not scored) and ``human``
    labels on some rows (NaN = unlabelled); see the module docs."""
    _check_options(min_tpr, min_tnr, confidence)
    j, h = np.asarray(judged, dtype=float).ravel(), np.asarray(human, dtype=float).ravel()
    if j.shape != h.shape:
        raise ConfigError(f"{metric}: {j.size} judge verdicts but {h.size} human labels; give one of each per row")
    if not (stats.is_binary(j) or np.isnan(j).all()):
        raise MetricError(f"{metric}: certifying a judge needs its 0/1 verdicts; this metric has other values")
    if not (stats.is_binary(h) or np.isnan(h).all()):
        raise ConfigError(f"{metric}: human labels must be 0/1 (pass/fail)")
    scored = ~np.isnan(j)
    both = scored & ~np.isnan(h)
    jj, hh = j[both], h[both]
    pos, neg = int((hh == 1).sum()), int((hh == 0).sum())
    tp, tn = int(((hh == 1) & (jj == 1)).sum()), int(((hh == 0) & (jj == 0)).sum())
    sens = tp / pos if pos else math.nan
    spec = tn / neg if neg else math.nan
    sens_low, spec_low = lower_bound(tp, pos, confidence), lower_bound(tn, neg, confidence)
    more_pos = _more_than_none(labels_needed(sens, pos, min_tpr, confidence) if pos else None, sens_low, min_tpr)
    more_neg = _more_than_none(labels_needed(spec, neg, min_tnr, confidence) if neg else None, spec_low, min_tnr)
    labeled = int(both.sum())
    more_rows = None
    if more_pos is not None and more_neg is not None:
        share = pos / labeled
        more_rows = max(math.ceil(more_pos / share) if more_pos else 0, math.ceil(more_neg / (1 - share)) if more_neg else 0)
    reasons = _reasons(labeled, (pos, sens, sens_low, min_tpr, more_pos, "sensitivity", "positives", "passed", "fails"),
                       (neg, spec, spec_low, min_tnr, more_neg, "specificity", "negatives", "failed", "passes"),
                       confidence=confidence)
    certified = all(ok for ok, _ in reasons)
    return MetricCertification(
        metric=metric, judged=int(scored.sum()), labeled=labeled, positives=pos, negatives=neg,
        true_positives=tp, true_negatives=tn, sensitivity=sens, specificity=spec,
        sensitivity_low=sens_low, specificity_low=spec_low,
        kappa=cohen_kappa(jj, hh) if labeled else math.nan,
        min_tpr=min_tpr, min_tnr=min_tnr, confidence=confidence,
        more_positives=more_pos, more_negatives=more_neg, more_rows=more_rows,
        certified=certified, reasons=tuple(text for ok, text in reasons if ok == certified),
        met=tuple(text for ok, text in reasons if ok),
    )


def _more_than_none(more: int | None, low: float, minimum: float) -> int | None:
    """At least one more label when the bound misses the minimum (the projection and the bound are two computations)."""
    if more is None:
        return None
    return 0 if low >= minimum else max(more, 1)


def _reasons(labeled: int, *sides: tuple[Any, ...], confidence: float) -> list[tuple[bool, str]]:
    """Each side's condition in words, and whether it is met: met, missed (with the labels still needed), or not
    measurable."""
    if labeled == 0:
        return [(False, "no human label pairs with a row the judge scored: sensitivity and specificity cannot be estimated; "
                "label some of its rows (by case_id)")]
    out = []
    for n, rate, low, minimum, more, name, side, verb, other in sides:
        floor = _minimum(minimum)
        if n == 0:
            least = labels_needed(1.0, 0, minimum, confidence)
            out.append((False, f"{name} cannot be estimated: humans {verb} none of the {labeled} labelled rows (only {other} "
                       f"were labelled); label rows humans {verb} (even a judge right on every one needs {least} of "
                       f"them to show {name} >= {floor})"))
        elif low >= minimum:
            out.append((True, f"{name} lower bound {_low(low)} >= {floor} on {n} {side}"))
        elif more is None:
            out.append((False, f"{name} lower bound {_low(low)} < {floor} on {n} {side}, and the observed {name} "
                               f"{_num(rate)} is not above {floor}: more labels cannot certify this judge"))
        else:
            out.append((False, f"{name} lower bound {_low(low)} < {floor} on {n} {side}; about {more} more {side} "
                               f"at the observed {_num(rate)} would certify it"))
    return out


def _check_options(min_tpr: float, min_tnr: float, confidence: float) -> None:
    for name, value in (("min_tpr", min_tpr), ("min_tnr", min_tnr)):
        if not isinstance(value, (int, float)) or not 0 < value < 1:
            raise ConfigError(f"{name}={value!r}: give the least rate to certify, between 0 and 1 (e.g. 0.8)")
    if not isinstance(confidence, (int, float)) or not 0.5 < confidence < 1:
        raise ConfigError(f"confidence={confidence!r}: give the confidence of the lower bounds, between 0.5 and 1 "
                          "(e.g. 0.95)")


# -- every judged metric of a result -----------------------------------------------------------


@dataclass(frozen=True)
class JudgeCertification:
    """:func:`certify_judge`'s answer: one :class:`MetricCertification` per judged 0/1 metric.

    ``certified`` is True when every one is; ``str()`` is the table ``levelfield judge-check`` prints."""

    metrics: tuple[MetricCertification, ...]
    min_tpr: float
    min_tnr: float
    confidence: float
    agent: str | None = None
    labels: int = 0
    """Human labels read (before pairing with the judged rows)."""
    notes: tuple[str, ...] = field(default=())

    @property
    def certified(self) -> bool:
        return bool(self.metrics) and all(m.certified for m in self.metrics)

    @property
    def metric_names(self) -> list[str]:
        return [m.metric for m in self.metrics]

    @property
    def failures(self) -> list[MetricCertification]:
        return [m for m in self.metrics if not m.certified]

    def __getitem__(self, metric: str) -> MetricCertification:
        for m in self.metrics:
            if m.metric == metric:
                return m
        raise KeyError(f"{metric!r} was not certified here; certified: {', '.join(self.metric_names) or '(none)'}")

    def __contains__(self, metric: object) -> bool:
        return any(m.metric == metric for m in self.metrics)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([m.to_dict() for m in self.metrics])

    def to_dict(self) -> dict[str, Any]:
        return {"certified": self.certified, "agent": self.agent, "min_tpr": self.min_tpr, "min_tnr": self.min_tnr,
                "confidence": self.confidence, "metrics": [m.to_dict() for m in self.metrics]}

    def table(self) -> str:
        """The table: per metric the counts, TPR and TNR with their lower bounds, kappa, labels still needed, verdict."""
        conf = f"{self.confidence * 100:g}%"
        who = f" of {self.agent}" if self.agent else ""
        head = (f"Judge certification{who}: exact one-sided {conf} lower bounds; certified when the TPR bound >= "
                f"{_minimum(self.min_tpr)} and the TNR bound >= {_minimum(self.min_tnr)} "
                "(positives: rows humans passed; negatives: rows humans failed)")
        header = ["metric", "judged", "labelled", "TPR", "TPR low", "TNR", "TNR low", "kappa", "more labels", "verdict"]
        rows = [header]
        for m in self.metrics:
            rows.append([
                m.metric, str(m.judged), str(m.labeled),
                f"{_num(m.sensitivity)} ({m.true_positives}/{m.positives})", _low(m.sensitivity_low),
                f"{_num(m.specificity)} ({m.true_negatives}/{m.negatives})", _low(m.specificity_low),
                _num(m.kappa), _more(m), "certified" if m.certified else "NOT certified",
            ])
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = [head, ""]
        for r in rows:
            lines.append("  ".join(c.ljust(w) if i in (0, 8, 9) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                         .rstrip())
        lines.append("")
        lines += [m.describe() for m in self.metrics]
        lines += list(self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _more(m: MetricCertification) -> str:
    if m.certified:
        return "0"
    if m.more_rows is not None:
        return f"~{m.more_rows} rows"
    return "cannot certify" if m.positives and m.negatives else "unknown"


def scored_by_judge(metric: Any, scores: Sequence[Mapping[str, Any]] = ()) -> bool:
    """A metric scored by a judge: it has one, was saved with one, or its rows carry the judge's cost columns."""
    if hasattr(metric, "judge"):
        return True
    spec = getattr(metric, "spec", None) or {}
    if "judge" in (spec.get("args") or {}) or str(spec.get("class", "")).startswith("levelfield.judge."):
        return True
    key = f"{metric.name}/judge_calls"
    return any(key in row for row in scores)


def _score(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def judged_metrics(result: EvalResult, *, binary: bool = True) -> list[str]:
    """The result's metrics scored by a judge (a result read back from a folder too); with ``binary``,
    only those whose scores are all 0/1."""
    scores = result.scores
    return [
        m.name for m in result.metrics
        if scored_by_judge(m, scores) and (not binary or stats.is_binary([_score(s.get(f"{m.name}/score")) for s in scores]))
    ]


def _one_result(result: Any, agent: str | None) -> EvalResult:
    """An EvalResult from a result or a comparison (``agent`` picks one; the only agent besides a baseline otherwise)."""
    results = getattr(result, "results", None)
    if results is None:
        if agent is not None and result.agent_name is not None and agent != result.agent_name:
            raise ConfigError(f"agent={agent!r}: this result is of {result.agent_name!r}")
        return result
    if agent is not None:
        if agent not in results:
            raise ConfigError(f"agent={agent!r} is not an agent of this comparison ({', '.join(results)})")
        return results[agent]
    joined = getattr(result, "baseline", None)
    base = getattr(joined, "name", None)
    others = [a for a in results if a != base]
    if len(others) != 1:
        raise ConfigError(f"which agent's judged rows to certify? pass agent= one of: {', '.join(others)} "
                          "(human labels judge one agent's answers)")
    return results[others[0]]


def _labels(result: EvalResult, human_labels: Any) -> pd.DataFrame | None:
    """The labels table (the dataset's ``human_label`` column when none are given), checked against the cases."""
    if human_labels is None:
        rows = [{"case_id": c.case_id, "human_label": c.metadata["human_label"]}
                for c in result.dataset if c.metadata.get("human_label") is not None]
        if not rows:
            return None
        table = read_human_labels(rows)
    else:
        table = read_human_labels(human_labels)
    check_label_cases(table, result.dataset)
    if "agent" in table and result.agent_name is not None:
        named = set(table["agent"].dropna().astype(str))
        if named and result.agent_name not in named:
            raise ConfigError(f"the human labels are for agent(s) {', '.join(sorted(named))}, not {result.agent_name!r}; "
                              "label this agent's answers (the 'agent' column names whose answer a label judges)")
        table = table[table["agent"].isna() | (table["agent"].astype(str) == result.agent_name)]
    if "trial" in table and result.runs:
        ran = {int(r.trial) for r in result.runs if getattr(r, "trial", None) is not None}
        asked = sorted({int(t) for t in table["trial"].dropna()} - ran)
        if asked:
            raise ConfigError(f"the human labels name trial {', '.join(map(str, asked))}, which this result did not run "
                              f"(its trials: {', '.join(map(str, sorted(ran)))}); fix the trial column, or leave it "
                              "empty to label every trial of a case")
    return table


def _human_column(result: EvalResult, table: pd.DataFrame, metric: str) -> np.ndarray:
    """The human label of each run for ``metric`` (NaN = none), paired by case id and trial (a label without a trial: every trial)."""
    rows = table if "metric" not in table else table[table["metric"].isna() | (table["metric"] == metric)]
    by_key: dict[tuple[str, int | None], float] = {}
    for r in rows.itertuples(index=False):
        trial = getattr(r, "trial", None)
        trial = None if trial is None or (isinstance(trial, float) and math.isnan(trial)) else int(trial)
        by_key[(str(r.case_id), trial)] = r.human_label
    return np.array([by_key.get((run.case_id, run.trial), by_key.get((run.case_id, None), math.nan))
                     for run in result.runs], dtype=float)


def _metrics_to_check(result: EvalResult, table: pd.DataFrame | None, metrics: str | Sequence[str] | None) -> list[str]:
    judged_any = judged_metrics(result, binary=False)
    binary = judged_metrics(result)
    if metrics is not None:
        names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else [str(m) for m in metrics]
    else:
        named = sorted(set(table["metric"].dropna())) if table is not None and "metric" in table else []
        names = list(dict.fromkeys(binary + named))
    if not names:
        others = f" (judged, not 0/1: {', '.join(judged_any)})" if judged_any else ""
        raise MetricError(f"no judged 0/1 metric in this result{others}: certifying a judge needs a metric a judge "
                          f"scored pass/fail; its metrics are: {', '.join(result.metric_names) or '(none)'}")
    for name in names:
        if name not in result.metric_names:
            raise MetricError(f"{name!r} is not a metric of this result; it has: {', '.join(result.metric_names)}")
        if name not in judged_any:
            raise MetricError(f"{name!r} is not scored by a judge: there is no judge to certify "
                              f"(judged metrics: {', '.join(judged_any) or 'none'})")
        if name not in binary:
            raise MetricError(f"{name!r}: its judge gives other scores than 0/1; certifying needs pass/fail verdicts "
                              "(judge it with a pass/fail rubric)")
    return names


def certify_judge(
    result: Any,
    human_labels: Any = None,
    *,
    min_tpr: float = 0.8,
    min_tnr: float = 0.8,
    confidence: float = 0.95,
    metrics: str | Sequence[str] | None = None,
    agent: str | None = None,
) -> JudgeCertification:
    """May this result's judge gate a build? Each judged 0/1 metric's sensitivity and specificity
    against ``human_labels``, with exact one-sided lower bounds at ``confidence``, Cohen's kappa,
    the labels still needed, and certified or not (both bounds at least ``min_tpr`` / ``min_tnr``).

    Args:
        result: an ``EvalResult`` (a saved one too: ``lf.EvalResult.load(folder)``), or a ``Comparison``
            with ``agent=`` naming whose judged rows to certify.
        human_labels: a CSV/JSONL/JSON file with ``case_id`` and ``human_label`` (pass/fail, 1/0,
            true/false) columns, and optionally ``trial``, ``metric`` and ``agent``; a DataFrame, rows,
            or ``{case_id: label}``. None: the dataset's ``human_label`` column.
        min_tpr, min_tnr: the least sensitivity and specificity to certify, between 0 and 1.
        confidence: of the one-sided lower bounds (0.95: each is below the true rate 5% of the time).
        metrics: the judged metrics to certify (default: every judged 0/1 metric, and those the labels name).
        agent: with a comparison, the agent whose answers the labels judge.
    """
    _check_options(min_tpr, min_tnr, confidence)
    one = _one_result(result, agent)
    table = _labels(one, human_labels)
    if table is None:
        raise ConfigError("no human labels: give human_labels= a CSV/JSONL of case_id,human_label (or a 'human_label' "
                          "column in the dataset) to certify the judge")
    names = _metrics_to_check(one, table, metrics)
    scores = one.scores
    out = tuple(
        certify_rates([_score(s.get(f"{name}/score")) for s in scores], _human_column(one, table, name), metric=name,
                      min_tpr=min_tpr, min_tnr=min_tnr, confidence=confidence)
        for name in names
    )
    notes = ()
    if one.runs and len({r.trial for r in one.runs}) > 1:
        notes = ("Each run is a row: a case's trials count separately, so the bounds are somewhat optimistic when "
                 "trials of a case agree.",)
    return JudgeCertification(out, min_tpr=min_tpr, min_tnr=min_tnr, confidence=confidence, agent=one.agent_name,
                              labels=len(table), notes=notes)


@dataclass(frozen=True)
class PooledCertification:
    """:func:`certify_judge_pooled`'s answer: each agent's certification, and the judge's over the labelled
    rows of every agent together (one judge scored them all). ``certified`` is the pooled verdict."""

    agents: dict[str, JudgeCertification]
    pooled: JudgeCertification
    unlabelled: tuple[str, ...] = ()
    """Agents of the record no label judges (left out of the pooled rows, and said so)."""

    @property
    def certified(self) -> bool:
        return self.pooled.certified

    @property
    def metric_names(self) -> list[str]:
        return self.pooled.metric_names

    def to_dict(self) -> dict[str, Any]:
        return {"certified": self.certified, "pooled": self.pooled.to_dict(),
                "agents": {name: c.to_dict() for name, c in self.agents.items()}, "unlabelled": list(self.unlabelled)}

    def table(self) -> str:
        """Each agent's table, then the pooled one."""
        parts = [c.table() for c in self.agents.values()]
        if self.unlabelled:
            parts.append(f"No human label judges the answers of {', '.join(self.unlabelled)}: left out.")
        parts.append(self.pooled.table())
        return "\n\n".join(parts)

    def __str__(self) -> str:
        return self.table()


def certify_judge_pooled(
    results: Mapping[str, Any],
    human_labels: Any,
    *,
    min_tpr: float = 0.8,
    min_tnr: float = 0.8,
    confidence: float = 0.95,
    metrics: str | Sequence[str] | None = None,
) -> PooledCertification:
    """One judge scored several agents' answers: certify it on each agent's labelled rows and on all of them
    together. ``human_labels`` has an ``agent`` column naming whose answer each label judges (a label
    without one judges that case's answer of every agent); ``results`` maps agent names to their results.

    Raises a ConfigError when a label names an agent ``results`` does not hold (no label is dropped).
    """
    _check_options(min_tpr, min_tnr, confidence)
    table = read_human_labels(human_labels)
    if "agent" in table:
        named = set(table["agent"].dropna().astype(str))
        unknown = sorted(named - set(results))
        if unknown:
            raise ConfigError(f"the human labels name agent(s) {', '.join(unknown)}, which the record does not hold "
                              f"({', '.join(results)}); fix the 'agent' column")
    agents: dict[str, JudgeCertification] = {}
    paired: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    unlabelled = []
    for name, result in results.items():
        rows = table if "agent" not in table else table[table["agent"].isna() | (table["agent"].astype(str) == name)]
        if rows.empty:
            unlabelled.append(name)
            continue
        one = certify_judge(result, rows, min_tpr=min_tpr, min_tnr=min_tnr, confidence=confidence, metrics=metrics)
        agents[name] = one
        mine = _labels(result, rows)
        assert mine is not None
        for metric in one.metric_names:
            judged, human = paired.setdefault(metric, ([], []))
            judged.append(np.array([_score(s.get(f"{metric}/score")) for s in result.scores], dtype=float))
            human.append(_human_column(result, mine, metric))
    if not agents:
        raise ConfigError("no human label judges the answers of any agent of this record")
    names = [m for m in next(iter(agents.values())).metric_names if all(m in c for c in agents.values())]
    pooled = tuple(certify_rates(np.concatenate(paired[m][0]), np.concatenate(paired[m][1]), metric=m, min_tpr=min_tpr,
                                 min_tnr=min_tnr, confidence=confidence) for m in names)
    notes = (f"Pooled over the labelled rows of {len(agents)} agents ({', '.join(agents)}).",)
    return PooledCertification(agents, JudgeCertification(pooled, min_tpr=min_tpr, min_tnr=min_tnr, confidence=confidence,
                                                          agent="every agent (pooled)", labels=len(table), notes=notes),
                               tuple(unlabelled))


# -- the gate's question -----------------------------------------------------------------------


def require_certified(
    result: Any,
    metrics: Sequence[str],
    certification: Any = True,
    human_labels: Any = None,
    *,
    option: str = "fail_if_worse",
    agent: str | None = None,
) -> list[str]:
    """Refuse (``UncertifiedJudgeError``) to gate judged ``metrics`` on a judge that is not certified.

    ``certification``: True (certify now from ``human_labels``, or the dataset's ``human_label``
    column, at the default minimums) or a :class:`JudgeCertification` made earlier. Metrics no judge
    scored are let through. Returns the judged metrics checked, certified."""
    one = _one_result(result, agent)
    judged = set(judged_metrics(one, binary=False))
    gated = [m for m in metrics if m in judged]
    if not gated:
        return []
    who = f" ({one.agent_name})" if one.agent_name else ""
    if isinstance(certification, JudgeCertification):
        found = certification
    else:
        table = _labels(one, human_labels)
        if table is None:
            raise UncertifiedJudgeError(
                f"{option} {', '.join(gated)}{who}: a certified judge is required (require_certified_judge) but no human "
                "labels were given; pass human_labels= a CSV/JSONL of case_id,human_label (--human-labels FILE), or "
                "certify it first with lf.certify_judge")
        found = certify_judge(one, table, metrics=gated)
    missing = [m for m in gated if m not in found]
    if missing:
        raise UncertifiedJudgeError(f"{option} {', '.join(missing)}{who}: a certified judge is required but the "
                                    f"certification given covers {', '.join(found.metric_names) or 'no metric'}")
    refused = [found[m] for m in gated if not found[m].certified]
    if refused:
        words = "; ".join(f"{option} {m.metric}{who}: the judge is not certified, so the gate does not decide on it: "
                          f"{m.reason}" for m in refused)
        raise UncertifiedJudgeError(words + " (levelfield judge-check shows the whole certification)")
    return gated
