"""How a comparison's numbers become a verdict: one ``StatsConfig`` whose defaults are defined here.

Run options (how runs execute) are :class:`~levelfield._core.data.config.RunConfig`; these are the
statistics options, apart from them::

    lf.compare(ds, agents, stats=lf.StatsConfig(confidence=0.99, reducer="max"))
    lf.compare(ds, agents, baseline="runs/main", fail_if_worse="trajectory_exact_match",
               stats=lf.StatsConfig(alpha=0.01, margin=0.02))
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, get_args

from ..data.config import options_applied
from ..errors import ConfigError
from .inference import REDUCERS, PairedTestName, Reducer

__all__ = ["StatsConfig", "FailedRuns", "STATS_OPTIONS", "stats_config"]

FailedRuns = Literal["zero", "exclude"]
JudgeScores = Literal["verdict", "probability"]
JUDGE_SCORES = get_args(JudgeScores)
PAIRED_TESTS = get_args(PairedTestName)


@dataclass(frozen=True)
class StatsConfig:
    """How scores become summaries, paired tests and a gate's verdict; the same for every agent."""

    failed_runs: FailedRuns = "zero"
    """``"zero"``: a failed run scores 0 on every metric that applies to its case; ``"exclude"``:
    it is left out (NaN), so means are over completed runs."""
    confidence: float = 0.95
    """Level of every interval."""
    test: PairedTestName = "auto"
    """The paired test: ``auto`` = McNemar's score test with Tango's interval of the difference of
    proportions for 0/1 metrics, the paired t test of the mean difference otherwise; ``wilcoxon``
    (its interval is of the Hodges–Lehmann shift) and ``permutation`` on request."""
    seed: int = 0
    """Seed of the bootstrap and permutation resampling (results are reproducible)."""
    reducer: Reducer = "mean"
    """How a case's trials become one value: ``mean``, ``max``, ``min`` or ``median``."""
    alpha: float = 0.05
    """Significance level of the regression gate (``fail_if_worse``) and of change verdicts."""
    margin: float = 0.0
    """A drop the gate tolerates, in the metric's units (0.02 = 2 points of a 0/1 metric)."""
    judge_scores: JudgeScores = "verdict"
    """What a binary judged metric's statistics use: ``"verdict"`` the judge's 0/1 verdicts;
    ``"probability"`` its probability of a pass per row (``<metric>/p``; the verdict where it gave
    none): summaries, intervals, paired tests and the judge correction then use these soft labels
    (see ``levelfield._core.stats.soft_labels``)."""

    def __post_init__(self) -> None:
        if self.failed_runs not in ("zero", "exclude"):
            raise ConfigError(f"failed_runs={self.failed_runs!r}: use 'zero' or 'exclude'")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, (int, float)) or not 0 < self.confidence < 1:
            raise ConfigError(f"confidence={self.confidence!r}: must be between 0 and 1")
        if self.test not in PAIRED_TESTS:
            raise ConfigError(f"test={self.test!r}: use one of {', '.join(PAIRED_TESTS)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed={self.seed!r}: must be a whole number >= 0 (numpy's seeds are never negative)")
        if self.reducer not in REDUCERS:
            raise ConfigError(f"reducer={self.reducer!r}: use one of {', '.join(REDUCERS)}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha < 1:
            raise ConfigError(f"alpha={self.alpha!r}: must be between 0 and 1")
        if isinstance(self.margin, bool) or not isinstance(self.margin, (int, float)) or not 0 <= self.margin < math.inf:
            raise ConfigError(f"margin={self.margin!r}: must be at least 0 (in the metric's units, 0.02 = 2 points)")
        if self.judge_scores not in JUDGE_SCORES:
            raise ConfigError(f"judge_scores={self.judge_scores!r}: use 'verdict' (the judge's 0/1 verdicts) or "
                              "'probability' (its probability of a pass per row)")

    def replace(self, **options: Any) -> StatsConfig:
        """A copy with some options changed (names checked)."""
        return stats_config(self, **options)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values (for the run record)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> StatsConfig:
        """The options saved by :meth:`to_dict` (unknown keys, such as a baseline's name, ignored)."""
        return cls(**{k: v for k, v in saved.items() if k in STATS_OPTIONS})


STATS_OPTIONS = tuple(f.name for f in fields(StatsConfig))


def stats_config(config: StatsConfig | None = None, /, **options: Any) -> StatsConfig:
    """``config`` (or the defaults) with ``options`` applied; an unknown option is a clear error."""
    return options_applied(StatsConfig, config, options, argument="stats", kind="statistics option")
