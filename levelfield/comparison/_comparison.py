"""Several agents on one dataset: the ``Comparison`` that ``lf.compare`` returns.

**How failed runs enter the statistics.** A run that raised, timed out or answered in a shape
that cannot be read did not do the task, so by default (``failed_runs="zero"``) it scores 0 on
every metric that applies to its case, and the summary shows the failure count next to the
means. Leaving failures out instead would rank an agent that crashes on every hard case above
one that tries them all. ``failed_runs="exclude"`` keeps them out (NaN, as in a single
``EvalResult``): means are then over completed runs and paired tests over the cases both agents
completed. Either way a metric that does not apply to a case (no reference) stays NaN and is
left out, and ``summary`` carries the policy in ``summary.attrs["failed_runs"]``.

Trials are reduced per case before any statistic (``reducer="mean"`` by default; ``"max"``,
``"min"``, ``"median"``), so every case weighs the same and two agents are compared case by case.

The statistics live here; one case's runs side by side (``case_view``) in
:mod:`levelfield.comparison._cases`, saving and loading in :mod:`levelfield.comparison._record`, the
text ``print(cmp)`` shows in :mod:`levelfield.comparison._text`, what the run adds beside its results
(:class:`~levelfield.comparison._context.ComparisonContext`) in :mod:`levelfield.comparison._context`.
A comparison is made in one step, from its parts, and holds those helpers (no base class but ``object``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._core.data.config import RunConfig
from .._core.data.cost_limit import BudgetReport
from .._core.data.dataset import EvalDataset
from .._core.errors import MetricError
from .._core.results.result import EvalResult
from .._core.score.diff import MarkedCall, mark_trajectory
from .._core.score.matching import DEFAULT_MATCHER, ToolCallMatcher
from .._core.score.metrics.base import Metric
from .._core.stats import inference as stats
from .._core.stats.components import SOURCES, split_variance
from .._core.stats.config import FailedRuns, StatsConfig, stats_config
from .._core.stats.paired import PairedInference, detectable_difference, paired_inference
from .._core.stats.soft_labels import soft_values
from . import _record
from ._cases import AgentCase, CaseView, CaseViewer, JudgedView
from ._context import ComparisonContext, StatsOption
from ._summary import summary_row
from ._text import comparison_text
from ._verdict import Verdict, verdict

__all__ = [
    "Comparison",
    "CaseView",
    "AgentCase",
    "JudgedView",
    "MarkedCall",
    "mark_trajectory",
    "FailedRuns",
]

# Context fields an agent produces; every other field a metric requires comes from the case.
_AGENT_FIELDS = frozenset({"response", "predicted_trajectory", "turns", "failure"})


class Comparison:
    """Several agents run on the same cases, with the statistics to tell them apart.

    ``results[name]`` is each agent's ``EvalResult``; ``summary`` one row per agent;
    ``pairwise(metric)`` every pair of agents; ``per_case`` the case × agent score matrix;
    ``case_view(case_id)`` every agent's answer to one case; ``verdict()`` who is best, who is
    worst and why, in words; ``print(cmp)`` the verdict and summary. The HTML report reads a
    comparison, ``lf.report.write(cmp, path)``; the comparison knows nothing of it.

    ``lf.compare`` makes one; ``Comparison.load(folder)`` reads a saved one back. To make one from
    results in hand:

    Args:
        dataset: The cases every agent ran (an ``lf.EvalDataset``).
        results: Agent name -> its ``lf.EvalResult`` on those cases.
        metrics: The metric objects the results were scored with.
        stats: The statistics options (``lf.StatsConfig``: failed-run rule, confidence, test, seed,
            reducer, alpha, margin); the defaults when left out.
        config: The run options the results were made with (``lf.RunConfig``); its ``trials`` is the
            number of trials per case.
        context: What the run adds beside its results (baseline, early stop, levelled tools, the
            comparison under faults, a loaded record's status): a frozen ``ComparisonContext``,
            given by whoever made the runs.
        trials: Trials per case, for a comparison made without ``config``; with one, it replaces
            ``config.trials`` (which stays the one source).
    """

    # The statistics options as attributes (``cmp.confidence``): each is read from ``cmp.stats``.
    failed_runs: StatsOption[FailedRuns] = StatsOption()
    confidence: StatsOption[float] = StatsOption()
    test: StatsOption[stats.PairedTestName] = StatsOption()
    seed: StatsOption[int] = StatsOption()
    reducer: StatsOption[stats.Reducer] = StatsOption()
    margin: StatsOption[float] = StatsOption()

    def __init__(
        self,
        dataset: EvalDataset,
        results: Mapping[str, EvalResult],
        metrics: Sequence[Metric],
        *,
        stats: StatsConfig | None = None,
        config: RunConfig | None = None,
        context: ComparisonContext | None = None,
        trials: int | None = None,
    ) -> None:
        self.stats = stats_config(stats)
        """The statistics options (``lf.StatsConfig``): failed-run rule, confidence, test, seed, reducer, alpha, margin."""
        base = config if config is not None else RunConfig()
        self.config = base if trials is None or trials == base.trials else base.replace(trials=trials)
        """The run options (``lf.RunConfig``); ``trials`` is ``config.trials``."""
        self.dataset = dataset
        self.results: dict[str, EvalResult] = dict(results)
        self.metrics = list(metrics)
        self.context = context if context is not None else ComparisonContext()
        """How it came to be, beside its results (see ``ComparisonContext``); its fields are attributes too."""
        self.kind = self.context.kind
        self.baseline: Any = self.context.baseline
        self.saved_baseline = self.context.saved_baseline
        self.evaluator_notes = list(self.context.evaluator_notes)
        self.stopped_early = self.context.stopped_early
        self.tools_header = self.context.tools_header
        self.tool_levelling = self.context.tool_levelling
        self.faulted: Comparison | None = self.context.faulted
        self._trial_scores: dict[tuple[str, str, str], np.ndarray] = {}
        self._summary: pd.DataFrame | None = None
        self._pairwise: dict[tuple[str, str], pd.DataFrame] = {}
        self._paired: dict[tuple[str, str, str], PairedInference] = {}
        self._cases = CaseViewer(self)
        self.not_started: list[tuple[str, str, int]] = [k for r in self.results.values() for k in getattr(r, "not_started", ())]
        """Runs a spending limit (``max_cost_usd``) kept from starting; ``resume=True`` with a larger limit runs them."""
        self.budget: BudgetReport | None = next((r.budget for r in self.results.values() if getattr(r, "budget", None)), None)
        """With ``max_cost_usd``: the limit, what was spent and is left, and per agent what it spent and
        how many of its runs the limit kept from starting (``str(cmp.budget)`` says it in words)."""
        missing, complete = self.context.missing_runs, self.context.complete
        self.missing_runs: list[tuple[str, str, int]] = list(self.not_started if missing is None else missing)
        """Runs the plan had that the record lacks (an interrupted journal read back, a spending limit)."""
        self.complete: bool = not self.not_started if complete is None else complete
        self.robustness: Any = None
        """With ``faulted``: each agent's drop under the seeded tool faults, the fault kinds met and the
        agreement of trials (``levelfield.comparison._robustness.Robustness``; ``print`` it)."""
        if self.faulted is not None:
            from ._robustness import robustness_of

            self.robustness = robustness_of(self, self.faulted, faults=self.context.faults, seed=self.seed)

    def with_context(self, **changes: Any) -> Comparison:
        """A new comparison of the same results with its context changed (``faulted=``, ``faults=``, ...)."""
        return type(self)(self.dataset, self.results, self.metrics, stats=self.stats, config=self.config,
                          context=dataclasses.replace(self.context, **changes))

    # -- shape -----------------------------------------------------------------------------

    @property
    def trials(self) -> int:
        """Trials per case (``config.trials``)."""
        return self.config.trials

    @property
    def agents(self) -> list[str]:
        return list(self.results)

    @property
    def limits(self) -> list[Any]:
        """What each endpoint's limit did during the runs (``levelfield._core.run.limit_stats.LimitStats``):
        the concurrency it ran at, rate-limited answers, time waiting on limits; empty when loaded."""
        for result in self.results.values():
            if getattr(result, "limits", None):
                return list(result.limits)
        return []

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.dataset]

    @property
    def matcher(self) -> ToolCallMatcher:
        """The matcher of the first trajectory metric (the default one otherwise), used to mark calls."""
        for metric in self.metrics:
            matcher = getattr(metric, "matcher", None)
            if isinstance(matcher, ToolCallMatcher):
                return matcher
        return DEFAULT_MATCHER

    def _metric(self, name: str) -> Metric:
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise MetricError(f"this comparison has no metric {name!r}; it has: {', '.join(self.metric_names)}")

    def _agent(self, name: str) -> EvalResult:
        if name not in self.results:
            raise KeyError(f"this comparison has no agent {name!r}; it has: {', '.join(self.agents)}")
        return self.results[name]

    # -- what the numbers rest on -------------------------------------------------------------

    def cases_run(self) -> dict[str, int]:
        """Per agent, the cases of the dataset with at least one recorded run: what its numbers rest on."""
        known = set(self.case_ids)
        return {agent: len(known.intersection(result.run_cases()[0])) for agent, result in self.results.items()}

    @property
    def stopped_by(self) -> str | None:
        """Why runs of the plan are missing: ``"budget"`` (``max_cost_usd``), ``"interrupted"`` (a
        journal read back before it finished), ``"stop_early"`` (a sequential test decided), or None."""
        if self.not_started or self.context.status == "budget_exhausted":
            return "budget"
        if self.stopped_early and self.stopped_early.get("stopped"):
            return "stop_early"
        if not self.complete or self.missing_runs:
            return "interrupted"
        return None

    def rests_on(self) -> str:
        """What the numbers rest on when runs are missing, in words ("" when every case ran):
        "7 of 13 cases (the run was stopped by the budget)", per agent when agents differ."""
        reason = self.stopped_by
        total = len(self.case_ids)
        run = self.cases_run()
        if reason is None and all(n == total for n in run.values()):
            return ""
        why = {"budget": "the run was stopped by the budget", "interrupted": "the run was interrupted",
               "stop_early": "run before stopping"}.get(reason or "", "some cases have no run")
        counts = set(run.values())
        each = "" if len(counts) == 1 else " (" + ", ".join(f"{agent}: {n}" for agent, n in run.items()) + ")"
        many = f"{min(counts)}" if len(counts) == 1 else f"{min(counts)}–{max(counts)}"
        if reason == "stop_early":
            return f"the {many} of {total} cases run before stopping{each}"
        per_agent = " per agent" if each else ""
        return f"{many} of {total} cases{per_agent} ({why}{'; ' + each[2:-1] if each else ''})"

    # -- scores ----------------------------------------------------------------------------

    def trial_scores(self, metric: str, agent: str, *, failed_runs: FailedRuns | None = None) -> np.ndarray:
        """A (cases × trials) matrix of one agent's scores, dataset order, failures per the policy
        (``failed_runs`` overrides this comparison's, for the summary's other mean)."""
        policy = failed_runs or self.failed_runs
        key = (metric, agent, policy)
        if key not in self._trial_scores:
            m = self._metric(metric)
            result = self._agent(agent)
            index = {cid: i for i, cid in enumerate(self.case_ids)}
            matrix = np.full((len(index), self.trials), np.nan)
            values = result.score_values(metric)
            if self._soft(metric):
                values = soft_values(result, metric)  # the judge's probabilities of a pass (soft labels)
            if policy == "zero":
                values = result.failed_as_zero(m, values)
            ids, trials = result.run_cases()  # journaled runs: from the numbers kept, none read back
            for case_id, trial, value in zip(ids, trials, values):
                i = index.get(case_id)
                if i is not None and trial < self.trials:
                    matrix[i, trial] = value
            self._trial_scores[key] = matrix
        return self._trial_scores[key]

    def _soft(self, metric: str) -> bool:
        """Whether ``metric``'s scores here are the judge's probabilities (``StatsConfig(judge_scores="probability")``)."""
        return self.stats.judge_scores == "probability" and bool(getattr(self._metric(metric), "binary", False))

    def sample_scores(self, metric: str, agent: str) -> np.ndarray:
        """A (cases × trials × judge samples) array of one agent's scores: a judged metric asked
        ``num_samples`` times keeps each sample; any other metric (or a failed run) has one."""
        trials = self.trial_scores(metric, agent)
        if self._soft(metric):  # a row's probability is its samples' mean; each sample's is not kept
            return trials[:, :, None]
        result = self._agent(agent)
        index = {cid: i for i, cid in enumerate(self.case_ids)}
        column = f"{metric}/sample_values"
        by_run: dict[tuple[int, int], list[float]] = {}
        # Judged metrics' samples: a journal-backed result has none (judged metrics keep their runs).
        for run, scores in zip(result.runs, result.scores) if not result.streamed else ():
            values = scores.get(column)
            i = index.get(run.case_id)
            if i is not None and run.trial < self.trials and not run.failure and isinstance(values, (list, tuple)):
                by_run[(i, run.trial)] = [_float(v) for v in values]
        width = max([len(v) for v in by_run.values()], default=1)
        out = np.full(trials.shape + (width,), np.nan)
        out[:, :, 0] = trials
        for (i, t), values in by_run.items():
            out[i, t, :] = np.nan
            out[i, t, : len(values)] = values
        return out

    @property
    def splits_noise(self) -> bool:
        """Whether there is more than the cases to tell noise by: trials, or a judge asked several times."""
        return self.trials > 1 or any(getattr(m, "num_samples", 1) > 1 for m in self.metrics)

    def noise(self, metric: str | None = None) -> pd.DataFrame:
        """Where each agent's noise comes from, per metric: the variance between cases, between
        trials (the agent's own nondeterminism) and between judge samples, with intervals, each
        source's share, and in words which to increase (see ``levelfield._core.stats.components``).

        A source without replicates (one trial; an unjudged metric) is NaN and its variance stays
        inside the cases' component.
        """
        rows = []
        for name in [metric] if metric else self.metric_names:
            for agent in self.agents:
                split = split_variance(self.sample_scores(name, agent), confidence=self.confidence, seed=self.seed)
                row: dict[str, Any] = {"agent": agent, "metric": name, "cases": split.cases, "trials": split.trials,
                                       "samples": split.samples}
                shares = split.shares()
                for source in SOURCES:
                    row[f"var_{source}"] = split.value(source)
                    row[f"var_{source}_low"], row[f"var_{source}_high"] = split.intervals[source]
                    row[f"share_{source}"] = shares.get(source, math.nan)
                row["dominant"] = split.dominant
                row["advice"] = split.advice()
                rows.append(row)
        return pd.DataFrame(rows)

    def case_scores(self, metric: str) -> pd.DataFrame:
        """Case × agent matrix of one metric: each case's mean over trials."""
        return pd.DataFrame(
            {a: stats.reduce_trials(self.trial_scores(metric, a), self.reducer) for a in self.agents},
            index=pd.Index(self.case_ids, name="case_id"),
        )

    @property
    def per_case(self) -> pd.DataFrame:
        """Case × (metric, agent): ``per_case["trajectory_exact_match"]`` is a case × agent matrix."""
        frames = {m: self.case_scores(m) for m in self.metric_names}
        return pd.concat(frames, axis=1, names=["metric", "agent"])

    # -- statistics ------------------------------------------------------------------------

    @property
    def summary(self) -> pd.DataFrame:
        """One row per agent: each metric's mean and interval, pass@k with trials, failures, latency, tokens.

        Columns: ``<metric>/mean``, ``/ci_low``, ``/ci_high`` (Wilson for 0/1 case values, Student's
        t otherwise), ``/n`` (cases counted), all by this comparison's ``failed_runs`` rule;
        the mean by the other rule, ``/mean_failed_left_out`` (with ``"zero"``) or
        ``/mean_failed_as_zero`` (with ``"exclude"``); with ``trials=k>1``, ``/flaky`` (cases whose
        trials disagree) and, for a metric that is 0/1 for every agent, ``/pass@k`` (share of cases
        passed in at least one of k trials) and ``/pass^k`` (in all k); then ``runs``,
        ``failures``, ``failure_rate``, latency mean/p50/p95 and token means when known. When an
        agent's failed runs say whose fault they were (A2A agents), ``protocol_failures``,
        ``transport_failures`` and ``agent_failures`` count them (NaN: an agent that cannot tell).
        ``attrs`` holds ``failed_runs``, ``confidence`` and ``trials``.

        A property, so it takes no arguments: its options are the comparison's ``cmp.stats``
        (``failed_runs``, ``confidence``, ``seed``, ``reducer``, ``judge_scores``), set with
        ``lf.compare(..., stats=lf.StatsConfig(...))``. Computed once, then kept.

        Returns:
            A DataFrame indexed by agent, with the columns above.
        """
        if self._summary is None:
            rows = {a: summary_row(self, a) for a in self.agents}
            table = pd.DataFrame.from_dict(rows, orient="index")
            table.index.name = "agent"
            for kind in ("protocol", "transport", "agent"):
                if f"{kind}_failures" in table:  # an agent without failed runs has none of any kind
                    table.loc[table["failures"] == 0, f"{kind}_failures"] = 0
            table.attrs.update(failed_runs=self.failed_runs, confidence=self.confidence, trials=self.trials,
                              reducer=self.reducer, judge_scores=self.stats.judge_scores)
            self._summary = table
        return self._summary

    def pairwise(self, metric: str, *, test: stats.PairedTestName | None = None) -> pd.DataFrame:
        """Every pair of agents on one metric, tested on paired cases, adjusted for the pairs that can differ.

        Columns: ``agent_a``, ``agent_b``, ``n`` (paired cases), ``difference`` (A − B: the
        difference of proportions for 0/1 metrics, the mean difference otherwise; the Hodges–Lehmann
        shift with ``test="wilcoxon"``), ``estimand`` (which of these), ``ci_low``/``ci_high`` (its
        interval: Tango's score interval for 0/1 metrics, the paired t interval otherwise) and
        ``ci_level``, ``p_value``, ``p_holm``, ``test``,
        ``wins``/``ties``/``losses`` (cases A scored higher/equal/lower), ``significant``
        (``p_holm`` below 1 − confidence), ``p_min``, ``in_family`` and ``mde``.

        The family of comparisons is Tarone's (Biometrics 1990; :func:`levelfield._core.stats.inference.tarone_family`):
        a pair whose smallest achievable p-value (``p_min``: every differing case going one way)
        could not reach significance is left out (``in_family`` False, ``p_holm`` NaN) — two
        identical agents never count against the others. Holm's step-down runs over the pairs left
        in. Each interval inverts the pair's own test at the level Holm decided it at
        (``ci_level``; :func:`levelfield._core.stats.inference.family_levels`), so an interval
        leaves out 0 exactly when the pair is significant. ``mde``: the smallest difference these
        cases could detect with 80% power at that level, to read next to a non-significant
        result (:func:`levelfield._core.stats.paired.detectable_difference`).

        Args:
            metric: A metric of this comparison (``cmp.metric_names``).
            test: The paired test (``"auto"``, ``"mcnemar"``, ``"t"``, ``"wilcoxon"``, ``"permutation"``);
                default ``cmp.stats.test`` (``"auto"``: McNemar's score test with Tango's interval for 0/1
                scores, the paired t otherwise).

        Returns:
            One row per pair of agents, with the columns above; ``attrs`` holds the metric, the
            failed-run rule, the confidence and the family's size.

        Raises:
            MetricError: ``metric`` is not one of this comparison's.
        """
        test = test or self.test
        key = (metric, test)
        if key not in self._pairwise:
            self._metric(metric)
            scores = self.case_scores(metric)
            alpha = 1 - self.confidence
            pairs = list(itertools.combinations(self.agents, 2))
            tests = [paired_inference(scores[a].to_numpy(), scores[b].to_numpy(), test=test, seed=self.seed)
                     for a, b in pairs]
            p_values = [t.p_value for t in tests]
            p_mins = [t.p_min() for t in tests]
            p_holm, family = stats.family_adjusted(p_values, p_mins, alpha)
            levels = stats.family_levels(p_values, p_mins, alpha)
            rows = []
            for (a, b), t, p_raw, p_low, p, member, level in zip(pairs, tests, p_values, p_mins, p_holm, family, levels):
                x, y = scores[a].to_numpy(), scores[b].to_numpy()
                low, high = _within(t.interval(level), x, y)
                wins, losses = t.wins, t.losses
                rows.append(
                    {"agent_a": a, "agent_b": b, "n": t.n, "difference": t.estimate, "estimand": t.estimand,
                     "ci_low": low, "ci_high": high, "ci_level": 1 - level, "p_value": p_raw, "p_holm": p,
                     "test": t.test if t.n else "none", "wins": wins, "ties": t.n - wins - losses, "losses": losses,
                     "significant": bool(p < alpha), "p_min": p_low, "in_family": bool(member),
                     "mde": detectable_difference(t, alpha=level)}
                )
            columns = ["agent_a", "agent_b", "n", "difference", "estimand", "ci_low", "ci_high", "ci_level", "p_value",
                       "p_holm", "test", "wins", "ties", "losses", "significant", "p_min", "in_family", "mde"]
            table = pd.DataFrame(rows, columns=columns)
            family_size = int(family.sum())
            table.attrs.update(metric=metric, failed_runs=self.failed_runs, confidence=self.confidence,
                               interval_confidence=1 - alpha / max(family_size, 1), family=family_size)
            self._pairwise[key] = table
        return self._pairwise[key]

    def paired(self, metric: str, agent_a: str, agent_b: str) -> PairedInference:
        """The paired test of two agents on one metric as a function of the shift it tests (cached):
        ``.interval(alpha)`` at any level, ``.p_at(shift)`` for an equivalence or non-inferiority margin."""
        key = (metric, agent_a, agent_b)
        if key not in self._paired:
            scores = self.case_scores(metric)
            self._paired[key] = paired_inference(scores[agent_a].to_numpy(), scores[agent_b].to_numpy(),
                                                 test=self.test, seed=self.seed)
        return self._paired[key]

    def judge_pairwise(self, metric: Any) -> pd.DataFrame:
        """Every pair of agents judged side by side on each case by an LLM ``PairwiseMetric``.

        One row per pair: ``agent_a``, ``agent_b``, cases judged, A's win rate, B's win rate, the
        tie rate, judge failures and judge tokens. Failed runs are not judged (NaN).
        """
        rows = []
        for a, b in itertools.combinations(self.agents, 2):
            verdict = metric.summarize(metric.compare_results(self.results[a], self.results[b]))
            prefix = f"{metric.name}/"
            row: dict[str, Any] = {"agent_a": a, "agent_b": b, "cases": verdict["row_count"] - verdict[prefix + "nan_count"]}
            row.update({k[len(prefix):]: v for k, v in verdict.items() if k.startswith(prefix) and k != prefix + "mean"})
            rows.append(row)
        return pd.DataFrame(rows)

    # -- output ----------------------------------------------------------------------------

    def verdict(self) -> Verdict:
        """Who is best, who is worst and why, and where the lead is significant, in words (``str()`` it)."""
        return verdict(self)

    def __repr__(self) -> str:
        return (
            f"Comparison(agents={self.agents}, cases={len(self.dataset)}, trials={self.trials}, "
            f"metrics={self.metric_names})"
        )

    def __str__(self) -> str:
        """The verdict and the summary table, to read in one screen: ``print(cmp)``."""
        return comparison_text(self)

    @classmethod
    def of_evaluation(cls, result: EvalResult, *, stats: StatsConfig | None = None,
                      config: RunConfig | None = None) -> Comparison:
        """One ``evaluate`` result read as a one-agent comparison (``kind`` ``evaluate``), for the readouts
        that read comparisons: the command line's tables and report, MLflow. ``stats``: by default failed
        runs are left out of the means, as in ``evaluate``."""
        agent = result.agent_name or "saved predictions"
        if config is None:
            config = RunConfig(trials=max((r.trial for r in result.runs), default=0) + 1)
        levelling = None if result.tool_levelling is None else {agent: result.tool_levelling}
        context = ComparisonContext(kind="evaluate", tools_header=result.tools_header, tool_levelling=levelling)
        return cls(result.dataset, {agent: result}, result.metrics, config=config, context=context,
                   stats=stats if stats is not None else StatsConfig(failed_runs="exclude"))

    # -- one case, the record --------------------------------------------------------------

    def case_view(self, case_id: str) -> CaseView:
        """Every agent's runs of one case: response, calls marked against the reference, scores, error."""
        return self._cases.view(case_id)

    def settings(self) -> dict[str, Any]:
        """The statistics settings of this comparison (saved in its run record)."""
        return _record.settings(self)

    def summary_dict(self) -> dict[str, Any]:
        """Everything ``summary.json`` holds: settings, the summary rows and every pairwise table."""
        return _record.summary_dict(self)

    def record_header(self, *, status: str | None = None) -> dict[str, Any]:
        """The run-record header of this comparison; its status is ``complete``, or ``budget_exhausted``
        when a spending limit kept runs from starting."""
        return _record.record_header(self, status=status)

    @property
    def evaluators(self) -> dict[str, Any]:
        """Metric name -> the evaluator that gave its scores: the agents' run (a baseline joined with
        other evaluators is labelled by :attr:`evaluator_notes`)."""
        return _record.evaluators(self)

    @property
    def a2a_preflight(self) -> dict[str, dict[str, Any]]:
        """Each A2A agent's conformance preflight (``Preflight.to_dict()``) by agent name, when one ran."""
        return _record.a2a_preflight(self)

    @property
    def metrics_table(self) -> pd.DataFrame:
        """One row per agent, case and trial: ``agent``, ``trial``, then each agent's ``EvalResult.metrics_table`` columns."""
        return _record.metrics_table(self)

    def to_parquet(self, path: str | Path, *, table: Literal["runs", "summary"] = "runs") -> Path:
        """Write the per-run table (``table="runs"``, :attr:`metrics_table`) or the per-agent
        ``summary`` (``table="summary"``, agent as a column) as Parquet; needs ``levelfield[parquet]``."""
        return _record.to_parquet(self, path, table=table)

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``runs.jsonl`` (the run record), ``metrics_table.csv`` and ``summary.json``; with pyarrow
        installed, ``metrics_table.parquet`` and ``summary.parquet`` too. The HTML report is the report
        package's job: ``lf.report.write(cmp, path)``."""
        return _record.save(self, directory)

    @classmethod
    def load(cls, directory: str | Path) -> Comparison:
        """Re-read a saved comparison (or evaluation) from its run record, e.g. to re-render its report.

        Summaries and tests are recomputed from the stored scores, so they equal the ones before
        saving. An interrupted journal loads with the runs it has; ``missing_runs`` lists the rest.
        With ``compare(faults=..., out=...)``'s runs under faults recorded beside it, ``faulted`` and
        ``robustness`` are read back too.

        Args:
            directory: The folder a comparison was saved to (``out=`` of ``lf.compare``, or
                ``lf.report.save``), holding its ``runs.jsonl``.

        Returns:
            The comparison, its statistics recomputed from the stored scores.

        Raises:
            RecordError: The folder holds no run record, or one that names no agent or bad settings.
        """
        saved = _record.read_saved(directory)
        context = saved.context
        if saved.faulted is not None:
            faulted = cls.load(saved.faulted)
            context = dataclasses.replace(context, faulted=faulted, faults=_record.faults_said(faulted.tools_header))
        return cls(saved.dataset, saved.results, saved.metrics, stats=saved.stats, config=saved.config, context=context)


def _within(bounds: tuple[float, float], x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """An interval of A − B cut to the differences possible (−1 to 1 for scores in [0, 1]): a test
    on too few cases to reject any shift on one side leaves that side unbounded."""
    low, high = bounds
    values = np.concatenate([x[~np.isnan(x)], y[~np.isnan(y)]])
    if values.size and ((values >= 0) & (values <= 1)).all():
        low, high = max(low, -1.0), min(high, 1.0)
    return low, high


def _float(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


