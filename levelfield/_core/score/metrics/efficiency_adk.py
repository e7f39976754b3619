"""What an agent's answer cost, as ADK's efficiency criteria count it: tool calls, model calls, tokens, seconds per turn.

(Whole-run counts that take ``agent=`` are in :mod:`.efficiency`: ``tool_call_count``, ``model_call_count``,
``repeated_tool_calls``, ``token_count``.)

``tool_call_count_v1``, ``inference_call_count_v1``, ``token_usage_v1`` and ``invocation_duration_v1``
are informational, as in ADK: lower is better, as criteria they never pass or fail a case, and
``check_eval`` reports them on every eval without being asked. Each is counted per turn
(``<name>/per_turn``, None where the run did not record it) and the row's score is the average
over turns, so it reads "per turn" whatever the number of turns. They read what the adapter
recorded for each turn (its tool calls, ``AgentOutput.model_calls``, ``AgentOutput.usage``,
``AgentOutput.duration_seconds`` as the runner timed the turn), as ADK counts them: the calls an
ADK ``AgentTool``'s agent makes (``ToolCall.within``, ``AgentOutput.inner_model_calls``) are not in
ADK's event stream and are left out here too (levelfield's own ``tool_call_count`` and
``model_call_count`` count them).

The averages follow ADK's own evaluators: tool and model calls average over the turns that have
a count; tokens average over every turn once any turn reported usage (a turn that reported
none counts as 0, as ADK's ``token_usage_v1`` does), and the total is input plus output tokens;
seconds are rounded to milliseconds per turn and average over the timed turns (saved predictions
were not timed: NaN), as ADK's ``invocation_duration_v1`` does. ADK also splits a turn's seconds
into model, tool and framework time; levelfield reports the total only.
"""

from __future__ import annotations

from .base import NAN, Metric, Score, ScoringContext, TurnContext

__all__ = ["AdkToolCallCount", "InferenceCallCount", "TokenUsageCount", "InvocationDuration", "EFFICIENCY_METRICS"]


class _PerTurnCount(Metric):
    """A count per turn, averaged over the turns that have one."""

    def count(self, turn: TurnContext) -> float | None:
        raise NotImplementedError

    def score(self, ctx: ScoringContext) -> Score:
        per_turn = [self.count(t) for t in ctx.exchanges()]
        known = [v for v in per_turn if v is not None]
        value = sum(known) / len(known) if known else NAN
        return Score(value, extra={"per_turn": per_turn})


class AdkToolCallCount(_PerTurnCount):
    """ADK's ``tool_call_count_v1``: tool calls per turn (informational; lower is better)."""

    def __init__(self, *, name: str = "tool_call_count_v1") -> None:
        self.name = name

    def count(self, turn: TurnContext) -> float | None:
        # The turn's own calls, as ADK's event stream holds them: not those made inside an AgentTool.
        return float(sum(1 for c in turn.predicted_trajectory if c.within is None))


class InferenceCallCount(_PerTurnCount):
    """ADK's ``inference_call_count_v1``: model calls per turn, where the adapter counted them (informational)."""

    def __init__(self, *, name: str = "inference_call_count_v1") -> None:
        self.name = name

    def count(self, turn: TurnContext) -> float | None:
        if turn.model_calls is None:
            return None
        return float(turn.model_calls - (turn.inner_model_calls or 0))  # as ADK counts: not inside AgentTools


class TokenUsageCount(Metric):
    """ADK's ``token_usage_v1``: input plus output tokens per turn (informational; lower is better).

    ``<name>/input_tokens`` and ``<name>/output_tokens`` give the two parts, averaged the same way.
    """

    def __init__(self, *, name: str = "token_usage_v1") -> None:
        self.name = name

    def score(self, ctx: ScoringContext) -> Score:
        turns = ctx.exchanges()
        reported = [t.usage for t in turns]
        per_turn = [None if u is None else float(u.input_tokens + u.output_tokens) for u in reported]
        if all(u is None for u in reported):
            return Score(NAN, extra={"per_turn": per_turn})

        def average(values: list[float | None]) -> float:
            # A turn that reported nothing spent nothing known: it stays in the denominator.
            return sum(v for v in values if v is not None) / len(values)

        extra = {
            "per_turn": per_turn,
            "input_tokens": average([None if u is None else float(u.input_tokens) for u in reported]),
            "output_tokens": average([None if u is None else float(u.output_tokens) for u in reported]),
        }
        return Score(average(per_turn), extra=extra)


class InvocationDuration(_PerTurnCount):
    """ADK's ``invocation_duration_v1``: wall-clock seconds per turn, where the run timed it (informational)."""

    def __init__(self, *, name: str = "invocation_duration_v1") -> None:
        self.name = name

    def count(self, turn: TurnContext) -> float | None:
        # ADK rounds each turn's measurement to milliseconds ("not meaningful below that").
        return None if turn.duration_seconds is None else round(turn.duration_seconds, 3)

    def score(self, ctx: ScoringContext) -> Score:
        score = super().score(ctx)
        return Score(score.value if score.value != score.value else round(score.value, 3), extra=score.extra)


EFFICIENCY_METRICS = {
    "tool_call_count_v1": AdkToolCallCount,
    "inference_call_count_v1": InferenceCallCount,
    "token_usage_v1": TokenUsageCount,
    "invocation_duration_v1": InvocationDuration,
}
"""ADK's informational efficiency criteria by name."""
