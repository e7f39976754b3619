"""``lf.metrics``: the metric classes users build metrics lists from, the LLM-judged ones included."""

from ._core.score.metrics import *  # noqa: F403
from ._core.score.metrics import __all__ as _core_all
from .judge import (
    adk,  # ADK's judged criteria: final_response_match_v2, rubric_based_*, hallucinations_v1, ...
    databricks,  # Databricks' judged metrics: correctness, groundedness, ...
    judged,
    vertex,  # Vertex AI's rubric metrics by their Vertex names: GENERAL_QUALITY, MULTI_TURN_*, HALLUCINATION
)
from .judge.cache import JudgeCache
from .judge.client import Judge
from .judge.metrics import PointwiseMetric
from .judge.pairwise import PairwiseMetric
from .judge.prompts import PairwiseMetricPromptTemplate, PointwiseMetricPromptTemplate
from .judge.vertex import RubricMetric

__all__ = [
    *_core_all,
    "judged",
    "adk",
    "databricks",
    "vertex",
    "RubricMetric",
    "Judge",
    "JudgeCache",
    "PairwiseMetric",
    "PairwiseMetricPromptTemplate",
    "PointwiseMetric",
    "PointwiseMetricPromptTemplate",
]
