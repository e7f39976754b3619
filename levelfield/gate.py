"""The regression gate: fail only when an agent is significantly worse than its baseline.

For each gated metric and each agent, the comparison's paired test (McNemar's score test for 0/1
metrics, the paired t test otherwise) compares the agent with the baseline case by case;
Holm's correction runs across every (metric, agent) tested, and the gate fails when an adjusted
p is below ``alpha`` with the agent on the worse side. With a ``margin`` the question becomes
"worse by more than the margin?" (a non-inferiority test, ``lf.stats.noninferiority_p``),
so a drop smaller than the margin never fails the gate. Run-to-run noise therefore fails it in at
most ``alpha`` of runs, and a real drop of the planned size in at least the planned power.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._core.errors import ConfigError, MetricError
from ._core.stats.change import Change, adjust, describe_change, measure_change
from ._core.stats.planning import Alternative, MeasuredDesign, SampleSize, measure_design, sample_size

if TYPE_CHECKING:
    from ._core.stats.config import StatsConfig
    from .comparison._comparison import Comparison

__all__ = ["GateResult", "baseline_changes", "scores_changes", "check_regressions", "changes_table",
           "plan_from", "require_certified_judges"]


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: every tested change, and whether any is a regression."""

    changes: list[Change]

    @property
    def failed(self) -> bool:
        return any(c.regression for c in self.changes)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.regression]

    def lines(self) -> list[str]:
        """One line per tested change: ``metric (agent): worse than main by ... — regression``."""
        return [f"{c.metric} ({c.agent}): {describe_change(c)}" for c in self.changes]

    def message(self) -> str:
        """What failed (or that nothing did), in words."""
        if not self.failed:
            return "no significant regression: " + "; ".join(self.lines())
        return "; ".join(f"{c.metric} ({c.agent}): {describe_change(c)}" for c in self.regressions)


def _baseline_name(cmp: Comparison, baseline: str | None) -> str:
    if baseline is None:
        joined = cmp.baseline
        if joined is not None:
            return str(joined.name)
        saved = cmp.saved_baseline
        if saved in cmp.agents:  # a comparison loaded from a folder that was saved with a baseline
            return str(saved)
        if len(cmp.agents) == 2:
            raise ConfigError(
                f"which agent is the baseline, {cmp.agents[0]!r} or {cmp.agents[1]!r}? pass baseline='name' "
                "(or run compare(..., baseline=folder))"
            )
        raise ConfigError("no baseline: run compare(..., baseline=folder) or pass baseline='agent name'")
    if baseline not in cmp.agents:
        raise ConfigError(f"baseline {baseline!r} is not an agent of this comparison ({', '.join(cmp.agents)})")
    return baseline


def _metric_list(cmp: Comparison, metrics: str | Sequence[str] | None, option: str) -> list[str]:
    if metrics is None:
        return list(cmp.metric_names)
    names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else [str(m) for m in metrics]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in cmp.metric_names]
    if unknown or not names:
        raise MetricError(
            f"{option}: {', '.join(unknown) or '(none given)'} is not a metric of this comparison; "
            f"it has: {', '.join(cmp.metric_names)}"
        )
    return names


def baseline_changes(
    cmp: Comparison,
    metrics: str | Sequence[str] | None = None,
    *,
    baseline: str | None = None,
    margin: float | None = None,
    alpha: float | None = None,
    power: float = 0.8,
) -> list[Change]:
    """Every other agent against the baseline on each metric (default: all), Holm-adjusted across them all.

    ``baseline``: the baseline agent's name (default: the one ``compare(..., baseline=...)`` joined).
    ``margin``: in the metric's units (0.02 = 2 points of a 0/1 metric). ``margin`` and ``alpha``
    default to the comparison's ``stats``. Each change carries its minimum detectable effect at ``power``.
    """
    base = _baseline_name(cmp, baseline)
    names = _metric_list(cmp, metrics, "fail_if_worse" if metrics is not None else "metrics")
    settings = _gate_settings(cmp.stats, margin=margin, alpha=alpha)
    changes = []
    for metric in names:
        scores = cmp.case_scores(metric)
        for agent in cmp.agents:
            if agent == base:
                continue
            changes.append(_change(scores[agent].to_numpy(), scores[base].to_numpy(), metric, agent, base, settings, power))
    return adjust(changes)


def _gate_settings(stats: StatsConfig, *, margin: float | None = None, alpha: float | None = None) -> StatsConfig:
    """The statistics options a gate tests with: ``stats`` (a comparison's ``cmp.stats``), with ``margin`` and
    ``alpha`` replaced when given; the one place the gate's keywords meet ``lf.StatsConfig``."""
    return stats.replace(**{k: v for k, v in (("margin", margin), ("alpha", alpha)) if v is not None})


def scores_changes(
    new: Mapping[str, np.ndarray],
    base: Mapping[str, np.ndarray],
    *,
    agent: str,
    baseline: str,
    stats: StatsConfig,
    power: float = 0.8,
) -> list[Change]:
    """The gate's test between two sides outside one comparison (two saved runs, say): ``new[metric][i]``
    against ``base[metric][i]`` (the same case ``i``) for each metric, Holm-adjusted across the metrics.

    ``agent`` and ``baseline`` name the two sides in the words; ``stats`` gives the test, alpha, margin and seed.
    """
    return adjust([_change(new[m], base[m], m, agent, baseline, stats, power) for m in new if m in base])


def _change(new: np.ndarray, base: np.ndarray, metric: str, agent: str, baseline: str, settings: StatsConfig,
            power: float) -> Change:
    return measure_change(new, base, metric=metric, agent=agent, baseline=baseline, test=settings.test,
                          alpha=settings.alpha, margin=settings.margin, power=power, seed=settings.seed)


def check_regressions(
    cmp: Comparison,
    fail_if_worse: str | Sequence[str],
    *,
    baseline: str | None = None,
    margin: float | None = None,
    alpha: float | None = None,
    require_certified_judge: Any = False,
    human_labels: Any = None,
) -> GateResult:
    """The regression gate over the metrics in ``fail_if_worse``; see the module docs.

    The gate's ``alpha`` and ``margin`` are the comparison's ``cmp.stats`` (set them with
    ``lf.compare(..., stats=lf.StatsConfig(alpha=..., margin=...))``); the ``margin=`` and ``alpha=``
    keywords replace them for this call, through one function (``_gate_settings``).

    Args:
        cmp: The comparison to gate (``lf.compare(..., baseline=...)``, or any with two agents and ``baseline=``).
        fail_if_worse: The gated metrics: a list of names, or ``"m1,m2"``.
        baseline: The baseline agent's name (default: the one ``compare(baseline=...)`` joined, or the
            saved run's).
        margin: Fail only on a drop larger than this, in the metric's units (0.02 = 2 points of a 0/1
            metric); default ``cmp.stats.margin``.
        alpha: The Holm-adjusted significance level; default ``cmp.stats.alpha``.
        require_certified_judge: True (or an ``lf.certify_judge`` result): refuse to gate a judged metric
            whose judge is not certified against ``human_labels`` on the agents' rows.
        human_labels: Pass/fail labels by humans (a file, a DataFrame or ``{case_id: label}``; default the
            dataset's ``human_label`` column), for ``require_certified_judge``.

    Returns:
        A ``GateResult``: every tested change, ``failed`` when any is a significant regression.

    Raises:
        ConfigError: A gated metric with no case scored on both sides (a gate that compared nothing must
            not pass); ``UncertifiedJudgeError`` (a ``ConfigError``) naming the metric and the reason.
        MetricError: A gated metric the comparison does not have.
    """
    if require_certified_judge:
        names = _metric_list(cmp, fail_if_worse, "fail_if_worse")
        require_certified_judges(cmp, names, require_certified_judge, human_labels, baseline=baseline)
    changes = baseline_changes(cmp, fail_if_worse, baseline=baseline, margin=margin, alpha=alpha)
    untested = [c for c in changes if c.verdict == "not testable"]
    if untested:
        c = untested[0]
        raise ConfigError(
            f"fail_if_worse {c.metric}: no case has a score for both {c.agent!r} and {c.baseline!r}, so the gate "
            "cannot decide; check that the baseline ran the same cases and that the metric applies to them"
        )
    return GateResult(changes)


def require_certified_judges(cmp: Comparison, metrics: Sequence[str], certification: Any = True,
                             human_labels: Any = None, *, baseline: str | None = None,
                             option: str = "fail_if_worse") -> None:
    """Refuse (``UncertifiedJudgeError``) when a judged metric among ``metrics`` has a judge not certified on the
    rows of an agent the gate tests (every agent but the baseline; with no baseline, every agent)."""
    from ._core.stats.certify import require_certified

    known = baseline is not None or cmp.baseline is not None or cmp.saved_baseline in cmp.agents
    base = _baseline_name(cmp, baseline) if known else None
    checked = []
    for agent in cmp.agents:
        if agent != base:
            checked += require_certified(cmp.results[agent], metrics, certification, human_labels, option=option)
    if not checked:
        raise ConfigError(f"{option} {', '.join(metrics)}: require_certified_judge certifies the judge of a judged "
                          "metric, and no gated metric is scored by a judge; leave it out, or gate a judged metric")


def changes_table(changes: Sequence[Change]) -> pd.DataFrame:
    """The changes as a table (one row each, with the words), for reports and notebooks."""
    rows: list[dict[str, Any]] = []
    for c in changes:
        rows.append(
            {
                "metric": c.metric, "agent": c.agent, "baseline": c.baseline, "n": c.n,
                "difference": c.difference, "ci_low": c.low, "ci_high": c.high, "p_value": c.p_value,
                "p_holm": c.p_adjusted, "test": c.test, "margin": c.margin, "mde": c.mde,
                "verdict": c.verdict, "words": describe_change(c),
            }
        )
    return pd.DataFrame(rows)


def plan_from(
    cmp: Comparison,
    metric: str,
    *,
    mde: float,
    baseline: str | None = None,
    agent: str | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    trials: int | None = None,
) -> tuple[SampleSize, MeasuredDesign]:
    """Plan the next comparison from this one: the cases needed to detect ``mde`` on ``metric``,
    with p0, the discordance (or SD) and the intra-case correlation measured between ``agent``
    and the baseline. ``trials``: of the planned run (default: this comparison's)."""
    known = baseline is not None or cmp.baseline is not None or cmp.saved_baseline in cmp.agents
    # Between two agents and no baseline, either may stand for it: only p0 differs, and little.
    base = _baseline_name(cmp, baseline) if known or len(cmp.agents) != 2 else cmp.agents[1]
    others = [a for a in cmp.agents if a != base]
    if agent is None:
        if len(others) != 1:
            raise ConfigError(f"which agent to plan against {base!r}? pass agent= one of: {', '.join(others)}")
        agent = others[0]
    elif agent not in others:
        raise ConfigError(f"agent {agent!r} is not one of this comparison's other agents ({', '.join(others)})")
    _metric_list(cmp, [metric], "metric")
    measured = measure_design(cmp.trial_scores(metric, agent), cmp.trial_scores(metric, base))
    plan = sample_size(
        mde=mde, paired=True, alpha=alpha, power=power, alternative=alternative,
        trials=trials or cmp.trials, **measured.options(),  # type: ignore[arg-type]  # each keyword's own type
    )
    return plan, measured
