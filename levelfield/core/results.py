"""Results of an evaluation: the per-row table, the summary, the runs, and their export."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .dataset import EvalCase, EvalDataset
from .metrics.base import Metric
from .types import AgentRun

__all__ = ["EvalResult", "summarize"]

_CASE_FIELDS = ("prompt", "reference", "reference_trajectory")


def _trajectory(calls) -> list[dict[str, Any]] | None:
    return None if calls is None else [c.to_vertex() for c in calls]


def summarize(table: pd.DataFrame, metric_names: Sequence[str]) -> dict[str, Any]:
    """Vertex-style summary: ``row_count``, ``<metric>/mean|std|nan_count``, latency and failures."""
    summary: dict[str, Any] = {"row_count": int(len(table))}
    for name in metric_names:
        col = table.get(f"{name}/score")
        if col is None:
            continue
        col = pd.to_numeric(col, errors="coerce")
        summary[f"{name}/mean"] = _num(col.mean())
        summary[f"{name}/std"] = _num(col.std())
        summary[f"{name}/nan_count"] = int(col.isna().sum())
        failed = table.get(f"{name}/failed")
        if failed is not None:
            summary[f"{name}/failure_count"] = int(failed.fillna(False).astype(bool).sum())
        # Judged metrics: the judge's own cost, kept apart from the agent's tokens and latency.
        for key in ("total_tokens", "input_tokens", "output_tokens", "judge_calls", "judge_latency"):
            cost = table.get(f"{name}/{key}")
            if cost is not None and cost.notna().any():
                summary[f"{name}/{key}/sum"] = _num(pd.to_numeric(cost, errors="coerce").sum())
    if "latency_in_seconds" in table:
        lat = pd.to_numeric(table["latency_in_seconds"], errors="coerce")
        summary["latency_in_seconds/mean"] = _num(lat.mean())
        summary["latency_in_seconds/std"] = _num(lat.std())
        summary["latency_in_seconds/p50"] = _num(lat.quantile(0.5))
        summary["latency_in_seconds/p95"] = _num(lat.quantile(0.95))
    if "failure" in table:
        fail = table["failure"].astype(float)
        summary["failure/mean"] = _num(fail.mean())
        summary["failure/std"] = _num(fail.std())
        summary["failure/count"] = int(fail.sum())
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        if key in table and table[key].notna().any():
            summary[f"{key}/mean"] = _num(pd.to_numeric(table[key], errors="coerce").mean())
            summary[f"{key}/sum"] = _num(pd.to_numeric(table[key], errors="coerce").sum())
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
            self._summary = summarize(self.metrics_table, self.metric_names)
        return self._summary

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
