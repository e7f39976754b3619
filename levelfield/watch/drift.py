"""Drift: is a window of production traffic significantly worse than the baseline?

Each closed window is tested against the baseline on every ``alert_if_worse`` metric with the
gate's logic made unpaired (a window and the baseline hold different traces): Fisher's exact test
for 0/1 metrics, Mann-Whitney otherwise (:func:`levelfield._core.stats.change.measure_unpaired_change`),
Holm's correction across the metrics, an alert only for a significant drop. Every check is a line
of ``out/drift.jsonl`` (so a restart never checks a window twice); an alert is printed and, with an
OTLP endpoint, sent there too. A baseline whose metrics were scored by other evaluators (judge,
prompt, rubrics, metric version) than the watcher's is refused, naming what differs, unless
``allow_different_evaluators``: then every check is labelled (``evaluator_notes`` in ``drift.jsonl``
and in the printed alert).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._core.errors import ConfigError, RecordError
from .._core.results.provenance import Evaluator, evaluators_from_header
from .._core.results.record import RUNS_FILE, read_record
from .._core.stats.change import Change, adjust, describe_change, measure_unpaired_change
from ..comparison._comparability import check_evaluators
from .windows import window_files

__all__ = ["Drift", "record_scores", "baseline_evaluators", "DRIFT_FILE"]

DRIFT_FILE = "drift.jsonl"
log = logging.getLogger("levelfield.watch")


def record_scores(paths: Sequence[Path], metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Metric -> every stored score of those metrics in the run records at ``paths`` (NaN kept)."""
    values: dict[str, list[float]] = {m: [] for m in metrics}
    for path in paths:
        record = read_record(path)
        if len(record.agents) > 1:
            raise ConfigError(
                f"{record.path}: holds {len(record.agents)} agents ({', '.join(record.agents)}); a drift baseline is "
                "one agent's runs: give the out folder of an eval or of an earlier watch")
        for _run, scores in record.runs.values():
            for m in metrics:
                score = (scores or {}).get(m)
                values[m].append(math.nan if score is None else float(score.value))
    return {m: np.asarray(v, dtype=float) for m, v in values.items()}


def baseline_paths(baseline: str | Path) -> list[Path]:
    """The run records of a baseline: a watch folder's windows, an out folder's runs.jsonl, or a record file."""
    path = Path(baseline)
    windows = window_files(path) if path.is_dir() else []
    if windows:
        return windows
    if path.is_dir() and (path / RUNS_FILE).is_file():
        return [path / RUNS_FILE]
    if path.is_file():
        return [path]
    raise ConfigError(f"baseline {str(baseline)!r}: no watch windows ({path}/windows/*.jsonl) and no saved run "
                      f"({RUNS_FILE}) there; give the --out folder of an earlier watch or eval")


def baseline_evaluators(paths: Sequence[Path]) -> dict[str, Evaluator] | None:
    """The evaluators the baseline's records keep (read from their header lines); None when one does not keep them.

    Records that disagree among themselves give no single answer: the first record's evaluator of a metric
    is taken and every other record is checked against it."""
    found: dict[str, Evaluator] | None = {}
    for path in paths:
        with Path(path).open("rb") as f:
            first = f.readline()
        try:
            header = json.loads(first.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise RecordError(f"{path}: the header line cannot be read") from None
        kept = evaluators_from_header(header) if isinstance(header, dict) else None
        if kept is None:
            return None
        assert found is not None
        for name, evaluator in kept.items():
            found.setdefault(name, evaluator)
            check_evaluators({name: found[name]}, {name: evaluator}, [name], allow=False,
                             what=f"baseline record {path} against the baseline's first record")
    return found


def _metric_names(alert_if_worse: str | Sequence[str]) -> list[str]:
    names = alert_if_worse.split(",") if isinstance(alert_if_worse, str) else [n for m in alert_if_worse for n in str(m).split(",")]
    return [n.strip() for n in names if n.strip()]


class Drift:
    """Checks closed windows against a baseline; see the module docs."""

    def __init__(self, baseline: str | Path, alert_if_worse: str | Sequence[str], out: Path, *, metrics: Sequence[str],
                 alpha: float = 0.05, margin: float = 0.0, min_window: int = 20, exporter: Any = None,
                 evaluators: Mapping[str, Evaluator] | None = None, allow_different_evaluators: bool = False) -> None:
        self.metrics = _metric_names(alert_if_worse)
        unknown = [m for m in self.metrics if m not in metrics]
        if unknown or not self.metrics:
            raise ConfigError(f"alert_if_worse: {', '.join(unknown) or '(none given)'} is not a metric being scored; "
                              f"scored: {', '.join(metrics)}")
        if not 0 < alpha < 1:
            raise ConfigError(f"alpha={alpha!r}: must be between 0 and 1")
        self.alpha, self.margin, self.min_window, self.exporter = alpha, float(margin), int(min_window), exporter
        try:
            paths = baseline_paths(baseline)
            self.base = record_scores(paths, self.metrics)
            saved = baseline_evaluators(paths)
        except RecordError as exc:
            raise ConfigError(f"baseline {str(baseline)!r}: {exc}") from None
        self.evaluator_notes: list[str] = []
        """Lines that label every check when the baseline's evaluators differ and that was allowed."""
        if evaluators is not None:
            self.evaluator_notes = check_evaluators(saved, evaluators, self.metrics, allow=allow_different_evaluators,
                                                    what=f"drift baseline {str(baseline)!r}")
        empty = [m for m, v in self.base.items() if not np.isfinite(v).any()]
        if empty:
            raise ConfigError(f"baseline {str(baseline)!r}: no score of {', '.join(empty)}; it was scored with other "
                              "metrics, or every run failed")
        self.path = Path(out) / DRIFT_FILE
        self.checked: set[str] = set()
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    self.checked.add(json.loads(line)["window"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a crash: that window is checked again

    def check(self, window: Path) -> list[Change]:
        """Test one closed window; returns its regressions (an alert when any), each window once."""
        name = window.name
        if name in self.checked or not window.exists():
            return []
        values = record_scores([window], self.metrics)
        n = {m: int(np.isfinite(v).sum()) for m, v in values.items()}
        entry: dict[str, Any] = {"window": name, "n": n, "baseline_n": {m: int(np.isfinite(v).sum()) for m, v in self.base.items()}}
        if self.evaluator_notes:
            entry["evaluator_notes"] = list(self.evaluator_notes)
        regressions: list[Change] = []
        if max(n.values()) < self.min_window:
            entry.update(alert=False, status=f"too few traces to test (fewer than {self.min_window})")
        else:
            changes = adjust([
                measure_unpaired_change(values[m], self.base[m], metric=m, agent=f"window {Path(name).stem}",
                                        baseline="baseline", alpha=self.alpha, margin=self.margin)
                for m in self.metrics
            ])
            regressions = [c for c in changes if c.regression]
            entry.update(alert=bool(regressions), changes=[_change_json(c) for c in changes])
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self.checked.add(name)
        if regressions:
            words = "; ".join(f"{c.metric}: {describe_change(c)}" for c in regressions)
            label = f" [{'; '.join(self.evaluator_notes)}]" if self.evaluator_notes else ""
            print(f"levelfield watch: ALERT window {Path(name).stem}: {words}{label}", flush=True)
            if self.exporter is not None:
                from .exporting import export_alert

                try:
                    export_alert(self.exporter, Path(name).stem, regressions)
                except Exception as exc:  # the endpoint being down must not stop the watcher
                    log.warning("levelfield watch: cannot send the alert over OTLP: %s", exc)
        return regressions


def _change_json(c: Change) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else float(x)

    return {"metric": c.metric, "n": c.n, "baseline_n": c.n_baseline, "difference": num(c.difference), "ci_low": num(c.low),
            "ci_high": num(c.high), "p_value": num(c.p_value), "p_holm": num(c.p_adjusted), "test": c.test,
            "verdict": c.verdict, "words": describe_change(c)}
