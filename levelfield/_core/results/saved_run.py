"""The run of a saved prediction: what a row's saved answer stands for when no agent ran."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..data.dataset import EvalCase
from ..data.types import AgentOutput, AgentRun, Usage

__all__ = ["SAVED_AGENT", "saved_run"]


SAVED_AGENT = "saved predictions"
"""The agent name of scored saved predictions (no agent ran)."""

_FAILED_FLAGS = (True, 1, "1", "true", "True")


def _usage(value: Any) -> Usage | None:
    """A saved ``usage`` cell (``{input_tokens, output_tokens, total_tokens[, cache_read_tokens, ...]}``) as
    Usage; anything else None."""
    if not isinstance(value, Mapping):
        return None
    try:
        return Usage.model_validate(dict(value))
    except ValueError:
        return None


def saved_run(case: EvalCase) -> AgentRun:
    """The run of one case's saved prediction (no agent ran): failed where the row says so."""
    latency = case.metadata.get("latency_in_seconds")
    try:
        latency = float(latency) if latency is not None else math.nan
    except (TypeError, ValueError):
        latency = math.nan
    failed = case.metadata.get("failure") in _FAILED_FLAGS
    output = None
    turns: list[AgentOutput] = []
    if not failed:
        output = AgentOutput(
            response=case.response or "",
            trajectory=case.predicted_trajectory or [],
            retrieved_context=case.retrieved_context,
            usage=_usage(case.metadata.get("usage")),
        )
        if any(t.has_prediction for t in case.turns):
            # Saved per-turn answers become the run's turns, as a live multi-turn run records them.
            turns = [AgentOutput(response=t.response or "", trajectory=t.predicted_trajectory or []) for t in case.turns]
            output = turns[-1]
    error = case.metadata.get("error")
    return AgentRun(
        case_id=case.case_id,
        agent_name=SAVED_AGENT,
        output=output,
        latency_in_seconds=latency,
        failure=failed,
        turns=turns,
        error=str(error) if failed and error is not None else None,
    )
