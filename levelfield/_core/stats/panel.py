"""What a panel of judges is worth: each judge's accuracy, their error correlation, the effective number of votes, the cheapest subset.

A judged metric built with ``judges=[...]`` keeps every judge's votes per row
(``<metric>/judge/<name>/votes``, see ``levelfield.judge.panel``). :func:`panel_report` reads them
back and reports, per panel metric:

- each judge's **accuracy** against human labels (where given; pass/fail labels, read as
  :func:`~levelfield._core.stats.judge_correction.labels_of` reads them) and its agreement
  with the panel's majority;
- the **pairwise error correlation** between judges: the Pearson correlation of their error
  indicators. With human labels an error is a verdict that differs from the label (on labelled
  rows); without labels it is a verdict that differs from the whole panel's majority (on every
  row). The report says which it used. Disagreement with the majority is not error: an error the
  whole panel shares looks like a right answer, and a judge's own vote is part of the majority
  (in simulation these correlations come out near zero or negative whatever the true error
  correlation), so without labels it describes how the judges differ, not what they are worth;
- the **effective number of independent votes** (Kish's design effect for correlated
  observations), from human labels only: n votes whose errors have mean pairwise correlation ρ̄
  are worth ``n_eff = n / (1 + (n − 1)·ρ̄)`` independent ones (``n² / Σᵢⱼ Rᵢⱼ`` for their error
  correlation matrix R, with ρ̄ the mean off-diagonal entry). It is the variance of the mean of
  n equally noisy votes, ``σ²·(1 + (n − 1)·ρ̄)/n``, set equal to that of n_eff independent ones.
  The votes are every judge × sample; with ``num_samples > 1`` the judges alone (each by its
  majority over its samples) are reported too. It is not given (NaN) without labels, nor when
  some pair's correlation cannot be measured (a judge that never errs on the labelled rows): the
  report names those judges;
- the **cheapest subset** (judges × the first s samples of each) whose majority reaches
  ``target_agreement`` with the reference: the human labels when given, else the full panel's
  majority. Cost per vote is a judge's recorded tokens per vote when every judge reports tokens,
  else its calls per vote (retries included; cached answers cost nothing and are left out), or
  what ``costs={name: cost per vote}`` says.

Majorities and ties: a set of votes' verdict is its most common rating (also for a metric whose
score is the votes' mean, e.g. a 1-5 rubric: the report compares ratings, not means); a tie is read as an even
chance of each tied rating (as the metric's score, a pass/fail tie scores 0.5). Two verdicts agree
by ``1 − total variation distance`` of these chances: 1 when both are the same rating, 0.5 between
a tie and one of its ratings, 1 between equal ties. A subset with no vote on a row agrees 0 there.
An error indicator is ``1 − agreement`` with the reference.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError, MetricError
from .judge_correction import labels_by_run, labels_of

if TYPE_CHECKING:
    from ..results.result import EvalResult

__all__ = ["PanelReport", "PanelReports", "JudgeStanding", "PanelSubset", "panel_report", "analyse_panel",
           "effective_votes", "panel_metrics", "EXHAUSTIVE_JUDGES"]

EXHAUSTIVE_JUDGES = 12
"""Panels up to this many judges have every subset tried; larger ones have subsets of up to 3 judges and the full panel."""
_SMALL_SUBSETS = 3


@dataclass(frozen=True)
class JudgeStanding:
    """One judge of a panel: where it voted, how often it was right, what a vote cost."""

    name: str
    voted: int
    """Rows on which it gave a verdict."""
    failed: int
    """Rows on which it gave none (a recorded failure of that judge on that row)."""
    accuracy: float
    """Agreement with the human labels on the labelled rows it voted on (NaN: no labels)."""
    labelled: int
    agreement_with_panel: float
    """Agreement of its verdict with the full panel's majority, on the rows it voted on."""
    cost_per_vote: float


@dataclass(frozen=True)
class PanelSubset:
    """Some of the panel's judges, each asked ``samples`` times: their majority's agreement with the reference and cost a row."""

    judges: tuple[str, ...]
    samples: int
    agreement: float
    cost: float

    @property
    def votes(self) -> int:
        return len(self.judges) * self.samples

    def describe(self, unit: str) -> str:
        times = f"{self.samples} sample" + ("s" if self.samples > 1 else "")
        return f"{' + '.join(self.judges)} × {times}: {_pct(self.agreement)} agreement, {_cost(self.cost, unit)} a row"


@dataclass(frozen=True)
class PanelReport:
    """What one panel metric's judges are worth (see the module's description for each figure)."""

    metric: str
    judges: tuple[str, ...]
    samples: int
    rows: int
    """Rows with at least one vote."""
    labelled: int
    """Of those, rows with a human label."""
    errors_against: str
    """``"humans"``: errors are differences from the human labels (labelled rows); ``"panel"``: from the panel's majority."""
    standings: tuple[JudgeStanding, ...]
    judge_correlation: np.ndarray
    """Pairwise error correlation between judges (each judge's verdict its majority over its samples); NaN: undefined."""
    mean_judge_correlation: float
    effective_judges: float
    """``J / (1 + (J − 1)·ρ̄)`` over the judges' own verdicts."""
    mean_vote_correlation: float
    """Mean pairwise error correlation over all judge × sample votes."""
    effective_votes: float
    """``n / (1 + (n − 1)·ρ̄)`` over all n = judges × samples votes."""
    target_agreement: float
    agreement_against: str
    """``"humans"`` or ``"panel"``: what the subsets' agreement is measured against."""
    full: PanelSubset
    cheapest: PanelSubset | None
    """The cheapest subset reaching ``target_agreement`` (None: none does)."""
    best: PanelSubset
    """The subset with the highest agreement (the cheapest of those)."""
    cost_unit: str
    """``"tokens"``, ``"calls"`` (recorded), or ``"given"`` (``costs={...}``, in the caller's unit)."""
    subsets_tried: int
    notes: tuple[str, ...] = ()

    @property
    def votes(self) -> int:
        return len(self.judges) * self.samples

    def summary_items(self) -> dict[str, float | int]:
        """Summary keys: ``<metric>/panel_effective_votes``, ``/panel_votes``, ``/panel_error_correlation`` and the cheapest subset's cost and agreement."""
        m = self.metric
        out: dict[str, float | int] = {
            f"{m}/panel_votes": self.votes,
            f"{m}/panel_effective_votes": self.effective_votes,
            f"{m}/panel_error_correlation": self.mean_vote_correlation,
            f"{m}/panel_full_cost": self.full.cost,
        }
        if self.cheapest is not None:
            out[f"{m}/panel_cheapest_cost"] = self.cheapest.cost
            out[f"{m}/panel_cheapest_agreement"] = self.cheapest.agreement
        return out

    def __str__(self) -> str:
        times = f"{self.samples} sample" + ("s" if self.samples > 1 else "")
        labels = f" ({self.labelled} with human labels)" if self.labelled else " (no human labels)"
        lines = [f"{self.metric}: a panel of {len(self.judges)} judges × {times}, {self.rows} rows{labels}"]
        width = max(len("judge"), *(len(n) for n in self.judges))
        lines.append(f"  {'judge':<{width}}  {'voted':>6}  {'failed':>6}  {'accuracy (humans)':>18}  "
                     f"{'agrees with panel':>17}  cost/vote ({self.cost_unit})")
        for s in self.standings:
            acc = f"{_pct(s.accuracy)} ({s.labelled})" if s.labelled else "-"
            lines.append(f"  {s.name:<{width}}  {s.voted:>6}  {s.failed:>6}  {acc:>18}  "
                         f"{_pct(s.agreement_with_panel):>17}  {s.cost_per_vote:,.4g}")
        against = (f"errors against the human labels, {self.labelled} labelled rows" if self.errors_against == "humans"
                   else f"no human labels: errors are disagreements with the panel's majority, {self.rows} rows")
        lines.append(f"  error correlation between judges ({against}):")
        lines.append("    " + " " * width + "".join(f"  {n[:10]:>10}" for n in self.judges))
        for i, name in enumerate(self.judges):
            cells = "".join("  " + (f"{'-':>10}" if i == j else f"{_num(self.judge_correlation[i, j]):>10}")
                            for j in range(len(self.judges)))
            lines.append(f"    {name:<{width}}{cells}")
        if not self.labelled:
            lines.append("  effective independent votes: not measured: it needs human labels (human_labels=...); "
                         "without them an error the whole panel shares looks like a right answer")
        elif math.isnan(self.effective_votes):
            lines.append(f"  effective independent votes: not measured for these {self.votes} votes (see the note)")
        else:
            lines.append(f"  effective independent votes: {_num(self.effective_votes)} of {self.votes} "
                         f"(mean pairwise error correlation {_num(self.mean_vote_correlation)}; n / (1 + (n − 1)·ρ̄))")
        if self.samples > 1 and self.labelled:
            lines.append(f"  the {len(self.judges)} judges alone (each its majority over its samples): "
                         f"{_num(self.effective_judges)} of {len(self.judges)} "
                         f"(mean error correlation {_num(self.mean_judge_correlation)})")
        ref = "the human labels" if self.agreement_against == "humans" else "the full panel's majority"
        target = f"{_pct(self.target_agreement)} agreement with {ref}"
        if self.cheapest is None:
            lines.append(f"  no subset reaches {target}; the best is {self.best.describe(self.cost_unit)}")
        else:
            lines.append(f"  cheapest subset reaching {target}: {self.cheapest.describe(self.cost_unit)}")
        lines.append(f"  the full panel: {self.full.describe(self.cost_unit)} ({self.subsets_tried} subsets tried)")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


class PanelReports(dict):
    """``{metric: PanelReport}`` for every panel metric of a result; ``print()`` shows them all."""

    def __str__(self) -> str:
        return "\n\n".join(str(r) for r in self.values())

    def summary_items(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        for report in self.values():
            out.update(report.summary_items())
        return out


def _cost(value: float, unit: str) -> str:
    if unit == "given":  # costs={...}: the caller's own unit
        return f"{value:,.4g}"
    if unit in ("calls", "tokens") and value == 1:
        unit = unit[:-1]
    return f"{value:,.4g} {unit}"


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * 100:.1f}%"


def _num(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}"


# -- the figures ------------------------------------------------------------------------------------

def effective_votes(n: int, mean_correlation: float) -> float:
    """Kish's design effect: n votes with mean pairwise error correlation ρ̄ are worth ``n / (1 + (n − 1)·ρ̄)`` independent ones.

    NaN when ρ̄ is unknown or ``1 + (n − 1)·ρ̄ ≤ 0`` (an impossible average for n votes)."""
    if n == 1:
        return 1.0
    if mean_correlation is None or math.isnan(mean_correlation):
        return math.nan
    design = 1 + (n - 1) * mean_correlation
    return n / design if design > 0 else math.nan


def _chances(counts: np.ndarray) -> np.ndarray:
    """Each rating's chance of being the verdict: the modal ratings share it evenly; no votes, all zero."""
    top = counts.max(axis=-1, keepdims=True)
    modal = (counts == top) & (top > 0)
    k = modal.sum(axis=-1, keepdims=True)
    return np.divide(modal, k, out=np.zeros(counts.shape), where=k > 0)


def _agreement(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """1 − total variation distance of two verdicts' chances, per row."""
    return np.minimum(p, q).sum(axis=-1)


def _correlations(errors: np.ndarray, min_rows: int = 3) -> np.ndarray:
    """Pairwise Pearson correlation of the columns of ``errors`` (rows × m, NaN: no error indicator), over the rows both have.

    NaN where fewer than ``min_rows`` rows are shared or either column is constant on them."""
    m = errors.shape[1]
    out = np.full((m, m), np.nan)
    present = ~np.isnan(errors)
    for i in range(m):
        out[i, i] = 1.0
        for j in range(i + 1, m):
            both = present[:, i] & present[:, j]
            if both.sum() < min_rows:
                continue
            x, y = errors[both, i], errors[both, j]
            sx, sy = x.std(), y.std()
            if sx == 0 or sy == 0:
                continue
            out[i, j] = out[j, i] = float(((x - x.mean()) * (y - y.mean())).mean() / (sx * sy))
    return out


def _mean_off_diagonal(matrix: np.ndarray) -> float:
    """The mean pairwise correlation; NaN when any pair has none (a mean of the rest would speak for pairs not measured)."""
    m = matrix.shape[0]
    if m < 2:
        return math.nan
    values = matrix[np.triu_indices(m, k=1)]
    return math.nan if np.isnan(values).any() else float(values.mean())


def analyse_panel(
    votes: np.ndarray,
    names: Sequence[str],
    *,
    human: np.ndarray | None = None,
    cost_per_vote: Sequence[float] | None = None,
    cost_unit: str = "calls",
    target_agreement: float = 0.95,
    against: str | None = None,
    metric: str = "panel",
) -> PanelReport:
    """The :class:`PanelReport` of ``votes`` (rows × judges × samples; NaN: no vote), with ``human`` labels per row (NaN: none).

    ``against``: ``"humans"`` or ``"panel"`` for the subsets' agreement (default: humans when labels exist).
    """
    votes = np.asarray(votes, dtype=float)
    if votes.ndim != 3:
        raise ConfigError(f"panel votes must be rows × judges × samples, got shape {votes.shape}")
    _check_target(target_agreement)
    rows_all, n_judges, n_samples = votes.shape
    if len(names) != n_judges:
        raise ConfigError(f"panel: {len(names)} names for {n_judges} judges")
    costs = np.ones(n_judges) if cost_per_vote is None else np.asarray(cost_per_vote, dtype=float)
    human = np.full(rows_all, np.nan) if human is None else np.asarray(human, dtype=float)
    voted_any = ~np.isnan(votes).all(axis=(1, 2))
    votes, human = votes[voted_any], human[voted_any]
    rows = votes.shape[0]
    labelled_rows = ~np.isnan(human)
    labelled = int(labelled_rows.sum())
    ratings = np.unique(np.concatenate([votes[~np.isnan(votes)], human[labelled_rows]]))
    if labelled and not set(ratings.tolist()) <= {0.0, 1.0}:
        raise MetricError(f"metric {metric!r}: human labels are pass/fail, but its judges' ratings are "
                          f"{sorted(set(ratings.tolist()) - {0.0, 1.0})[:5]} besides 0/1; the panel report compares "
                          "labels with pass/fail verdicts only; leave out human_labels to measure against the panel's majority")
    if against is None:
        against = "humans" if labelled else "panel"
    if against not in ("humans", "panel"):
        raise ConfigError(f"panel_report: against must be 'humans' or 'panel', got {against!r}")
    if against == "humans" and not labelled:
        raise ConfigError(f"panel_report: against='humans' but no row of {metric!r} has a human label; "
                          "give human_labels= (a file, a DataFrame or {case_id: label})")
    # One-hot of every vote: rows × judges × samples × ratings.
    onehot = (votes[..., None] == ratings) & ~np.isnan(votes)[..., None]
    # Counts of each judge's first s samples: judges × samples(s = 1..S) × rows × ratings.
    cumulative = np.cumsum(onehot, axis=2).transpose(1, 2, 0, 3).astype(float)
    panel_p = _chances(cumulative[:, -1].sum(axis=0))
    human_p = (human[:, None] == ratings).astype(float)
    if against == "humans":
        ref_p, ref_rows = human_p, labelled_rows
    else:
        ref_p, ref_rows = panel_p, np.ones(rows, dtype=bool)
    err_ref_p, err_rows = (human_p, labelled_rows) if labelled else (panel_p, np.ones(rows, dtype=bool))

    # Each judge's own verdict (majority over its samples), its standing and its errors.
    judge_p = _chances(cumulative[:, -1])  # judges × rows × ratings
    judge_voted = ~np.isnan(votes).all(axis=2)  # rows × judges
    standings = []
    judge_errors = np.full((rows, n_judges), np.nan)
    for j, name in enumerate(names):
        on = judge_voted[:, j]
        lab = on & labelled_rows
        accuracy = float(_agreement(judge_p[j][lab], human_p[lab]).mean()) if lab.any() else math.nan
        agreement = float(_agreement(judge_p[j][on], panel_p[on]).mean()) if on.any() else math.nan
        keep = on & err_rows
        judge_errors[keep, j] = 1 - _agreement(judge_p[j][keep], err_ref_p[keep])
        standings.append(JudgeStanding(name, int(on.sum()), int(rows - on.sum()), accuracy, int(lab.sum()), agreement,
                                       float(costs[j])))
    judge_corr = _correlations(judge_errors[err_rows])
    mean_judge = _mean_off_diagonal(judge_corr)
    # Every judge × sample vote's error: 1 − the reference's chance of its rating.
    vote_errors = np.full((rows, n_judges * n_samples), np.nan)
    for j in range(n_judges):
        for s in range(n_samples):
            has = ~np.isnan(votes[:, j, s]) & err_rows
            vote_errors[has, j * n_samples + s] = 1 - (onehot[has, j, s] * err_ref_p[has]).sum(axis=-1)
    vote_corr = _correlations(vote_errors[err_rows])
    mean_vote = _mean_off_diagonal(vote_corr) if n_judges * n_samples > 1 else math.nan

    # Subsets: every combination of judges (or, for big panels, up to 3 and all), each with its first s samples.
    if n_judges <= EXHAUSTIVE_JUDGES:
        combos: Iterable[tuple[int, ...]] = itertools.chain.from_iterable(
            itertools.combinations(range(n_judges), k) for k in range(1, n_judges + 1))
    else:
        combos = itertools.chain(
            itertools.chain.from_iterable(itertools.combinations(range(n_judges), k) for k in range(1, _SMALL_SUBSETS + 1)),
            [tuple(range(n_judges))])
    tried: list[PanelSubset] = []
    ref_of_rows = ref_p[ref_rows]
    combos = list(combos)
    for start in range(0, len(combos), 256):
        chunk = combos[start:start + 256]
        member = np.zeros((len(chunk), n_judges))
        for i, combo in enumerate(chunk):
            member[i, list(combo)] = 1.0
        for s in range(1, n_samples + 1):
            # rows × subsets × ratings: each subset's counts of each rating on each row.
            counts = (cumulative[:, s - 1][:, ref_rows].transpose(1, 2, 0) @ member.T).transpose(0, 2, 1)
            agree = (_agreement(_chances(counts), ref_of_rows[:, None, :]).mean(axis=0) if ref_rows.any()
                     else np.full(len(chunk), np.nan))
            for i, combo in enumerate(chunk):
                tried.append(PanelSubset(tuple(names[j] for j in combo), s, float(agree[i]),
                                         float(costs[list(combo)].sum() * s)))
    full = next(t for t in tried if len(t.judges) == n_judges and t.samples == n_samples)
    order = {n: i for i, n in enumerate(names)}
    key = lambda t: (t.cost, -t.agreement, t.votes, [order[n] for n in t.judges])  # noqa: E731
    reaching = [t for t in tried if t.agreement >= target_agreement - 1e-12]
    cheapest = min(reaching, key=key) if reaching else None
    top = max(t.agreement for t in tried)
    best = min((t for t in tried if t.agreement >= top - 1e-12), key=key)
    notes = []
    if labelled and against == "panel":
        notes.append("subsets are measured against the full panel's majority, errors against the human labels")
    if n_judges > EXHAUSTIVE_JUDGES:
        notes.append(f"more than {EXHAUSTIVE_JUDGES} judges: subsets of up to {_SMALL_SUBSETS} judges and the full panel were tried")
    constant = [names[j] for j in range(n_judges)
                if (~np.isnan(judge_errors[err_rows, j])).sum() < 3 or np.nanstd(judge_errors[err_rows, j]) == 0]
    if n_judges * n_samples > 1 and (math.isnan(mean_vote) or math.isnan(mean_judge)):
        where = "on the labelled rows" if labelled else "against the panel's majority"
        why = (f"{', '.join(constant)} never or always erred {where} (or voted on fewer than 3 rows), so "
               "no error correlation with them can be measured" if constant
               else "some pairs of votes share fewer than 3 rows or never or always err together")
        notes.append(f"{why}; the effective votes need every pair's (label more rows)" if labelled else why)
    return PanelReport(
        metric=metric, judges=tuple(names), samples=n_samples, rows=rows, labelled=labelled,
        errors_against="humans" if labelled else "panel", standings=tuple(standings),
        judge_correlation=judge_corr, mean_judge_correlation=mean_judge,
        effective_judges=effective_votes(n_judges, mean_judge) if labelled else math.nan,
        mean_vote_correlation=mean_vote,
        effective_votes=effective_votes(n_judges * n_samples, mean_vote) if labelled else math.nan,
        target_agreement=float(target_agreement), agreement_against=against, full=full, cheapest=cheapest,
        best=best, cost_unit=cost_unit, subsets_tried=len(tried), notes=tuple(notes),
    )


def _check_target(target: Any) -> None:
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not (0 < float(target) <= 1):
        raise ConfigError(f"panel_report: target_agreement must be a share in (0, 1], e.g. 0.95, got {target!r}")


# -- reading a result -------------------------------------------------------------------------------

def panel_metrics(result: EvalResult) -> dict[str, list[str]]:
    """``{metric: [judge names]}`` for the result's metrics that kept a panel's votes, judges in panel order."""
    found: dict[str, list[str]] = {}
    by_object = {m.name: [p.name for p in getattr(m, "panel", ())] for m in getattr(result, "metrics", ())
                 if getattr(m, "panel", ())}
    for name in result.metric_names:
        if name in by_object:
            found[name] = by_object[name]
            continue
        prefix, names = f"{name}/judge/", []
        for scores in result.scores:
            for key in scores:
                if key.startswith(prefix) and key.endswith("/votes"):
                    judge = key[len(prefix):-len("/votes")]
                    if judge not in names:
                        names.append(judge)
        if names:
            found[name] = names
    return found


def _vote(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def panel_report(
    result: EvalResult,
    human_labels: Any = None,
    *,
    target_agreement: float = 0.95,
    metrics: Sequence[str] | None = None,
    costs: Mapping[str, float] | None = None,
    against: str | None = None,
) -> PanelReports:
    """What each panel metric's judges are worth: ``print(lf.panel_report(result))``.

    ``human_labels``: pass/fail labels (a CSV/JSONL/JSON file, a DataFrame, rows, or
    ``{case_id: label}``; a ``metric`` column says which metric a label is for); None reads the
    dataset's ``human_label`` field when it has one, else the panel is measured against itself.
    ``target_agreement``: the share (0, 1] of rows on which the cheapest subset must agree with
    the reference (``against``: ``"humans"``, the default with labels, or ``"panel"``).
    ``costs``: ``{judge name: cost of one vote}`` instead of the recorded tokens or calls.
    """
    _check_target(target_agreement)
    panels = panel_metrics(result)
    if metrics is not None:
        missing = [m for m in metrics if m not in panels]
        if missing:
            raise MetricError(f"panel_report: {', '.join(map(repr, missing))} " + (
                "is" if len(missing) == 1 else "are") + " not judged by a panel in this result; panel metrics: "
                + (", ".join(map(repr, panels)) or "none"))
        panels = {m: panels[m] for m in metrics}
    if not panels:
        raise MetricError(
            "panel_report: no metric of this result was judged by a panel (metrics: "
            + (", ".join(map(repr, result.metric_names)) or "none")
            + "); build the judged metric with judges=[judge_a, judge_b, ...], e.g. "
            "lf.metrics.judged.safety(judges=[...])")
    table = labels_of(result, human_labels)
    reports = PanelReports()
    for metric, names in panels.items():
        runs, rows = [], []
        for run, scores in zip(result.runs, result.scores):
            lists = [scores.get(f"{metric}/judge/{n}/votes") for n in names]
            if all(v is None for v in lists):
                continue  # the agent failed, or the metric did not score this run
            runs.append(run)
            rows.append(lists)
        if not rows:
            raise MetricError(f"panel_report: metric {metric!r} kept no panel votes (every run failed?)")
        samples = max(len(v) for lists in rows for v in lists if isinstance(v, (list, tuple)))
        votes = np.full((len(rows), len(names), samples), np.nan)
        for i, lists in enumerate(rows):
            for j, v in enumerate(lists):
                if isinstance(v, (list, tuple)):
                    votes[i, j, : len(v)] = [_vote(x) for x in v]
        per_vote, unit = _costs(result, metric, names, samples, costs)
        reports[metric] = analyse_panel(
            votes, names, human=labels_by_run(table, runs, metric), cost_per_vote=per_vote,
            cost_unit=unit, target_agreement=target_agreement, against=against, metric=metric)
    return reports


def _costs(
    result: EvalResult, metric: str, names: Sequence[str], samples: int, costs: Mapping[str, float] | None
) -> tuple[list[float], str]:
    """Each judge's cost of one vote and its unit: given, else recorded tokens (when every judge reports them), else calls."""
    if costs is not None:
        unknown = [n for n in costs if n not in names]
        missing = [n for n in names if n not in costs]
        if unknown or missing:
            raise ConfigError(f"panel_report: costs= must give each judge of {metric!r} ({', '.join(names)}) a cost per vote"
                              + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                              + (f"; missing: {', '.join(missing)}" if missing else ""))
        bad = [n for n, c in costs.items() if isinstance(c, bool) or not isinstance(c, (int, float)) or not c >= 0]
        if bad:
            raise ConfigError(f"panel_report: costs= for {', '.join(bad)} must be numbers >= 0")
        return [float(costs[n]) for n in names], "given"
    calls = {n: 0.0 for n in names}
    tokens: dict[str, float | None] = {n: 0.0 for n in names}
    paid = {n: 0 for n in names}
    for scores in result.scores:
        for n in names:
            c = scores.get(f"{metric}/judge/{n}/calls")
            if not c:
                continue  # not asked, or every answer came from the cache
            calls[n] += float(c)
            paid[n] += samples
            t = scores.get(f"{metric}/judge/{n}/tokens")
            so_far = tokens[n]
            tokens[n] = None if t is None or so_far is None else so_far + float(t)
    every = [tokens[n] for n in names]
    if all(paid[n] for n in names) and all(v is not None for v in every):
        return [float(v or 0.0) / paid[n] for v, n in zip(every, names)], "tokens"
    return [calls[n] / paid[n] if paid[n] else 1.0 for n in names], "calls"
