"""Results of an evaluation: the per-row table, the summary, the runs, and their export."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .dataset import EvalCase, EvalDataset
from .metrics.base import Metric
from .types import AgentRun

__all__ = ["EvalResult", "summarize"]

_CASE_FIELDS = ("prompt", "reference", "reference_trajectory")


def _trajectory(calls) -> list[dict[str, Any]] | None:
    return None if calls is None else [c.to_vertex() for c in calls]


def _floats(values: Any) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


def _std(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(np.std(x, ddof=1)) if len(x) > 1 else float("nan")


def _mean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.any(~np.isnan(x)) else float("nan")


def summarize(table: Mapping[str, Any], metric_names: Sequence[str]) -> dict[str, Any]:
    """Vertex-style summary: ``row_count``, ``<metric>/mean|std|nan_count``, latency and failures.

    ``table`` maps column names to columns: a DataFrame, or a dict of lists.
    """
    summary: dict[str, Any] = {"row_count": len(next(iter(table.values()), [])) if not isinstance(table, pd.DataFrame) else len(table)}
    for name in metric_names:
        if f"{name}/score" not in table:
            continue
        col = _floats(table[f"{name}/score"])
        summary[f"{name}/mean"] = _mean(col)
        summary[f"{name}/std"] = _std(col)
        summary[f"{name}/nan_count"] = int(np.isnan(col).sum())
        if f"{name}/failed" in table:
            summary[f"{name}/failure_count"] = int(sum(v is True or v == 1 for v in table[f"{name}/failed"]))
        # Judged metrics: the judge's own cost, kept apart from the agent's tokens and latency.
        for key in ("total_tokens", "input_tokens", "output_tokens", "judge_calls", "judge_latency"):
            if f"{name}/{key}" in table:
                cost = _floats(table[f"{name}/{key}"])
                if np.any(~np.isnan(cost)):
                    summary[f"{name}/{key}/sum"] = float(np.nansum(cost))
    if "latency_in_seconds" in table:
        lat = _floats(table["latency_in_seconds"])
        summary["latency_in_seconds/mean"] = _mean(lat)
        summary["latency_in_seconds/std"] = _std(lat)
        known = lat[~np.isnan(lat)]
        summary["latency_in_seconds/p50"] = float(np.quantile(known, 0.5)) if len(known) else float("nan")
        summary["latency_in_seconds/p95"] = float(np.quantile(known, 0.95)) if len(known) else float("nan")
    if "failure" in table:
        fail = _floats(table["failure"])
        summary["failure/mean"] = _mean(fail)
        summary["failure/std"] = _std(fail)
        summary["failure/count"] = int(np.nansum(fail))
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        if key in table:
            tokens = _floats(table[key])
            if np.any(~np.isnan(tokens)):
                summary[f"{key}/mean"] = _mean(tokens)
                summary[f"{key}/sum"] = float(np.nansum(tokens))
    return summary


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


class EvalResult:
    """The outcome of ``evaluate``: one row per case and trial, in dataset order."""

    def __init__(
        self,
        dataset: EvalDataset,
        runs: Sequence[AgentRun],
        scores: Sequence[dict[str, Any]],
        metrics: Sequence[Metric],
        *,
        agent_name: str | None = None,
        scored_saved_predictions: bool = False,
    ) -> None:
        self.dataset = dataset
        self.runs = list(runs)
        self.scores = list(scores)
        self.metrics = list(metrics)
        self.agent_name = agent_name
        self.scored_saved_predictions = scored_saved_predictions
        self._table: pd.DataFrame | None = None
        self._summary: dict[str, Any] | None = None

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def _row(self, case: EvalCase, run: AgentRun, scores: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"case_id": case.case_id, "trial": run.trial}
        row["prompt"] = case.prompt
        if case.history:
            row["history"] = [m.model_dump() for m in case.history]
        row["reference"] = case.reference
        row["reference_trajectory"] = _trajectory(case.reference_trajectory)
        for key, value in case.metadata.items():
            if key not in ("latency_in_seconds", "failure"):
                row.setdefault(key, value)
        out = run.output or run.partial_output
        row["response"] = out.response if out is not None else (case.response if self.scored_saved_predictions else None)
        row["predicted_trajectory"] = _trajectory(out.trajectory) if out is not None else None
        row["latency_in_seconds"] = run.latency_in_seconds
        row["failure"] = int(run.failure)
        row["error"] = run.error
        row["error_type"] = run.error_type
        usage = out.usage if out is not None else None
        row["input_tokens"] = usage.input_tokens if usage else None
        row["output_tokens"] = usage.output_tokens if usage else None
        row["total_tokens"] = usage.total_tokens if usage else None
        row.update(scores)
        return row

    @property
    def metrics_table(self) -> pd.DataFrame:
        """One row per case and trial: dataset columns, the agent's answer, latency, failure, scores."""
        if self._table is None:
            by_id = {c.case_id: c for c in self.dataset}
            rows = [self._row(by_id[r.case_id], r, s) for r, s in zip(self.runs, self.scores)]
            table = pd.DataFrame(rows)
            for key in ("input_tokens", "output_tokens", "total_tokens", "error", "error_type"):
                if key in table and table[key].isna().all():
                    table = table.drop(columns=key)
            if "trial" in table and table["trial"].nunique() <= 1:
                table = table.drop(columns="trial")
            self._table = table
        return self._table

    @property
    def summary_metrics(self) -> dict[str, Any]:
        """``row_count``, ``<metric>/mean``, ``<metric>/std``, ``<metric>/nan_count``, latency, failures."""
        if self._summary is None:
            self._summary = summarize(self._summary_columns(), self.metric_names)
        return self._summary

    def _summary_columns(self) -> dict[str, list[Any]]:
        # The summary needs a few columns, not the whole table: read them off the runs directly.
        columns: dict[str, list[Any]] = {
            "latency_in_seconds": [r.latency_in_seconds for r in self.runs],
            "failure": [int(r.failure) for r in self.runs],
        }
        usages = [(r.output or r.partial_output).usage if (r.output or r.partial_output) else None for r in self.runs]
        if any(u is not None for u in usages):
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                columns[key] = [getattr(u, key) if u is not None else None for u in usages]
        keys = {k for row in self.scores for k in row}
        for key in keys:
            columns[key] = [row.get(key) for row in self.scores]
        return columns

    @property
    def failures(self) -> list[AgentRun]:
        return [r for r in self.runs if r.failure]

    def __repr__(self) -> str:
        s = self.summary_metrics
        return f"EvalResult(agent={self.agent_name!r}, rows={s['row_count']}, failures={s.get('failure/count', 0)})"

    def _records(self) -> list[dict[str, Any]]:
        records = []
        for run, scores in zip(self.runs, self.scores):
            record = run.model_dump(mode="json")
            record["scores"] = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in scores.items()}
            records.append(record)
        return records

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every run (output, trajectory, latency, failure, scores), one JSON object a line."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as f:
            for record in self._records():
                f.write(json.dumps(record, default=str) + "\n")
        return path

    def to_csv(self, path: str | Path) -> Path:
        """Write the metrics table; trajectory cells as JSON so ``load_dataset`` reads them back."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        table = self.metrics_table.copy()
        for col in table.columns:
            if table[col].map(lambda v: isinstance(v, (list, dict))).any():
                table[col] = table[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
        table.to_csv(path, index=False)
        return path

    def to_adk_evalset(self, path: str | Path, *, eval_set_id: str | None = None) -> Path:
        """Write the successful runs as an ADK ``.evalset.json``: what the agent did becomes the expectation."""
        from .adk import write_evalset

        return write_evalset(self, path, eval_set_id=eval_set_id)
