"""``TaskSuccess``: a judge reads a whole simulated conversation and says whether its goal was reached."""

from __future__ import annotations

from typing import Any

from .._core.score.metrics.base import ScoringContext
from .._core.score.metrics.registry import register_metric_hint
from ..judge.metrics import PointwiseMetric
from ..judge.prompts import PointwiseMetricPromptTemplate

__all__ = ["TaskSuccess"]


def _template() -> PointwiseMetricPromptTemplate:
    return PointwiseMetricPromptTemplate(
        criteria={
            "goal reached": "By the end of the conversation the agent did what the user's plan asked for "
            "(every step of it), as the conversation and the agent's tool calls show.",
            "no false claims": "The agent did not claim to have done something the conversation does not show it did.",
        },
        rating_rubric={"1": "the user's goal was reached", "0": "the goal was not reached, or only in part"},
        input_variables=["conversation_plan", "user_persona", "conversation"],
        metric_definition="Task success: whether a simulated user's goal was reached in a multi-turn conversation.",
    )


class TaskSuccess(PointwiseMetric):
    """``task_success``: 1 when the judge finds the scenario's goal (its conversation plan) reached
    by the end of the conversation, 0 otherwise; NaN for rows that are not simulated conversations.

    ``judge``: any LangChain chat model or ``"provider:model"`` string; the other keywords are
    :class:`~levelfield.metrics.PointwiseMetric`'s (``judge_config=lf.JudgeConfig(samples=3)``...).
    """

    def __init__(self, judge: Any = None, *, name: str = "task_success", **options: Any) -> None:
        super().__init__(name, _template(), judge, **options)

    def computable(self, ctx: ScoringContext) -> bool:
        return "conversation" in ctx.metadata and super().computable(ctx)


# Named as a bare string it cannot be built (it needs a judge): say how.
register_metric_hint("task_success", "lf.TaskSuccess(judge=...) (a judged metric of simulated conversations)")
