"""The pointwise judged metric: a judge model rates each row of an evaluation by a rubric.

:class:`PointwiseMetric` renders the row into its prompt template, asks its judge (``num_samples``
times), reads each answer's rating and combines them by majority or mean into
``<metric>/score``, ``<metric>/explanation`` and the judge's cost columns. An answer that gives
no valid rating is NaN and counts as a judge failure (``<metric>/failed``), never a 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MetricError
from .base import NAN, Metric, Score, ScoringContext
from .judge_answers import _aggregate, _answer_format, _cost_columns, _is_number, _schema, parse_rating
from .judge_client import JudgeCache, JudgeReply
from .judge_prompts import _OPTIONAL_FIELDS, PointwiseMetricPromptTemplate, _FreeformTemplate, _row_value
from .judged_base import _Judging

__all__ = ["PointwiseMetric"]


class PointwiseMetric(_Judging, Metric):
    """A judge model rates each row by a rubric: ``<metric>/score`` and ``<metric>/explanation``.

    ``metric_prompt_template``: a :class:`PointwiseMetricPromptTemplate`, or your own prompt string
    with ``{prompt}``, ``{response}``, ``{predicted_trajectory}``... placeholders (the judge is
    then asked for a number). Rubric ratings that are numbers are the scores; for word ratings
    give ``rubric_scores={"pass": 1, "fail": 0}``.
    ``num_samples=n`` asks the judge n times: the score is the majority rating (binary rubrics)
    or the mean (``aggregation="auto"``, or force ``"majority"`` / ``"mean"``), and
    ``<metric>/agreement`` is the share of samples that gave the most common rating.
    The other keywords configure the judge (see :class:`Judge`) and the cache (True, False, a
    directory, or a :class:`JudgeCache`).
    """

    is_async = True  # judge calls are awaited, concurrently across rows

    def __init__(
        self,
        metric: str,
        metric_prompt_template: PointwiseMetricPromptTemplate | str,
        judge: Any = None,
        *,
        num_samples: int = 1,
        aggregation: str = "auto",
        rubric_scores: Mapping[str, float] | None = None,
        cache: bool | str | os.PathLike[str] | JudgeCache = True,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | None = 120.0,
        structured_output: bool | None = None,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PointwiseMetric needs a metric name, got {metric!r}")
        self.name = metric
        owner = f"PointwiseMetric {metric!r}"
        if isinstance(metric_prompt_template, str):
            self.metric_prompt_template: PointwiseMetricPromptTemplate | _FreeformTemplate = _FreeformTemplate(
                metric_prompt_template, owner
            )
        elif isinstance(metric_prompt_template, PointwiseMetricPromptTemplate):
            self.metric_prompt_template = metric_prompt_template
        else:
            raise MetricError(
                f"{owner}: metric_prompt_template must be a PointwiseMetricPromptTemplate or a str, "
                f"got {type(metric_prompt_template).__name__}"
            )
        self.scores = self._rubric_scores(owner, rubric_scores)
        if aggregation not in ("auto", "majority", "mean"):
            raise MetricError(f"{owner}: aggregation must be 'auto', 'majority' or 'mean', got {aggregation!r}")
        if aggregation == "auto":
            binary = self.scores is not None and len(set(self.scores.values())) <= 2
            aggregation = "majority" if binary else "mean"
        self.aggregation = aggregation
        self.requires = tuple(v for v in self.metric_prompt_template.input_variables if v in _OPTIONAL_FIELDS)
        choices = list(self.scores) if self.scores is not None else None
        self._schema = _schema("score", choices, "A rating of the agent's work by the rubric.")
        self._answer_format = _answer_format("score", choices)
        self._setup_judging(
            judge,
            num_samples=num_samples,
            cache=cache,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )

    def _rubric_scores(self, owner: str, rubric_scores: Mapping[str, float] | None) -> dict[str, float] | None:
        rubric = self.metric_prompt_template.rating_rubric
        if rubric is None:
            return {str(k): float(v) for k, v in rubric_scores.items()} if rubric_scores else None
        if rubric_scores:
            missing = [k for k in rubric if k not in rubric_scores]
            if missing:
                raise MetricError(f"{owner}: rubric_scores gives no score for rating(s) {missing}")
            return {k: float(rubric_scores[k]) for k in rubric}
        words = [k for k in rubric if not _is_number(k)]
        if words:
            raise MetricError(
                f"{owner}: rating(s) {words} are not numbers; give rubric_scores={{rating: score, ...}} to score them"
            )
        return {k: float(k) for k in rubric}

    def render(self, ctx: ScoringContext) -> str:
        """The full prompt the judge sees for this row (template, row values and answer format)."""
        template = self.metric_prompt_template
        values = {n: _row_value(ctx, n, self.name) for n in template.input_variables}
        return f"{template.render(values)}\n\n{self._answer_format}"

    async def ascore(self, ctx: ScoringContext) -> Score:
        prompt = self.render(ctx)
        replies = await self._ask_all([prompt] * self.num_samples, self._schema)
        return self._verdict(replies)

    def score(self, ctx: ScoringContext) -> Score:
        from ..runner import run_coroutine

        return run_coroutine(self.ascore(ctx))

    def _verdict(self, replies: Sequence[JudgeReply]) -> Score:
        extra, usage = _cost_columns(replies)
        readings = [
            (reply, parse_rating(reply.text, self.scores, reply.parsed)) for reply in replies if reply.error is None
        ]
        good = [(reply, r) for reply, r in readings if r is not None]
        if self.num_samples > 1:
            extra["samples_failed"] = len(replies) - len(good)
        if not good:
            first = replies[0]
            if first.error is not None:
                extra["error"] = first.error
                explanation = f"judge error: {first.error}"
            else:
                explanation = first.text or "(empty answer)"
            return Score(NAN, explanation=explanation, extra=extra, failed=True, usage=usage)
        values = [r[0] for _, r in good]
        value, agreement = _aggregate(values, self.aggregation)
        if self.num_samples > 1:
            extra["agreement"] = agreement
        closest = min(good, key=lambda g: abs(g[1][0] - value))
        return Score(value, explanation=closest[1][1], extra=extra, usage=usage)

    def __repr__(self) -> str:
        return f"PointwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"
