"""google-adk as the oracle: our turns turned into ADK Invocations, and ADK's own evaluators' numbers.

The conformance tests compute ADK's score in the test and compare it with levelfield's; nothing
here re-implements a rule of ADK's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.evaluation.eval_case import IntermediateData, Invocation  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion  # noqa: E402
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator  # noqa: E402
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator  # noqa: E402
from google.genai import types  # noqa: E402

from levelfield._core.data.types import ToolCall  # noqa: E402
from levelfield._core.score.metrics.trajectory import adk_args  # noqa: E402

__all__ = ["invocation", "adk_trajectory_scores", "adk_response_scores", "adk_call"]


def adk_call(call: ToolCall, *, expected: bool) -> types.FunctionCall:
    """A genai FunctionCall: an expected call keeps 'no args' apart from {}; an agent's call has args."""
    return types.FunctionCall(name=call.tool_name, args=adk_args(call) if expected else call.tool_input)


def invocation(
    prompt: str,
    text: str | None,
    calls: Sequence[ToolCall] | None,
    *,
    expected: bool,
    thoughts: str | None = None,
) -> Invocation:
    """One ADK invocation; ``text=None`` leaves out the final response, ``calls=None`` the tool uses."""
    parts = []
    if thoughts:
        parts.append(types.Part(text=thoughts, thought=True))
    if text is not None:
        parts.append(types.Part(text=text))
    return Invocation(
        user_content=types.Content(parts=[types.Part(text=prompt)], role="user"),
        final_response=types.Content(parts=parts, role="model") if parts else None,
        intermediate_data=None if calls is None else IntermediateData(
            tool_uses=[adk_call(c, expected=expected) for c in calls]
        ),
    )


def adk_trajectory_scores(
    actual: Sequence[Invocation], expected: Sequence[Invocation], match_type: str = "EXACT", ignore_args: bool = False
) -> tuple[float, list[float]]:
    """ADK's TrajectoryEvaluator: (overall score, per-invocation scores)."""
    criterion = ToolTrajectoryCriterion(threshold=1.0, match_type=match_type, ignore_args=ignore_args)
    evaluator = TrajectoryEvaluator(
        eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", threshold=1.0, criterion=criterion)
    )
    result = evaluator.evaluate_invocations(list(actual), list(expected))
    return result.overall_score, [r.score for r in result.per_invocation_results]


def adk_response_scores(actual: Sequence[Invocation], expected: Sequence[Invocation]) -> tuple[float, list[float]]:
    """ADK's response_match_score evaluator: (overall score, per-invocation scores)."""
    evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
    result = evaluator.evaluate_invocations(list(actual), list(expected))
    return result.overall_score, [r.score for r in result.per_invocation_results]


def as_json(value: Any) -> Any:
    """Plain JSON of a pydantic model (for writing fixture files in ADK's schema)."""
    return value.model_dump(mode="json", exclude_none=True)
