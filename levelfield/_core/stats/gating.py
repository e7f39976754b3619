"""The mean a threshold gate reads (``--fail-under``): failed runs count as 0 unless the user asks otherwise.

An agent that crashes on 4 of 17 cases must not pass ``--fail-under metric=0.9`` on the 13 it finished:
the gate reads the mean with each failed run scoring 0, says how many runs failed, and prints that same
mean. ``failed_runs="exclude"`` (``--failed-runs exclude`` given on the command line) gates the mean over
completed runs instead, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..score.metrics.base import FAILED_AS_ZERO, FAILED_LEFT_OUT

__all__ = ["GateMean", "gate_mean", "result_gate_mean"]


@dataclass(frozen=True)
class GateMean:
    """One agent's mean of one metric as a threshold gate reads it."""

    agent: str
    metric: str
    mean: float
    failed_runs: str
    """``"zero"`` or ``"exclude"``: the rule this mean is by."""
    failures: int
    runs: int

    def words(self) -> str:
        """``"mean 0.765 (4 of 17 runs failed, counted as 0)"``."""
        mean = "-" if math.isnan(self.mean) else f"{self.mean:.3f}"
        if not self.failures:
            return f"mean {mean} (no run failed)"
        rule = "counted as 0" if self.failed_runs == "zero" else "left out"
        return f"mean {mean} ({self.failures} of {self.runs} runs failed, {rule})"

    def missed(self, floor: float) -> bool:
        return math.isnan(self.mean) or self.mean < floor


def gate_mean(summary: Any, agent: str, metric: str, *, failed_runs: str = "zero") -> GateMean:
    """The mean of ``metric`` for ``agent`` by ``failed_runs`` from a comparison's ``summary``, whichever
    rule the summary's own ``/mean`` column follows (the other rule's mean is its ``/mean_failed_*`` column)."""
    own = summary.attrs.get("failed_runs", "zero")
    if failed_runs == own:
        column = f"{metric}/mean"
    else:
        column = f"{metric}/{FAILED_AS_ZERO if failed_runs == 'zero' else FAILED_LEFT_OUT}"
    row = summary.loc[agent]
    mean = float(row[column]) if column in row else math.nan
    return GateMean(agent, metric, mean, failed_runs, int(row.get("failures", 0) or 0), int(row.get("runs", 0) or 0))


def result_gate_mean(summary_metrics: Any, metric: str, *, failed_runs: str = "zero") -> GateMean:
    """The same read of one evaluation's ``summary_metrics`` (saved predictions scored by ``levelfield eval``):
    ``<metric>/mean_failed_as_zero`` when failed rows count as 0 (and there is one), else ``<metric>/mean``."""
    failures = int(summary_metrics.get("failure/count", 0) or 0)
    runs = int(summary_metrics.get("row_count", 0) or 0)
    key = f"{metric}/{FAILED_AS_ZERO}"
    if failed_runs == "zero" and key in summary_metrics:
        mean = float(summary_metrics[key])
    else:
        mean = float(summary_metrics.get(f"{metric}/mean", math.nan))
    return GateMean("", metric, mean, failed_runs, failures, runs)
