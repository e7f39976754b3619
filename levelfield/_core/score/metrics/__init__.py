"""Metrics: trajectory, response and custom metrics, all scored locally (the LLM judge lives in ``levelfield.judge``)."""

from .agents import HandoffMatch, ToolAttribution
from .base import Metric, Score, ScoringContext
from .custom import CustomMetric
from .efficiency import ModelCallCount, RepeatedToolCalls, TokenCount, ToolCallCount
from .efficiency_adk import AdkToolCallCount, InferenceCallCount, InvocationDuration, TokenUsageCount
from .registry import metric_names, register_metric, register_metric_hint, resolve_metrics
from .response import Bleu, ExactMatch, ResponseMatchScore, Rouge
from .retrieval import DocumentPrecision, DocumentRecall
from .state import StateCheck
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
    "AdkToolCallCount",
    "InferenceCallCount",
    "TokenUsageCount",
    "InvocationDuration",
    "metric_names",
    "register_metric",
    "register_metric_hint",
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
    "HandoffMatch",
    "ToolAttribution",
    "ToolCallCount",
    "ModelCallCount",
    "RepeatedToolCalls",
    "TokenCount",
    "StateCheck",
]
