"""ADK's ``per_turn_user_simulator_quality_v1``: did each of a simulated user's turns keep to its scenario."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._core.score.metrics.base import Score, ScoringContext, TurnContext
from ..client import JudgeReply
from .base import AdkJudged
from .labels import _label_format, _label_value, label_row

__all__ = ["PerTurnUserSimulatorQuality"]

_USER_TURN_PROMPT = """# Task
A simulated user talks to an AI agent, following a plan. Decide whether the user's newest message keeps
to the plan and the persona, given the conversation so far. It keeps to the plan when it pursues the
plan's next goals, says only what the plan allows, and does not end the conversation too early or too late.
Ending the conversation is written as the stop signal {stop_signal}; a stop signal is valid only once
every goal of the plan was reached or cannot be reached.

# The plan
{plan}

# The user's persona
{persona}

# The conversation so far
{history}

# The user's newest message
{message}

# Your answer
Reply with one JSON object and nothing else:
{{"reasoning": "<why, briefly>", "is_valid": <true or false>}}"""


class PerTurnUserSimulatorQuality(AdkJudged):
    """ADK's ``per_turn_user_simulator_quality_v1``: the share of a simulated user's turns that kept to the scenario.

    The first user message must be the scenario's starting prompt (no judge call); each later one
    is judged against the plan; then the judge checks that the conversation ended when it should
    (a fault there fails the last turn). A turn counts when its score meets ``threshold``.
    NaN for cases that are not simulated conversations.
    """

    binary = True
    """Its verdicts are yes/no: each row keeps ``<metric>/p``, the judge's probability of yes (a case of
    several turns: the mean over its turns, as its score is the share of yes turns)."""

    description = (
        "ADK per_turn_user_simulator_quality_v1: in a simulated conversation, the share of user turns that kept "
        "to the scenario (first turn = starting prompt; later turns and the ending judged against the plan)."
    )

    def __init__(
        self, judge: Any = None, *, name: str = "per_turn_user_simulator_quality_v1", threshold: float = 1.0,
        stop_signal: str = "</finished>", **options: Any
    ) -> None:
        self._setup(name, judge, options)
        self.threshold = threshold
        self.stop_signal = stop_signal
        self.expected_answer = _label_format("is_valid", "true or false")

    def computable(self, ctx: ScoringContext) -> bool:
        return bool(ctx.dialogue) and "conversation_plan" in ctx.metadata and not ctx.failure

    def _prompt(self, ctx: ScoringContext, history: Sequence[TurnContext], message: str) -> str:
        lines = [f"user: {t.prompt}\n\nagent: {t.response or ''}" for t in history]
        return _USER_TURN_PROMPT.format(
            stop_signal=self.stop_signal,
            plan=ctx.metadata.get("conversation_plan", ""),
            persona=ctx.metadata.get("user_persona") or "(none given)",
            history="\n\n".join(lines),
            message=message,
        )

    @staticmethod
    def read(reply: JudgeReply) -> float | None:
        return _label_value(reply.text, reply.parsed, ("is_valid", "verdict"))

    async def ascore(self, ctx: ScoringContext) -> Score:
        turns = ctx.dialogue
        first = float(turns[0].prompt.strip() == str(ctx.metadata.get("starting_prompt", "")).strip())
        readable = lambda r: self.read(r) is not None  # noqa: E731
        judged = [await self._samples(self._prompt(ctx, turns[:i], t.prompt), readable) for i, t in enumerate(turns) if i]
        ending = await self._samples(self._prompt(ctx, turns, self.stop_signal), readable)
        # The first user turn is the starting prompt (not judged): the judged ones are turns 2.., then the ending.
        labels = [*(f"user turn {i + 1}" for i in range(1, len(turns))), "the ending"]
        row = label_row([*judged, ending], self.read, self.num_samples, ("off plan", "on plan"), labels,
                        expected=self.expected_answer)
        if row.failed:
            return row  # no judged turn (nor the ending) could be read: a judge failure, not a score
        later = list(row.extra["per_turn"])
        scores: list[float | None] = [first, *later[:-1]]
        if later[-1] is not None and later[-1] < self.threshold:
            scores[-1] = later[-1]  # ended at the wrong moment: the last user turn fails
        passed = [s if s is not None and s >= self.threshold else 0.0 for s in scores]
        row.extra["per_turn"] = scores
        row.value = sum(passed) / len(scores)
        row.failed = False
        return row
