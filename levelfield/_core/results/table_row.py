"""One row of a metrics table: a run's case, answer, latency, failure, tokens, cost and scores."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..data.dataset import EvalCase
from ..data.prices import NO_COST, PriceTable, cost_note, usage_cost
from ..data.types import AgentRun, ToolCall
from ..score.metrics.base import Score

__all__ = ["table_row"]


_NO_USAGE = dict.fromkeys(("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens",
                          "reasoning_tokens"))
"""The token columns of a run that reported no usage."""


def _trajectory(calls: Iterable[ToolCall] | None) -> list[dict[str, Any]] | None:
    return None if calls is None else [c.to_vertex() for c in calls]


def table_row(case: EvalCase, run: AgentRun, scores: Mapping[str, Any], row_scores: Mapping[str, Score], *,
              prices: PriceTable | None, saved: bool) -> dict[str, Any]:
    """The metrics-table row of ``run`` of ``case``: ``scores`` its score columns (``Score.columns``),
    ``row_scores`` the Scores behind them (for the judges' dollars); ``saved``: scored saved
    predictions (a failed run keeps the saved response)."""
    row: dict[str, Any] = {"case_id": case.case_id, "trial": run.trial}
    row["prompt"] = case.prompt
    if case.history:
        row["history"] = [m.model_dump() for m in case.history]
    row["reference"] = case.reference
    row["reference_trajectory"] = _trajectory(case.reference_trajectory)
    for key, value in case.metadata.items():
        if key not in ("latency_in_seconds", "failure"):
            row.setdefault(key, value)
    out = run.output or run.partial_output
    row["response"] = out.response if out is not None else (case.response if saved else None)
    row["predicted_trajectory"] = _trajectory(out.trajectory) if out is not None else None
    row["latency_in_seconds"] = run.latency_in_seconds
    row["failure"] = int(run.failure)
    row["error"] = run.error
    row["error_type"] = run.error_type
    usage = out.usage if out is not None else None
    conv = run.conversation
    if conv is not None:
        # A simulated conversation: the user's turns, how it ended, and each side's cost apart.
        row["prompt"] = conv.user_turns[0] if conv.user_turns else row["prompt"]
        row["user_turns"] = list(conv.user_turns)
        row["turns_used"] = len(run.turns)
        row["conversation_status"] = conv.status
        row["simulator_failure"] = int(conv.simulator_failure)
        row["simulator_error"] = conv.error
        row["replayed_from"] = conv.replayed_from
        row["simulator_total_tokens"] = conv.simulator_usage.total_tokens if conv.simulator_usage else None
        usage = conv.agent_usage
    if usage is not None:
        row["input_tokens"] = usage.input_tokens
        row["output_tokens"] = usage.output_tokens
        row["total_tokens"] = usage.total_tokens
        for part in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            row[part] = getattr(usage, part)
        cost = usage_cost(usage, prices or {})
    else:  # no usage reported (most agents): the same keys, in the same order, empty
        row.update(_NO_USAGE)
        cost = NO_COST
    row["cost_usd"] = cost.usd
    row["cost_note"] = cost_note([cost]) if cost.unpriced or cost.unnamed else None  # None: nothing to say
    if conv is not None and conv.simulator_usage is not None:
        row["simulator_cost_usd"] = usage_cost(conv.simulator_usage, prices or {}).usd
    row.update(scores)
    for name, score in row_scores.items():
        if score.usage is not None:
            row[f"{name}/cost_usd"] = usage_cost(score.usage, prices or {}).usd
    return row
