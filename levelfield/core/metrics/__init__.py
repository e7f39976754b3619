"""Metrics: trajectory, response, custom (and judged) metrics, all scored locally."""

from .base import Metric, Score, ScoringContext
from .custom import CustomMetric
from . import judged
from .judge_client import Judge, JudgeCache
from .judge_prompts import PairwiseMetricPromptTemplate, PointwiseMetricPromptTemplate
from .pairwise import PairwiseMetric
from .pointwise import PointwiseMetric
from .registry import metric_names, register_metric, resolve_metrics
from .response import Bleu, ExactMatch, ResponseMatchScore, Rouge
from .retrieval import DocumentPrecision, DocumentRecall
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
    "judged",
    "Judge",
    "JudgeCache",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
    "metric_names",
    "register_metric",
    "resolve_metrics",
    "Bleu",
    "ExactMatch",
    "ResponseMatchScore",
    "Rouge",
    "DocumentPrecision",
    "DocumentRecall",
    "ToolTrajectoryAvgScore",
    "TrajectoryAnyOrderMatch",
    "TrajectoryExactMatch",
    "TrajectoryInOrderMatch",
    "TrajectoryPrecision",
    "TrajectoryRecall",
    "TrajectorySingleToolUse",
]
