"""The base of ADK's judged criteria: the judge and its samples, and a row's score from per-turn scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..._core.errors import MetricError
from ..._core.score.metrics.base import Metric, Score, ScoringContext
from ..client import JudgeReply
from ..config import refuse_judge_keywords
from ..metrics import JudgedMetric, judge_failure

__all__ = ["AdkJudged", "ADK_DEFAULT_SAMPLES"]

ADK_DEFAULT_SAMPLES = 5
"""ADK's ``judge_model_options.num_samples`` default."""
_TEXT_ONLY = {"type": "object", "properties": {}}
"""The schema handed to the judge client by metrics that read plain text answers."""


class AdkJudged(JudgedMetric, Metric):
    """What ADK's judged criteria share here: the judge and its samples, a threshold, sync and async scoring."""

    is_async = True
    description: str = ""
    """What the metric measures and how levelfield computes it."""

    default_samples: int = ADK_DEFAULT_SAMPLES
    """Times the judge is asked per row when ``judge_config`` leaves ``samples`` None (ADK's default)."""

    def _setup(self, name: str, judge: Any, options: Mapping[str, Any]) -> None:
        """The metric's name and judge; ``options``, the constructor's other keywords, hold ``judge_config`` only
        (a panel, and the judge's options given as keywords, are refused saying what to give)."""
        self.name = name
        options = dict(options)
        config = options.pop("judge_config", None)
        if "judges" in options:  # a panel is not silently reduced to nothing
            raise MetricError("ADK's and Vertex's judged criteria take one judge (judge=, with "
                              "judge_config=lf.JudgeConfig(samples=...)); a panel of judges (judges=[...]) is for "
                              "lf.metrics.PointwiseMetric and lf.metrics.judged.*")
        refuse_judge_keywords(f"{type(self).__name__} {name!r}", options)
        # ADK's prompts ask for a text format and ADK reads text: structured output only when asked for.
        self._setup_judging(judge, config, samples=self.default_samples, structured_output=False)

    async def _samples(self, prompt: str, readable: Callable[[JudgeReply], bool]) -> list[JudgeReply]:
        """``num_samples`` answers to one prompt; ``readable(reply)`` says which are worth caching."""
        return await self.ask([prompt] * self.num_samples, _TEXT_ONLY, lambda r: True if readable(r) else None)

    def score(self, ctx: ScoringContext) -> Score:
        """Sync twin of :meth:`ascore`."""
        from ..._core.run.threads import run_coroutine

        return run_coroutine(self.ascore(ctx))  # type: ignore[return-value]  # ADK's criteria score with a Score

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"


class _Unread:
    """What a row's judge calls gave that could not be used: unreadable answers and errors, in order."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        """Raw answers no parser could read."""
        self.errors: list[str] = []
        """Errors of calls that gave no answer."""
        self.shown: list[str] = []
        """Both, as ``<metric>/unparsed`` keeps them (errors as ``judge error: ...``)."""

    def answer(self, text: str | None, note: str = "") -> None:
        self.answers.append(text or "")
        self.shown.append(f"{note}{text or ''}" if note else (text or "(empty answer)"))

    def error(self, error: str) -> None:
        self.errors.append(error)
        self.shown.append(f"judge error: {error}")

    def reply(self, reply: JudgeReply) -> None:
        if reply.error is not None:
            self.error(reply.error)
        else:
            self.answer(reply.text)


def _turn_scores_row(
    per_turn: list[float | None], extra: dict[str, Any], unread: _Unread, usage: Any, explanation: str, expected: str
) -> Score:
    """The row's score from per-turn scores (the mean of those that could be judged; a judge failure when none)."""
    extra["per_turn"] = per_turn
    if unread.shown:
        extra["unparsed"] = unread.shown
    known = [v for v in per_turn if v is not None]
    if not known:
        return judge_failure(extra, usage, answers=unread.answers, errors=unread.errors, expected=expected)
    return Score(sum(known) / len(known), explanation=explanation, extra=extra, usage=usage)
