"""Several agents on one dataset: the ``Comparison`` that ``lf.compare`` returns.

**How failed runs enter the statistics.** A run that raised, timed out or answered in a shape
that cannot be read did not do the task, so by default (``failed_runs="zero"``) it scores 0 on
every metric that applies to its case, and the summary shows the failure count next to the
means. Leaving failures out instead would rank an agent that crashes on every hard case above
one that tries them all. ``failed_runs="exclude"`` keeps them out (NaN, as in a single
``EvalResult``): means are then over completed runs and paired tests over the cases both agents
completed. Either way a metric that does not apply to a case (no reference) stays NaN and is
left out, and ``summary`` carries the policy in ``summary.attrs["failed_runs"]``.

Trials are averaged per case before any statistic, so every case weighs the same and two agents
are compared case by case.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import stats
from .dataset import EvalCase, EvalDataset, load_dataset
from .errors import ConfigError, LevelfieldError, MetricError
from .matching import DEFAULT_MATCHER, ToolCallMatcher, align
from .metrics.base import Metric
from .metrics.registry import resolve_metrics
from .results import EvalResult
from .types import AgentRun, ToolCall

__all__ = [
    "Comparison",
    "CaseView",
    "AgentCase",
    "MarkedCall",
    "mark_trajectory",
    "FailedRuns",
]

FailedRuns = Literal["zero", "exclude"]

# Context fields an agent produces; every other field a metric requires comes from the case.
_AGENT_FIELDS = frozenset({"response", "predicted_trajectory", "turns", "failure"})


@dataclass(frozen=True)
class MarkedCall:
    """One line of a trajectory set against the reference.

    ``status``: ``match`` (same call as a reference call), ``mismatch`` (a reference call's tool
    with other arguments), ``extra`` (no reference call for it) or ``missing`` (a reference call
    the agent did not make; ``predicted`` is None).
    """

    status: Literal["match", "mismatch", "extra", "missing"]
    predicted: ToolCall | None
    reference: ToolCall | None
    predicted_index: int | None
    reference_index: int | None


def mark_trajectory(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall] | None, matcher: ToolCallMatcher | None = None
) -> list[MarkedCall]:
    """The predicted calls in order, each marked against the reference, then the missing reference calls.

    Matches come from the same maximum one-to-one alignment the trajectory metrics use. Of the
    calls left over, a predicted and a reference call of the same tool are paired as a mismatch
    (right tool, wrong arguments), in order of appearance. Without a reference nothing is marked
    missing and every call is ``extra``.
    """
    reference = list(reference or [])
    alignment = align(predicted, reference, matcher or DEFAULT_MATCHER, pairs=True)
    ref_of = dict(alignment.matched_pairs or ())
    free_refs = [j for j in range(len(reference)) if j not in set(ref_of.values())]
    mismatch_of: dict[int, int] = {}
    for i, call in enumerate(predicted):
        if i in ref_of:
            continue
        for j in free_refs:
            if reference[j].tool_name == call.tool_name:
                mismatch_of[i] = j
                free_refs.remove(j)
                break
    marked = []
    for i, call in enumerate(predicted):
        if i in ref_of:
            marked.append(MarkedCall("match", call, reference[ref_of[i]], i, ref_of[i]))
        elif i in mismatch_of:
            marked.append(MarkedCall("mismatch", call, reference[mismatch_of[i]], i, mismatch_of[i]))
        else:
            marked.append(MarkedCall("extra", call, None, i, None))
    marked.extend(MarkedCall("missing", None, reference[j], None, j) for j in free_refs)
    return marked


@dataclass
class AgentCase:
    """One agent's run of one case (one trial), ready to show next to the others."""

    agent: str
    trial: int
    response: str | None
    calls: list[MarkedCall]
    scores: dict[str, float]
    """Each metric's score for this run as used in the statistics (failures per the policy)."""
    failure: bool = False
    error: str | None = None
    error_type: str | None = None
    partial: bool = False
    """True when the response and calls are what a failed run produced before failing."""
    latency_in_seconds: float = math.nan


@dataclass
class CaseView:
    """A case with every agent's runs side by side."""

    case: EvalCase
    runs: dict[str, list[AgentCase]] = field(default_factory=dict)
    """Agent name -> its runs of this case, one per trial."""


class _SavedMetric(Metric):
    """A metric known only by name, re-read from a saved comparison."""

    def __init__(self, name: str) -> None:
        self.name = name


class Comparison:
    """Several agents run on the same cases, with the statistics to tell them apart.

    ``results[name]`` is each agent's ``EvalResult``; ``summary`` one row per agent;
    ``pairwise(metric)`` every pair of agents; ``per_case`` the case × agent score matrix;
    ``case_view(case_id)`` every agent's answer to one case; ``to_html(path)`` the report.
    """

    def __init__(
        self,
        dataset: EvalDataset,
        results: Mapping[str, EvalResult],
        metrics: Sequence[Metric],
        *,
        trials: int = 1,
        failed_runs: FailedRuns = "zero",
        confidence: float = 0.95,
        test: stats.PairedTestName = "auto",
        seed: int = 0,
    ) -> None:
        if failed_runs not in ("zero", "exclude"):
            raise ConfigError(f"failed_runs={failed_runs!r}: use 'zero' or 'exclude'")
        if not 0 < confidence < 1:
            raise ConfigError(f"confidence={confidence!r}: must be between 0 and 1")
        self.dataset = dataset
        self.results: dict[str, EvalResult] = dict(results)
        self.metrics = list(metrics)
        self.trials = trials
        self.failed_runs: FailedRuns = failed_runs
        self.confidence = confidence
        self.test: stats.PairedTestName = test
        self.seed = seed
        self._trial_scores: dict[tuple[str, str], np.ndarray] = {}
        self._summary: pd.DataFrame | None = None
        self._pairwise: dict[tuple[str, str], pd.DataFrame] = {}
        self._runs_by_case: dict[tuple[str, str], list[AgentRun]] | None = None
        self._case_index: dict[str, int] | None = None

    # -- shape -----------------------------------------------------------------------------

    @property
    def agents(self) -> list[str]:
        return list(self.results)

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

    # -- scores ----------------------------------------------------------------------------

    def _applies(self, metric: Metric, case: EvalCase) -> bool:
        return all(getattr(case, f, None) is not None for f in metric.requires if f not in _AGENT_FIELDS)

    def trial_scores(self, metric: str, agent: str) -> np.ndarray:
        """A (cases × trials) matrix of one agent's scores, dataset order, failures per the policy."""
        key = (metric, agent)
        if key not in self._trial_scores:
            m = self._metric(metric)
            result = self._agent(agent)
            index = {cid: i for i, cid in enumerate(self.case_ids)}
            matrix = np.full((len(index), self.trials), np.nan)
            column = f"{metric}/score"
            for run, scores in zip(result.runs, result.scores):
                i = index.get(run.case_id)
                if i is None or run.trial >= self.trials:
                    continue
                value = scores.get(column, math.nan)
                if run.failure and self.failed_runs == "zero" and self._applies(m, self.dataset[i]):
                    value = 0.0
                matrix[i, run.trial] = math.nan if value is None else float(value)
            self._trial_scores[key] = matrix
        return self._trial_scores[key]

    def case_scores(self, metric: str) -> pd.DataFrame:
        """Case × agent matrix of one metric: each case's mean over trials."""
        return pd.DataFrame(
            {a: stats.case_means(self.trial_scores(metric, a)) for a in self.agents},
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

        Columns: ``<metric>/mean``, ``/ci_low``, ``/ci_high`` (Wilson for 0/1 case values, BCa
        bootstrap otherwise), ``/n`` (cases counted); with ``trials=k>1``, ``/flaky`` (cases whose
        trials disagree) and, for a metric that is 0/1 for every agent, ``/pass@k`` (share of cases
        passed in at least one of k trials) and ``/pass^k`` (in all k); then ``runs``,
        ``failures``, ``failure_rate``, latency mean/p50/p95 and token means when known.
        ``attrs`` holds ``failed_runs``, ``confidence`` and ``trials``.
        """
        if self._summary is None:
            rows = {a: self._summary_row(a) for a in self.agents}
            table = pd.DataFrame.from_dict(rows, orient="index")
            table.index.name = "agent"
            table.attrs.update(failed_runs=self.failed_runs, confidence=self.confidence, trials=self.trials)
            self._summary = table
        return self._summary

    def _is_pass_fail(self, metric: str) -> bool:
        """A 0/1 metric for every agent's every scored trial (so pass@k means something)."""
        matrices = [self.trial_scores(metric, a) for a in self.agents]
        scored = [m for m in matrices if not np.isnan(m).all()]
        return bool(scored) and all(stats.is_binary(m) for m in scored)

    def _summary_row(self, agent: str) -> dict[str, Any]:
        row: dict[str, Any] = {}
        k = self.trials
        for metric in self.metric_names:
            matrix = self.trial_scores(metric, agent)
            interval = stats.mean_interval(stats.case_means(matrix), self.confidence, self.seed)
            row[f"{metric}/mean"] = interval.estimate
            row[f"{metric}/ci_low"] = interval.low
            row[f"{metric}/ci_high"] = interval.high
            row[f"{metric}/n"] = interval.n
            if k > 1 and self._is_pass_fail(metric):
                valid = ~np.isnan(matrix)
                n, c = valid.sum(axis=1), np.nansum(matrix, axis=1)
                scored = n > 0
                row[f"{metric}/pass@{k}"] = _nanmean(stats.pass_at_k(n[scored], c[scored], k))
                row[f"{metric}/pass^{k}"] = _nanmean(stats.pass_hat_k(n[scored], c[scored], k))
            if k > 1:
                row[f"{metric}/flaky"] = int(stats.flaky_cases(matrix).sum())
        runs = self.results[agent].runs
        latency = np.array([r.latency_in_seconds for r in runs], dtype=float)
        row["runs"] = len(runs)
        row["failures"] = sum(r.failure for r in runs)
        row["failure_rate"] = row["failures"] / len(runs) if runs else math.nan
        row["latency_in_seconds/mean"] = _nanmean(latency)
        row["latency_in_seconds/p50"] = _nanquantile(latency, 0.5)
        row["latency_in_seconds/p95"] = _nanquantile(latency, 0.95)
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            values = [getattr(r.output.usage, key) for r in runs if r.output is not None and r.output.usage]
            if values:
                row[f"{key}/mean"] = float(np.mean(values))
        return row

    def pairwise(self, metric: str, *, test: stats.PairedTestName | None = None) -> pd.DataFrame:
        """Every pair of agents on one metric, tested on paired cases, Holm-adjusted across the pairs.

        Columns: ``agent_a``, ``agent_b``, ``n`` (paired cases), ``difference`` (mean of A − B),
        ``ci_low``/``ci_high`` (paired bootstrap), ``p_value``, ``p_holm``, ``test``, ``wins``/
        ``ties``/``losses`` (cases A scored higher/equal/lower), ``significant`` (``p_holm`` below
        1 − confidence).
        """
        test = test or self.test
        key = (metric, test)
        if key not in self._pairwise:
            self._metric(metric)
            scores = self.case_scores(metric)
            rows = []
            for a, b in itertools.combinations(self.agents, 2):
                t = stats.paired_test(scores[a].to_numpy(), scores[b].to_numpy(), test=test,
                                      confidence=self.confidence, seed=self.seed)
                rows.append(
                    {"agent_a": a, "agent_b": b, "n": t.n, "difference": t.difference, "ci_low": t.low,
                     "ci_high": t.high, "p_value": t.p_value, "test": t.test,
                     "wins": t.wins, "ties": t.ties, "losses": t.losses}
                )
            columns = ["agent_a", "agent_b", "n", "difference", "ci_low", "ci_high", "p_value", "p_holm",
                       "test", "wins", "ties", "losses", "significant"]
            table = pd.DataFrame(rows, columns=[c for c in columns if c not in ("p_holm", "significant")])
            table.insert(7, "p_holm", stats.holm(table["p_value"].to_numpy()) if rows else [])
            table["significant"] = table["p_holm"] < (1 - self.confidence)
            table.attrs.update(metric=metric, failed_runs=self.failed_runs, confidence=self.confidence)
            self._pairwise[key] = table[columns]
        return self._pairwise[key]

    # -- one case --------------------------------------------------------------------------

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

    def case_view(self, case_id: str) -> CaseView:
        """Every agent's runs of one case: response, calls marked against the reference, scores, error."""
        if self._case_index is None:
            self._case_index = {cid: i for i, cid in enumerate(self.case_ids)}
        if case_id not in self._case_index:
            raise KeyError(f"no case {case_id!r} in this comparison")
        i = self._case_index[case_id]
        case = self.dataset[i]
        view = CaseView(case)
        matcher = self.matcher
        if self._runs_by_case is None:
            # Built once: the report asks for every case, and scanning all runs each time is quadratic.
            self._runs_by_case = {
                (agent, run.case_id): [] for agent, result in self.results.items() for run in result.runs
            }
            for agent, result in self.results.items():
                for run in result.runs:
                    self._runs_by_case[(agent, run.case_id)].append(run)
        for agent in self.results:
            entries = []
            for run in self._runs_by_case.get((agent, case_id), []):
                out = run.output or run.partial_output
                scores = {
                    m: float(self.trial_scores(m, agent)[i, run.trial]) if run.trial < self.trials else math.nan
                    for m in self.metric_names
                }
                entries.append(
                    AgentCase(
                        agent=agent,
                        trial=run.trial,
                        response=out.response if out is not None else None,
                        calls=mark_trajectory(out.trajectory if out else [], case.reference_trajectory, matcher),
                        scores=scores,
                        failure=run.failure,
                        error=run.error,
                        error_type=run.error_type,
                        partial=run.output is None and run.partial_output is not None,
                        latency_in_seconds=run.latency_in_seconds,
                    )
                )
            view.runs[agent] = sorted(entries, key=lambda e: e.trial)
        return view

    # -- output ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"Comparison(agents={self.agents}, cases={len(self.dataset)}, trials={self.trials}, "
            f"metrics={self.metric_names})"
        )

    def to_html(self, path: str | Path) -> Path:
        """Write the self-contained HTML report (no network needed to view it)."""
        from ..report import write_report

        return write_report(self, path)

    def summary_dict(self) -> dict[str, Any]:
        """Everything ``summary.json`` holds: settings, the summary rows and every pairwise table."""
        return {
            "dataset": self.dataset.source,
            "cases": len(self.dataset),
            "agents": self.agents,
            "metrics": self.metric_names,
            "trials": self.trials,
            "failed_runs": self.failed_runs,
            "confidence": self.confidence,
            "test": self.test,
            "summary": {a: _jsonable(row) for a, row in self.summary.to_dict(orient="index").items()},
            "pairwise": {
                m: [_jsonable(r) for r in self.pairwise(m).to_dict(orient="records")] for m in self.metric_names
            },
        }

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write ``runs.jsonl``, ``metrics_table.csv``, ``summary.json`` and ``report.html`` into ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "runs": out / "runs.jsonl",
            "metrics_table": out / "metrics_table.csv",
            "summary": out / "summary.json",
            "report": out / "report.html",
        }
        with paths["runs"].open("w", encoding="utf-8") as f:
            for result in self.results.values():
                for run, scores in zip(result.runs, result.scores):
                    record = run.model_dump(mode="json")
                    record["scores"] = {k: _json_value(v) for k, v in scores.items()}
                    f.write(json.dumps(_jsonable(record)) + "\n")
        tables = []
        for agent, result in self.results.items():
            table = result.metrics_table.copy()
            if "trial" not in table:
                table.insert(1, "trial", [r.trial for r in result.runs])
            table.insert(0, "agent", agent)
            tables.append(table)
        combined = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
        for col in combined.columns:
            if combined[col].map(lambda v: isinstance(v, (list, dict))).any():
                combined[col] = combined[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
        combined.to_csv(paths["metrics_table"], index=False)
        paths["summary"].write_text(json.dumps(self.summary_dict(), indent=2), encoding="utf-8")
        self.to_html(paths["report"])
        return paths

    @classmethod
    def load(cls, directory: str | Path) -> "Comparison":
        """Re-read a comparison written by ``save`` (or the CLI's ``--out``), e.g. to re-render its report."""
        out = Path(directory)
        missing = [n for n in ("runs.jsonl", "metrics_table.csv", "summary.json") if not (out / n).exists()]
        if missing:
            raise LevelfieldError(f"{out}: not a saved levelfield run (missing {', '.join(missing)})")
        try:
            meta = json.loads((out / "summary.json").read_text(encoding="utf-8"))
            table = pd.read_csv(out / "metrics_table.csv")
        except (ValueError, OSError) as exc:
            raise LevelfieldError(f"{out}: cannot read the saved run ({exc})") from None
        case_columns = [c for c in ("case_id", "prompt", "history", "reference", "reference_trajectory") if c in table]
        cases = table[case_columns].drop_duplicates("case_id", keep="first")
        cases = cases.astype({"case_id": str})
        dataset = load_dataset(cases.to_dict(orient="records"))
        dataset.source = meta.get("dataset", str(out))
        by_agent: dict[str, tuple[list[AgentRun], list[dict[str, Any]]]] = {a: ([], []) for a in meta["agents"]}
        with (out / "runs.jsonl").open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    scores = {k: (math.nan if v is None else v) for k, v in record.pop("scores", {}).items()}
                    if record.get("latency_in_seconds") is None:
                        record["latency_in_seconds"] = math.nan
                    run = AgentRun.model_validate(record)
                except (ValueError, TypeError) as exc:
                    raise LevelfieldError(f"{out / 'runs.jsonl'} line {n}: not a saved run ({exc})") from None
                runs, rows = by_agent.setdefault(run.agent_name, ([], []))
                runs.append(run)
                rows.append(scores)
        metrics: list[Metric] = []
        for name in meta["metrics"]:
            try:
                metrics.extend(resolve_metrics([name]))
            except MetricError:
                metrics.append(_SavedMetric(name))
        results = {
            agent: EvalResult(dataset, runs, rows, metrics, agent_name=agent) for agent, (runs, rows) in by_agent.items()
        }
        return cls(
            dataset,
            results,
            metrics,
            trials=int(meta.get("trials", 1)),
            failed_runs=meta.get("failed_runs", "zero"),
            confidence=float(meta.get("confidence", 0.95)),
            test=meta.get("test", "auto"),
        )


def _nanmean(values: Any) -> float:
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else math.nan


def _nanquantile(values: np.ndarray, q: float) -> float:
    arr = values[~np.isnan(values)]
    return float(np.quantile(arr, q)) if arr.size else math.nan


def _json_value(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) or math.isinf(v) else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _jsonable(obj: Any) -> Any:
    """NaN -> null and NumPy scalars -> Python, so the JSON is standard."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return _json_value(obj)
