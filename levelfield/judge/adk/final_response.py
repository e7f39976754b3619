"""ADK's ``final_response_match_v2``: per turn, is the agent's answer valid against the reference."""

from __future__ import annotations

from typing import Any

from ..._core.score.metrics.base import Score, ScoringContext, TurnContext
from ..client import JudgeReply
from .base import AdkJudged
from .labels import _label_format, _label_value, label_row
from .turns import _answer_text

__all__ = ["FinalResponseMatchV2"]

_FINAL_RESPONSE_MATCH_PROMPT = """# Task
You check whether an AI agent's answer to a user is correct, using a reference answer a person wrote as the truth.

# How to judge
- The answer is valid when it gives the key facts and outcome of the reference. Wording, order, format
  (a list or sentences, a table or prose), number formatting (1000000 or 1,000,000) and spelling variants
  (TX or Texas) may differ, unless the user asked for a specific format.
- Extra information does not make an answer invalid, as long as it contains the correct answer.
- Units matter: 100 miles is not 100 km. Rounding differences are fine when no precision was asked for
  and they do not change a conclusion.
- Trust the reference for calculations and data you cannot check yourself.
- An answer that says it cannot help, when the reference shows an answer exists, is invalid.

# The user's request
{prompt}

# The agent's answer
{response}

# The reference answer
{reference}

# Your answer
Reply with one JSON object and nothing else:
{{"reasoning": "<why, in a few sentences>", "verdict": "<valid or invalid>"}}"""


class FinalResponseMatchV2(AdkJudged):
    """ADK's ``final_response_match_v2``: the share of turns whose answer the judge finds valid against the reference."""

    binary = True
    """Its verdicts are yes/no: each row keeps ``<metric>/p``, the judge's probability of yes (a case of
    several turns: the mean over its turns, as its score is the share of yes turns)."""

    requires = ("reference",)
    description = (
        "ADK final_response_match_v2: per turn, the judge says whether the agent's answer is valid against the "
        "reference (majority of samples, a tie invalid); the case scores the share of valid turns."
    )

    def __init__(
        self,
        judge: Any = None,
        *,
        name: str = "final_response_match_v2",
        include_intermediate_responses_in_final: bool = False,
        **options: Any,
    ) -> None:
        self._setup(name, judge, options)
        self.with_intermediate = include_intermediate_responses_in_final
        self.expected_answer = _label_format("verdict", '"valid" or "invalid"')

    def render(self, turn: TurnContext) -> str:
        """The prompt the judge sees for one turn."""
        return _FINAL_RESPONSE_MATCH_PROMPT.format(
            prompt=turn.prompt, response=_answer_text(turn, self.with_intermediate), reference=turn.reference or ""
        )

    @staticmethod
    def read(reply: JudgeReply) -> float | None:
        """1.0 valid, 0.0 invalid, None when the answer gives no readable label."""
        return _label_value(
            reply.text, reply.parsed, ("verdict", "is_the_agent_response_valid", "is_valid"), ("is_the_agent_response_invalid",)
        )

    async def ascore(self, ctx: ScoringContext) -> Score:
        readable = lambda r: self.read(r) is not None  # noqa: E731
        replies = [await self._samples(self.render(t), readable) if t.reference is not None else [] for t in ctx.exchanges()]
        return label_row(replies, self.read, self.num_samples, ("invalid", "valid"), expected=self.expected_answer)
