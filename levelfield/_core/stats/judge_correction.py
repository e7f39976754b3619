"""Judge-corrected pass rates: a judged 0/1 metric's rate, corrected for the judge's own errors.

A judge model that passes some bad answers and fails some good ones biases a pass rate, however
many rows are judged. With human labels on a random subset of rows, the judge's sensitivity
(Se: share of human passes it passes) and specificity (Sp: share of human fails it fails) are
estimated, and the judged rate q is corrected by Rogan & Gladen (1978), "Estimating prevalence
from the results of a screening test", Am. J. Epidemiol. 107(1):71-76::

    p = (q + Sp − 1) / (Se + Sp − 1)

The interval is the delta-method interval of Greenland (1988), "Variance estimation for
epidemiologic effect estimates under misclassification", Stat. Med. 7(7):745-757, which adds the
uncertainty of Se and Sp (from the labelled rows) to that of q (from all judged rows)::

    Var(p) = [Var(q) + p²·Var(Se) + (1 − p)²·Var(Sp)] / (Se + Sp − 1)²

Agreement between judge and humans is Cohen's kappa (Cohen 1960, Educ. Psychol. Meas. 20:37-46).

With ``judge_scores="probability"`` the rate is corrected from the judge's probabilities instead
(the calibration-corrected mean of :mod:`levelfield._core.stats.soft_labels`); sensitivity,
specificity and kappa still describe the verdicts. Where the judge gave probabilities, its
calibration against the labels (Brier score, ECE, reliability table) comes with the correction.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ConfigError, DatasetError, MetricError
from . import inference as stats
from .soft_labels import Calibration, calibration, soft_rate

if TYPE_CHECKING:
    from ..results.result import EvalResult

__all__ = [
    "JudgeCorrection",
    "correct_rate",
    "cohen_kappa",
    "read_human_labels",
    "correct_judged",
    "judged_binary_metrics",
    "check_label_cases",
]

_TRUE = {"1", "1.0", "true", "yes", "pass", "passed", "y"}
_FALSE = {"0", "0.0", "false", "no", "fail", "failed", "n"}


@dataclass(frozen=True)
class JudgeCorrection:
    """A judged 0/1 metric's rate, as judged and as corrected for the judge's errors."""

    metric: str
    rows: int
    """Rows the judge scored."""
    labeled: int
    """Of those, rows with a human label."""
    judged_rate: float
    """The judge's pass rate over all rows (what the summary's mean shows)."""
    judged_low: float
    judged_high: float
    """Wilson interval of the judged rate: sampling error only, centred on a biased value."""
    corrected: float
    """Rogan–Gladen rate, clipped to [0, 1]; NaN when the judge is no better than chance."""
    low: float
    high: float
    """Delta-method interval including the uncertainty of Se and Sp, clipped to [0, 1]."""
    sensitivity: float
    specificity: float
    kappa: float
    """Cohen's kappa between judge and humans on the labelled rows."""
    human_rate: float
    """The pass rate of the labelled rows by the humans alone."""
    confidence: float
    method: str = "rogan-gladen"
    """How ``corrected`` was found: ``"rogan-gladen"`` from the verdicts, ``"calibrated-probability"``
    from the judge's probabilities (``StatsConfig(judge_scores="probability")``)."""
    calibration: Calibration | None = None
    """The judge's probabilities against the labels, when it gave probabilities on labelled rows."""

    def describe(self) -> str:
        """The correction in words: judged, corrected with its interval, and how far to trust the judge."""
        pct = lambda v: "-" if math.isnan(v) else f"{v * 100:.1f}%"  # noqa: E731
        if math.isnan(self.corrected):
            head = (f"{self.metric}: judged {pct(self.judged_rate)}; no correction: the judge is no better than "
                    f"chance against {self.labeled} human labels")
        else:
            how = " and the judge's probabilities" if self.method == "calibrated-probability" else ""
            head = (f"{self.metric}: judged {pct(self.judged_rate)}, corrected {pct(self.corrected)} "
                    f"[{pct(self.low)}, {pct(self.high)}] using {self.labeled} human labels{how}")
        words = (f"{head}; judge sensitivity {self.sensitivity:.2f}, specificity {self.specificity:.2f}, "
                 f"kappa {self.kappa:.2f}")
        return words if self.calibration is None else f"{words}\n{self.calibration.describe()}"

    def summary_items(self) -> dict[str, float | int]:
        """Summary keys: ``<metric>/corrected_mean``, ``/corrected_ci_low|high``,
        ``/judge_sensitivity|specificity|kappa`` and ``/human_labels``."""
        m = self.metric
        return {
            f"{m}/corrected_mean": self.corrected,
            f"{m}/corrected_ci_low": self.low,
            f"{m}/corrected_ci_high": self.high,
            f"{m}/judge_sensitivity": self.sensitivity,
            f"{m}/judge_specificity": self.specificity,
            f"{m}/judge_kappa": self.kappa,
            f"{m}/human_labels": self.labeled,
            **(self.calibration.summary_items() if self.calibration is not None else {}),
        }


def cohen_kappa(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Cohen's kappa of two 0/1 raters over the items both rated (NaN = not rated): (po − pe)/(1 − pe)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size == 0:
        return math.nan
    observed = float(np.mean(x == y))
    px, py = float(x.mean()), float(y.mean())
    expected = px * py + (1 - px) * (1 - py)
    if expected == 1:
        return math.nan  # both raters gave one single label: agreement beyond chance is undefined
    return (observed - expected) / (1 - expected)


def correct_rate(
    judged: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    *,
    metric: str = "metric",
    confidence: float = 0.95,
) -> JudgeCorrection:
    """Correct the judge's 0/1 verdicts ``judged`` (one per row, NaN = not scored) with ``human``
    labels on some rows (NaN = unlabelled); see the module docs for the estimator and interval."""
    from scipy.stats import norm

    j, h = np.asarray(judged, dtype=float).ravel(), np.asarray(human, dtype=float).ravel()
    if j.shape != h.shape:
        raise ConfigError(f"{metric}: {j.size} judge verdicts but {h.size} human labels; give one of each per row")
    if not (stats.is_binary(j) or np.isnan(j).all()):
        raise MetricError(f"{metric}: the judge correction needs 0/1 scores; this metric has other values")
    if not (stats.is_binary(h) or np.isnan(h).all()):
        raise ConfigError(f"{metric}: human labels must be 0/1 (pass/fail)")
    scored = ~np.isnan(j)
    both = scored & ~np.isnan(h)
    rows, labeled = int(scored.sum()), int(both.sum())
    positives, negatives = h[both] == 1, h[both] == 0
    if positives.sum() == 0 or negatives.sum() == 0:
        raise ConfigError(
            f"{metric}: the human labels need both passes and fails to measure the judge "
            f"(got {int(positives.sum())} passes and {int(negatives.sum())} fails on {labeled} judged rows)"
        )
    q = float(j[scored].mean())
    judged_interval = stats.wilson_interval(int(j[scored].sum()), rows, confidence)
    se_n, sp_n = int(positives.sum()), int(negatives.sum())
    sens = float(j[both][positives].mean())
    spec = float(1 - j[both][negatives].mean())
    youden = sens + spec - 1
    z = float(norm.ppf(0.5 + confidence / 2))
    if youden <= 0:
        corrected = low = high = math.nan
    else:
        p = (q + spec - 1) / youden
        var = (q * (1 - q) / rows + p**2 * sens * (1 - sens) / se_n + (1 - p) ** 2 * spec * (1 - spec) / sp_n) / youden**2
        half = z * math.sqrt(var)
        corrected = min(1.0, max(0.0, p))
        low, high = max(0.0, p - half), min(1.0, p + half)
    return JudgeCorrection(
        metric=metric,
        rows=rows,
        labeled=labeled,
        judged_rate=q,
        judged_low=judged_interval.low,
        judged_high=judged_interval.high,
        corrected=corrected,
        low=low,
        high=high,
        sensitivity=sens,
        specificity=spec,
        kappa=cohen_kappa(j[both], h[both]),
        human_rate=float(h[both].mean()),
        confidence=confidence,
    )


def _label(value: Any, where: str) -> float:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value) in (0.0, 1.0):
        return float(value)
    text = str(value).strip().lower()
    if text == "" or text == "nan":
        return math.nan
    if text in _TRUE:
        return 1.0
    if text in _FALSE:
        return 0.0
    raise DatasetError(f"{where}: human_label {value!r} is not a pass/fail label; use 1/0, true/false or pass/fail")


def read_human_labels(source: Any) -> pd.DataFrame:
    """Human labels as a table of ``case_id``, ``human_label`` (1.0/0.0) and, when given, ``trial``, ``metric`` and ``agent``.

    ``source``: a CSV, JSONL or JSON file, a DataFrame, a list of row dicts, or ``{case_id: label}``.
    """
    where = "human labels"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        where = str(path)
        if not path.is_file():
            raise DatasetError(f"{path}: no such labels file (expected a CSV or JSONL with case_id and human_label columns)")
        try:
            if path.suffix.lower() == ".csv":
                table = pd.read_csv(path, dtype={"case_id": str})
            elif path.suffix.lower() in (".jsonl", ".ndjson"):
                table = pd.read_json(path, lines=True, dtype={"case_id": str})
            elif path.suffix.lower() == ".json":
                table = pd.read_json(path, dtype={"case_id": str})
            else:
                raise DatasetError(f"{path}: labels must be a .csv, .jsonl or .json file")
        except (ValueError, OSError) as exc:
            if isinstance(exc, DatasetError):
                raise
            raise DatasetError(f"{path}: cannot read the labels ({exc})") from None
    elif isinstance(source, pd.DataFrame):
        table = source.copy()
    elif isinstance(source, Mapping):
        table = pd.DataFrame({"case_id": [str(k) for k in source], "human_label": list(source.values())})
    elif isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        table = pd.DataFrame(list(source))
    else:
        raise ConfigError(f"human_labels: expected a file, a DataFrame, rows or {{case_id: label}}, got {type(source).__name__}")
    missing = [c for c in ("case_id", "human_label") if c not in table]
    if missing:
        raise DatasetError(f"{where}: needs columns case_id and human_label; missing {', '.join(missing)}")
    table = table.assign(case_id=table["case_id"].astype(str))
    # Rows are numbered as a spreadsheet shows them: header is row 1.
    table["human_label"] = [_label(v, f"{where} row {i + 2}") for i, v in enumerate(table["human_label"])]
    if "trial" in table:
        table["trial"] = [_trial(v, f"{where} row {i + 2}") for i, v in enumerate(table["trial"])]
    columns = [c for c in ("case_id", "trial", "metric", "agent", "human_label") if c in table]
    table = table[columns]
    _refuse_conflicts(table, where)
    return table


def _trial(value: Any, where: str) -> float:
    """A label's trial number (NaN: every trial of the case)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str) and not value.strip()):
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number != int(number) or number < 0:
        raise DatasetError(f"{where}: trial {value!r} is not a trial number; give the run's trial (0, 1, ...) or leave "
                           "it empty to label every trial of the case")
    return float(number)


def _refuse_conflicts(table: pd.DataFrame, where: str) -> None:
    """Two rows labelling the same answer (case, trial, metric, agent) differently: which one is right is not ours to pick."""
    keys = [c for c in ("case_id", "trial", "metric", "agent") if c in table]
    seen: dict[tuple[Any, ...], tuple[int, float]] = {}
    for i, row in enumerate(table[keys + ["human_label"]].itertuples(index=False)):
        key = tuple(None if isinstance(v, float) and math.isnan(v) else v for v in row[:-1])
        label = row[-1]
        if key in seen and not (math.isnan(label) and math.isnan(seen[key][1])) and seen[key][1] != label:
            first, said = seen[key]
            names = {1.0: "pass", 0.0: "fail"}
            what = f"case {key[0]!r}" + "".join(f", {k} {v!r}" for k, v in zip(keys[1:], key[1:]) if v is not None)
            raise DatasetError(f"{where} rows {first + 2} and {i + 2}: {what} is labelled both "
                               f"{names.get(said, 'empty')} and {names.get(label, 'empty')}; keep the right one and "
                               "delete the other")
        seen.setdefault(key, (i, label))


def check_label_cases(table: pd.DataFrame, dataset: Iterable[Any]) -> None:
    """Raise when labels name cases the dataset does not have (checked before any agent runs)."""
    known = {c.case_id for c in dataset}
    unknown = sorted(set(table["case_id"]) - known)
    if unknown:
        raise DatasetError(f"human labels name {len(unknown)} case(s) not in the dataset: {', '.join(unknown[:5])}")


def labels_of(result: EvalResult, labels: Any = None) -> pd.DataFrame | None:
    """The human labels of ``result``'s runs, the one reader of judge correction, certification and
    panels: ``labels`` as :func:`read_human_labels` reads them, or the dataset's ``human_label``
    column when None (None when it has none either), checked against the dataset's cases. With an
    ``agent`` column, only the rows of ``result``'s agent (or naming none) are kept; labels that name
    only other agents are refused, since a label judges one agent's answer."""
    if labels is None:
        rows = [{"case_id": c.case_id, "human_label": c.metadata["human_label"]}
                for c in result.dataset if c.metadata.get("human_label") is not None]
        if not rows:
            return None
        table = read_human_labels(rows)
    else:
        table = read_human_labels(labels)
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


def labels_by_run(table: pd.DataFrame | None, runs: Sequence[Any], metric: str) -> np.ndarray:
    """The human label of each of ``runs`` for ``metric`` (NaN: none), paired by case id and trial; a
    label without a trial labels every trial of its case, one without a metric every metric."""
    if table is None:
        return np.full(len(runs), np.nan)
    rows = table if "metric" not in table else table[table["metric"].isna() | (table["metric"] == metric)]
    by_key: dict[tuple[str, int | None], float] = {}
    for r in rows.itertuples(index=False):
        trial = getattr(r, "trial", None)
        trial = None if trial is None or (isinstance(trial, float) and math.isnan(trial)) else int(trial)
        by_key[(str(r.case_id), trial)] = float(r.human_label)
    return np.array([by_key.get((str(run.case_id), run.trial), by_key.get((str(run.case_id), None), math.nan))
                     for run in runs], dtype=float)


def correct_judged(
    result: EvalResult, labels: Any = None, *, metrics: Sequence[str] | None = None, confidence: float = 0.95,
    judge_scores: str = "verdict",
) -> dict[str, JudgeCorrection]:
    """Judge corrections of a result's judged 0/1 metrics from human labels, one per metric.

    ``labels``: anything :func:`read_human_labels` reads; None = the dataset's ``human_label``
    column. Labels pair with runs by ``case_id`` (and ``trial`` when given); a ``metric`` column
    says which metric a label is for, otherwise labels apply to every judged 0/1 metric
    (``metrics`` picks them by name instead). Failed runs have no judged score and are left out.
    Each run is a row: with several trials, a case's runs count as separate rows, so the interval
    is somewhat too narrow when trials of a case agree. ``judge_scores="probability"`` corrects the
    rate from the judge's probabilities (``<metric>/p``; see :mod:`levelfield._core.stats.soft_labels`).
    """
    if judge_scores not in ("verdict", "probability"):
        raise ConfigError(f"judge_scores={judge_scores!r}: use 'verdict' or 'probability'")
    table = labels_of(result, labels)
    if table is None:
        raise ConfigError("no human labels: give human_labels=file, or a 'human_label' column in the dataset")
    check_label_cases(table, result.dataset)
    if metrics is None:
        named = sorted(set(table["metric"].dropna())) if "metric" in table else None
        metrics = named or judged_binary_metrics(result)
        if not metrics:
            raise MetricError(
                "human labels were given but no judged 0/1 metric was scored; name the metric in a 'metric' column "
                "of the labels, or judge with a pass/fail rubric"
            )
    corrections = {}
    for name in metrics:
        if name not in result.metric_names:
            raise MetricError(f"human labels are for {name!r}, which is not a metric of this evaluation")
        judged = [_score(s.get(f"{name}/score")) for s in result.scores]
        human = labels_by_run(table, result.runs, name).tolist()
        correction = correct_rate(judged, human, metric=name, confidence=confidence)
        corrections[name] = _with_probabilities(correction, result, name, human, judge_scores)
    return corrections


def _with_probabilities(
    correction: JudgeCorrection, result: EvalResult, name: str, human: list[float], judge_scores: str
) -> JudgeCorrection:
    """``correction`` with the judge's calibration (when it gave probabilities on labelled rows) and,
    for ``judge_scores="probability"``, the rate corrected from its probabilities."""
    from dataclasses import replace

    from .soft_labels import soft_values

    if judge_scores == "probability":
        soft = soft_values(result, name)  # refused when the judge gave no probability
    else:
        soft = np.array([_score(s.get(f"{name}/p")) for s in result.scores], dtype=float)
        if np.isnan(soft).all():
            return correction
    probs = np.array([_score(s.get(f"{name}/p")) for s in result.scores], dtype=float)
    h = np.asarray(human, dtype=float)
    fitted = calibration(probs, h, metric=name) if (~np.isnan(probs) & ~np.isnan(h)).any() else None
    if judge_scores != "probability":
        return replace(correction, calibration=fitted)
    rate = soft_rate(soft, h, confidence=correction.confidence, metric=name)
    judged = stats.mean_interval(soft[~np.isnan(soft)], correction.confidence)
    return replace(correction, judged_rate=_known_mean(soft), judged_low=judged.low, judged_high=judged.high,
                   corrected=rate.estimate, low=rate.low, high=rate.high, method="calibrated-probability",
                   calibration=fitted)


def _known_mean(values: np.ndarray) -> float:
    """The mean of the known values (NaN when none)."""
    known = values[~np.isnan(values)]
    return float(known.mean()) if known.size else math.nan


def _score(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def judged_binary_metrics(result: EvalResult) -> list[str]:
    """Names of the result's metrics scored by a judge model whose scores are all 0/1."""
    return [
        m.name for m in result.metrics
        if hasattr(m, "judge") and stats.is_binary([_score(s.get(f"{m.name}/score")) for s in result.scores])
    ]
