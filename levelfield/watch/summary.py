"""What ``levelfield report DIR`` shows for a watch folder: the windows, the trend, the worst traces, the alerts.

Read from the windows' run records, ``drift.jsonl`` and ``status.json``; nothing is stored twice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._core.data.money import dollars
from .._core.errors import RecordError
from .._core.results.record import read_record
from .budget import skipped_for_budget
from .drift import DRIFT_FILE
from .windows import window_files, window_start

__all__ = ["WatchSummary", "summarize", "format_watch_summary", "is_watch_folder"]


def is_watch_folder(path: str | Path) -> bool:
    """True when ``path`` is the ``--out`` folder of ``levelfield watch``."""
    return bool(window_files(Path(path)))


@dataclass
class WatchSummary:
    """A watch folder summed up."""

    windows: pd.DataFrame
    """One row per window: ``window`` (its start, UTC), ``traces``, ``failed``, ``skipped_for_budget``
    (judged scores not asked for: the hour's ``--max-cost`` was spent), then ``<metric>`` means."""
    metrics: list[str]
    worst: pd.DataFrame
    """The lowest-scoring traces of the latest window: ``trace_id``, ``prompt``, ``response``, scores, ``mean``."""
    alerts: list[dict[str, Any]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    late: dict[str, int] = field(default_factory=dict)
    """Spans that came after their trace was scored, by trace id (from ``late_spans.jsonl``): those
    traces were scored without them."""


def _late(out: Path) -> dict[str, int]:
    path = out / "late_spans.jsonl"
    late: dict[str, int] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                late[str(entry["trace_id"])] = late.get(str(entry["trace_id"]), 0) + int(entry["late_spans"])
            except (ValueError, KeyError, TypeError):
                continue
    return late


def summarize(out: str | Path, *, worst: int = 5) -> WatchSummary:
    """Sum up a watch folder; ``worst``: how many of the latest window's lowest-scoring traces to show."""
    out = Path(out)
    files = window_files(out)
    if not files:
        raise RecordError(f"{out}: no watch windows here (expected {out}/windows/*.jsonl written by levelfield watch)")
    rows: list[Any] = []
    metrics: list[str] = []
    last_cases: list[Any] = []
    for path in files:
        record = read_record(path)
        metrics = metrics or [m["name"] for m in record.header.get("metrics") or []]
        prompts = {c.case_id: c for c in record.cases}
        values: dict[str, list[float]] = {m: [] for m in metrics}
        cases, failed, skipped = [], 0, 0
        for run, scores in record.runs.values():
            failed += int(run.failure)
            skipped += sum(1 for s in (scores or {}).values() if skipped_for_budget(s))
            entry = {m: (math.nan if scores is None or m not in scores else float(scores[m].value)) for m in metrics}
            for m in metrics:
                values[m].append(entry[m])
            case = prompts.get(run.case_id)
            cases.append({"trace_id": run.case_id, "prompt": None if case is None else case.prompt,
                          "response": run.output.response if run.output is not None else None, **entry})
        start = pd.Timestamp(window_start(path.name), unit="s", tz="UTC")
        rows.append({"window": start, "traces": len(cases), "failed": failed, "skipped_for_budget": skipped,
                     **{m: (float(pd.Series(v).mean()) if v else math.nan) for m, v in values.items()}})
        last_cases = cases
    table = pd.DataFrame(rows)
    low = pd.DataFrame(last_cases)
    if not low.empty and metrics:
        low["mean"] = low[metrics].mean(axis=1)
        low = low.sort_values("mean", kind="stable").head(worst).reset_index(drop=True)
    alerts: list[dict[str, Any]] = []
    drift = out / DRIFT_FILE
    if drift.exists():
        for line in drift.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("alert"):
                alerts.append(entry)
    status: dict[str, Any] = {}
    if (out / "status.json").exists():
        try:
            status = json.loads((out / "status.json").read_text(encoding="utf-8"))
        except ValueError:
            status = {}
    return WatchSummary(table, metrics, low, alerts, status, _late(out))


def _num(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _trend(table: pd.DataFrame, metric: str) -> str:
    values = table[metric].dropna()
    if len(values) < 2:
        return ""
    change = values.iloc[-1] - values.iloc[-2]
    arrow = "↑" if change > 0 else "↓" if change < 0 else "→"
    return f"{arrow} {change:+.3f} vs the window before"


def format_watch_summary(summary: WatchSummary) -> str:
    """The summary as text: a table of windows, the trend of each metric, alerts, the worst traces."""
    t = summary.windows
    skipped = int(t["skipped_for_budget"].sum())
    budget = ["skipped (budget)"] if skipped else []
    head = ["window (UTC)", "traces", "failed", *budget, *summary.metrics]
    lines = ["  ".join(head)]
    for _, row in t.iterrows():
        lines.append("  ".join([row["window"].strftime("%Y-%m-%d %H:%M"), str(row["traces"]), str(row["failed"]),
                                *([str(row["skipped_for_budget"])] if skipped else []),
                                *[_num(row[m]) for m in summary.metrics]]))
    lines.append("")
    if skipped:
        lines.append(f"{skipped} judged score(s) skipped: the hour's judge budget (--max-cost) was spent; those traces "
                     "have their other metrics, and the means leave the skipped scores out")
    for m in summary.metrics:
        trend = _trend(t, m)
        if trend:
            lines.append(f"{m}: {trend}")
    if summary.alerts:
        lines.append("")
        lines.append(f"Alerts ({len(summary.alerts)}):")
        for alert in summary.alerts:
            for c in alert.get("changes") or []:
                if c.get("verdict") == "regression":
                    lines.append(f"  {Path(alert['window']).stem}: {c['metric']}: {c['words']}")
    if not summary.worst.empty:
        lines.append("")
        lines.append("Worst traces of the latest window:")
        for _, row in summary.worst.iterrows():
            prompt = str(row["prompt"] or "")[:60]
            scores = ", ".join(f"{m}={_num(row[m])}" for m in summary.metrics)
            lines.append(f"  {row['trace_id']}  {scores}  {prompt!r}")
    if summary.late:
        lines.append("")
        lines.append(f"Late spans: {sum(summary.late.values())} span(s) of {len(summary.late)} trace(s) came after "
                     "their trace was scored, which was scored without them (listed in late_spans.jsonl; a longer "
                     "--late-grace holds traces longer)")
    s = summary.status
    if s:
        lines.append("")
        lines.append(f"Watcher: {s.get('scored_traces', 0)} scored, {s.get('pending', 0)} pending, "
                     f"{s.get('shed_traces', 0)} shed, {s.get('bad_requests', 0)} bad requests; time to score p99 "
                     f"{_num(s.get('time_to_score_p99'))} s")
        if s.get("judge_skipped_for_budget") or s.get("judge_budget_per_hour") is not None:
            lines.append(f"Judges: {dollars(s.get('judge_spent_this_hour') or 0)} of ${s.get('judge_budget_per_hour') or 0:g} "
                         f"spent this hour; {s.get('judge_skipped_for_budget', 0)} judged score(s) skipped for the budget "
                         "since the watcher started")
        if s.get("mlflow_assessments") or s.get("mlflow_failed_traces") or s.get("mlflow_missing_traces"):
            lines.append(f"MLflow: {s.get('mlflow_assessments', 0)} assessments logged, {s.get('mlflow_failed_traces', 0)} "
                         f"trace(s) failed after retries, {s.get('mlflow_missing_traces', 0)} not in MLflow")
    return "\n".join(lines).rstrip() + "\n"
