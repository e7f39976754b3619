"""Metrics: trajectory, response, custom (and judged) metrics, all scored locally."""

from .base import Metric, Score, ScoringContext
from .custom import CustomMetric
from .registry import metric_names, register_metric, resolve_metrics
from .response import Bleu, ExactMatch, ResponseMatchScore, Rouge
from .trajectory import (
    ToolTrajectoryAvgScore,
    TrajectoryAnyOrderMatch,
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
)

__all__ = [
    "Metric",
    "Score",
    "ScoringContext",
    "CustomMetric",
    "metric_names",
    "register_metric",
    "resolve_metrics",
    "Bleu",
    "ExactMatch",
    "ResponseMatchScore",
    "Rouge",
    "ToolTrajectoryAvgScore",
    "TrajectoryAnyOrderMatch",
    "TrajectoryExactMatch",
    "TrajectoryInOrderMatch",
    "TrajectoryPrecision",
    "TrajectoryRecall",
    "TrajectorySingleToolUse",
]
