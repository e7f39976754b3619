"""LLM-judged metrics: one base that turns judge answers into a verdict, and the pointwise metric built on it.

:class:`JudgedMetric` holds what every judged metric shares: its judge and cache, asking once per
sample (each sample its own cache entry, asked concurrently within the judge's limit), and the
verdict: the samples' readings combined by majority or mean, their agreement, the explanation
closest to the verdict, and the judge's cost columns. It is written once here.

:class:`PointwiseMetric` rates each row by a rubric. :class:`~levelfield.judge.pairwise.PairwiseMetric`
(in ``pairwise``) compares two agents' work on the same case (1 = A better, 0 = B better, 0.5 = tie), in
both orders by default: a verdict that flips with the order is position bias, scored a tie and reported
(``position_bias``); it is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._core.data.types import Usage
from .._core.errors import MetricError
from .._core.score.metrics.base import NAN, Metric, Score, ScoringContext
from .answers import is_numeric_rating, parse_rating
from .cache import JudgeCache, resolve_cache
from .client import Judge, JudgeReply, resolve_judge
from .config import JudgeConfig, judge_config, refuse_judge_keywords
from .panel import PanelJudge, resolve_panel
from .probability import pass_probability
from .prompts import (
    PointwiseMetricPromptTemplate,
    answer_format,
    answer_schema,
    expected_json,
    pointwise_template,
    required_fields,
    row_value,
)

__all__ = [
    "JudgedMetric",
    "PointwiseMetric",
    "Reading",
    "aggregate",
    "cost_columns",
    "judge_failure",
    "sample_probability",
    "is_unreadable",
    "UNREADABLE_ANSWER",
]

UNREADABLE_ANSWER = "unreadable_answer"
"""The extra (``<metric>/unreadable_answer``) of a row the judge failed because no parser read its answer: the raw answer."""
_KEPT_CHARS = 2000
"""How much of an unreadable answer a row keeps (the error text shows the first 200)."""
_SHOWN_CHARS = 200


def _shown(text: str, limit: int = _SHOWN_CHARS) -> str:
    """An answer as one line of at most ``limit`` characters, quoted."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def judge_failure(
    extra: dict[str, Any], usage: Usage | None, *, answers: Sequence[str | None], errors: Sequence[str], expected: str
) -> Score:
    """A row the judge gave no verdict on: NaN, ``failed``, never a 0.

    When the judge answered (``answers``: the raw answers no parser could read), the row is a judge
    failure by an unreadable answer: ``error`` says so, names the ``expected`` format and shows the
    start of the first answer; ``<metric>/unreadable_answer`` keeps that answer (its first 2,000
    characters). Otherwise every call ended in an error (``errors``): the first is the row's error.
    """
    if answers:
        raw = answers[0] or ""
        extra[UNREADABLE_ANSWER] = raw[:_KEPT_CHARS]
        said = _shown(raw) if raw.strip() else "an empty answer"
        others = f" ({len(errors)} other call(s) ended in an error)" if errors else ""
        error = f"the judge's answer could not be read: expected {expected}; it answered {said}{others}"
        return Score(NAN, extra=extra, failed=True, usage=usage, error=error)
    if errors:
        extra["error"] = errors[0]
        return Score(NAN, explanation=f"judge error: {errors[0]}", extra=extra, failed=True, usage=usage)
    return Score(NAN, explanation="nothing was judged", extra=extra, failed=True, usage=usage)


def is_unreadable(score: Score | None) -> bool:
    """Whether a row's score is a judge failure by an answer no parser could read."""
    return score is not None and score.failed and bool(score.extra) and UNREADABLE_ANSWER in score.extra

Reading = tuple[float, str]
"""One sample's verdict as read from the judge's answer: (value, explanation)."""


class JudgedMetric:
    """What every LLM-judged metric shares: a judge, samples, the cache, and one way to reach a verdict.

    Subclasses render their prompts, read each answer into a :data:`Reading` (or None when it
    gives none) and hand the readings to :meth:`verdict`.
    """

    name: str
    judge: Judge | None
    """The judge model with its concurrency limit, retries and timeout (shared by metrics given the same model);
    None until the run's judge is given (:meth:`use_default_judge`) when the metric was built without one."""
    judge_config: JudgeConfig
    """How the judge is asked, as given (see :class:`~levelfield.JudgeConfig`)."""
    num_samples: int
    """How many times the judge is asked per row (``judge_config.samples``, else the metric's default)."""
    cache: JudgeCache | None
    """Where answers are kept between runs (None: no cache)."""
    aggregation: str = "majority"
    """How samples combine: ``"majority"`` (a tie between verdicts gives their mean) or ``"mean"``."""
    expected_answer: str = "an answer in the format the prompt asks for"
    """The answer format the metric reads, as said in errors and warnings (with a literal example)."""
    panel: tuple[PanelJudge, ...] = ()
    """The judges of a panel (``judges=[...]``), each asked ``num_samples`` times; empty for one judge.
    With a panel, ``judge`` is its first judge (see :mod:`levelfield.judge.panel`)."""

    def _setup_judging(
        self,
        judge: Any,
        config: JudgeConfig | None,
        *,
        samples: int = 1,
        structured_output: bool | None = None,
        judges: Any = None,
    ) -> None:
        """The metric's judge (or panel), samples and cache from ``config``; ``samples`` and
        ``structured_output`` are the metric's own defaults, used where ``config`` leaves them None."""
        config = judge_config(config)
        self.judge_config = config
        self._judge_settings = config.judge_settings(structured_output)
        if judges is not None:
            self.panel = resolve_panel(judges, metric=self.name, judge=judge, **self._judge_settings)
            judge = self.panel[0].judge
        # Without a judge of its own, the metric takes the run's (evaluate/compare/check_eval judge=...).
        self.judge = None if judge is None else resolve_judge(judge, metric=self.name, **self._judge_settings)
        self.num_samples = config.samples if config.samples is not None else samples
        self.cache = resolve_cache(config.cache)

    def use_default_judge(self, judge: Any) -> None:
        """Judge with ``judge`` unless the metric was given its own; with neither, an error saying how to give one."""
        if self.judge is None:
            self.judge = resolve_judge(judge, metric=self.name, **self._judge_settings)

    def evaluator_details(self) -> dict[str, Any]:
        """The judge, prompt and rubric set behind this metric's scores, for its provenance (see ``levelfield.judge.provenance``)."""
        from .provenance import judged_details

        return judged_details(self)

    async def ask(
        self,
        prompts: Sequence[str],
        schema: dict[str, Any],
        read: Callable[[JudgeReply], Reading | bool | None],
        judge: Judge | None = None,
    ) -> list[JudgeReply]:
        """One reply per prompt (one prompt per sample); ``read(reply)`` decides which answers are worth caching.

        ``judge``: a judge of the metric's panel (default: the metric's judge)."""
        if self.judge is None:
            self.use_default_judge(None)  # raises: says how to give a judge
        asked = judge or self.judge
        assert asked is not None  # use_default_judge gave one, or raised
        # Each sample is its own cache entry, so a re-run replays all n answers.
        return list(
            await asyncio.gather(
                *(
                    asked.ask(
                        p,
                        schema,
                        cache=self.cache,
                        settings={"sample": i, "of": self.num_samples},
                        usable=lambda reply: read(reply) is not None,
                    )
                    for i, p in enumerate(prompts)
                )
            )
        )

    def verdict(self, replies: Sequence[JudgeReply], readings: Sequence[Reading | None]) -> Score:
        """The row's :class:`Score` from every sample: value, explanation, agreement and cost columns.

        ``readings[i]`` is what sample ``i``'s answer says (None: an error or no verdict in it).
        No reading at all is NaN and a judge failure (``failed``), never a 0: by an unreadable
        answer when the judge answered (see :func:`judge_failure`), else by the judge's error.
        """
        extra, usage = cost_columns(replies)
        good = [r for reply, r in zip(replies, readings) if reply.error is None and r is not None]
        if self.num_samples > 1:
            extra["samples_failed"] = len(replies) - len(good)
        if not good:
            return judge_failure(
                extra,
                usage,
                answers=[reply.text for reply in replies if reply.error is None],
                errors=[reply.error for reply in replies if reply.error is not None],
                expected=self.expected_answer,
            )
        value, agreement = aggregate([v for v, _ in good], self.aggregation)
        if self.num_samples > 1:
            extra["agreement"] = agreement
            extra["sample_values"] = [v for v, _ in good]  # the judge's own noise (lf.Comparison.noise)
        explanation = min(good, key=lambda g: abs(g[0] - value))[1]
        return Score(value, explanation=explanation, extra=extra, usage=usage)


def sample_probability(
    replies: Sequence[JudgeReply], readings: Sequence[Reading | None], scores: Mapping[str, float]
) -> dict[str, Any]:
    """A binary row's ``p`` (the judge's probability of a pass: the mean over the samples that gave
    one, NaN when none did; see :mod:`levelfield.judge.probability`) and ``p_error`` when an
    answer stated a probability that is not one (the verdict stands; that sample's p is left out)."""
    found: list[float] = []
    problems: list[str] = []
    for reply, reading in zip(replies, readings):
        if reply.error is not None or reading is None:
            continue
        p, problem = pass_probability(reply.text, reply.parsed, reply.logprobs, scores, reading[0])
        if problem is not None:
            problems.append(problem)
        elif not math.isnan(p):
            found.append(p)
    out: dict[str, Any] = {"p": sum(found) / len(found) if found else NAN}
    if problems:
        out["p_error"] = problems[0]
    return out


def aggregate(values: Sequence[float], how: str) -> tuple[float, float]:
    """(score, agreement) of several samples: majority (a tie between verdicts gives their mean) or mean; agreement = share of the modal answer."""
    counts = Counter(values)
    top = max(counts.values())
    agreement = top / len(values)
    if how == "mean":
        return sum(values) / len(values), agreement
    modal = [v for v in counts if counts[v] == top]
    return sum(modal) / len(modal), agreement


def cost_columns(replies: Sequence[JudgeReply]) -> tuple[dict[str, Any], Usage | None]:
    """The judge's cost of one row: ``judge_latency``, ``judge_calls`` and tokens columns, and the summed usage."""
    usage: Usage | None = None
    for reply in replies:
        # A cache hit cost nothing; a call whose model reports no usage adds nothing known.
        spent = Usage() if reply.cached else reply.usage
        if spent is not None:
            usage = spent if usage is None else usage + spent
    extra: dict[str, Any] = {
        "judge_latency": sum(r.latency for r in replies),
        "judge_calls": sum(r.calls for r in replies),
    }
    if usage is not None:
        extra["input_tokens"] = usage.input_tokens
        extra["output_tokens"] = usage.output_tokens
    return extra, usage


class PointwiseMetric(JudgedMetric, Metric):
    """A judge model rates each row by a rubric: ``<metric>/score`` and ``<metric>/explanation``.

    ``metric_prompt_template``: a :class:`PointwiseMetricPromptTemplate`, or your own prompt string
    with ``{prompt}``, ``{response}``, ``{predicted_trajectory}``... placeholders (the judge is
    then asked for a number). Rubric ratings that are numbers are the scores; for word ratings
    give ``rubric_scores={"pass": 1, "fail": 0}``.
    ``judge_config=lf.JudgeConfig(samples=n)`` asks the judge n times: the score is the majority rating (binary rubrics)
    or the mean (``aggregation="auto"``, or force ``"majority"`` / ``"mean"``), and
    ``<metric>/agreement`` is the share of samples that gave the most common rating.
    A two-rating rubric (pass/fail) also keeps ``<metric>/p``: the judge's probability of a pass, from
    a probability stated in its answer or the log-probabilities of its verdict token (NaN when it
    gives neither; see :mod:`levelfield.judge.probability`).
    ``judges=[a, b, c]`` (or ``{name: judge}``) instead of ``judge=`` asks a panel: every judge
    ``samples`` times, each answer a vote, the score the votes' majority; each judge's votes
    are kept per row (see :mod:`levelfield.judge.panel`, and ``lf.panel_report`` for what the
    panel is worth).
    ``judge_config`` (an :class:`~levelfield.JudgeConfig`) says how the judge is asked: samples, the
    cache, concurrency, retries, backoff, timeout and structured output; those given as keywords
    (``num_samples=3``) are refused with the field to use.
    """

    is_async = True  # judge calls are awaited, concurrently across rows

    def __init__(
        self,
        metric: str,
        metric_prompt_template: PointwiseMetricPromptTemplate | str,
        judge: Any = None,
        *,
        judge_config: JudgeConfig | None = None,
        aggregation: str = "auto",
        rubric_scores: Mapping[str, float] | None = None,
        judges: Any = None,
        **moved: Any,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PointwiseMetric needs a metric name, got {metric!r}")
        refuse_judge_keywords(f"PointwiseMetric {metric!r}", moved)
        self.name = metric
        owner = f"PointwiseMetric {metric!r}"
        self.metric_prompt_template = pointwise_template(metric_prompt_template, owner)
        self.scores = self._rubric_scores(owner, rubric_scores)
        if aggregation not in ("auto", "majority", "mean"):
            raise MetricError(f"{owner}: aggregation must be 'auto', 'majority' or 'mean', got {aggregation!r}")
        if aggregation == "auto":
            binary = self.scores is not None and len(set(self.scores.values())) <= 2
            aggregation = "majority" if binary else "mean"
        self.aggregation = aggregation
        self.requires = required_fields(self.metric_prompt_template.input_variables)  # type: ignore[misc]  # per instance: its template decides
        choices = list(self.scores) if self.scores is not None else None
        self._schema = answer_schema("score", choices, "A rating of the agent's work by the rubric.")
        self._answer_format = answer_format("score", choices)
        self.expected_answer = expected_json("score", choices, example=choices[0] if choices else "4")
        self._setup_judging(judge, judge_config, judges=judges)

    def _rubric_scores(self, owner: str, rubric_scores: Mapping[str, float] | None) -> dict[str, float] | None:
        rubric = self.metric_prompt_template.rating_rubric
        if rubric is None:
            return {str(k): float(v) for k, v in rubric_scores.items()} if rubric_scores else None
        if rubric_scores:
            missing = [k for k in rubric if k not in rubric_scores]
            if missing:
                raise MetricError(f"{owner}: rubric_scores gives no score for rating(s) {missing}")
            return {k: float(rubric_scores[k]) for k in rubric}
        words = [k for k in rubric if not is_numeric_rating(k)]
        if words:
            raise MetricError(
                f"{owner}: rating(s) {words} are not numbers; give rubric_scores={{rating: score, ...}} to score them"
            )
        return {k: float(k) for k in rubric}

    def render(self, ctx: ScoringContext) -> str:
        """The full prompt the judge sees for this row (template, row values and answer format)."""
        template = self.metric_prompt_template
        values = {n: row_value(ctx, n, self.name) for n in template.input_variables}
        return f"{template.render(values)}\n\n{self._answer_format}"

    def read(self, reply: JudgeReply) -> Reading | None:
        """The rating in one judge answer, or None when it gives no valid one."""
        return parse_rating(reply.text, self.scores, reply.parsed)

    async def ascore(self, ctx: ScoringContext) -> Score:
        """Ask the judge ``num_samples`` times about this row and combine the ratings."""
        prompt = self.render(ctx)
        if self.panel:
            asked = [self.ask([prompt] * self.num_samples, self._schema, self.read, judge=p.judge) for p in self.panel]
            return panel_verdict(self, await asyncio.gather(*asked), self.read)
        replies = await self.ask([prompt] * self.num_samples, self._schema, self.read)
        readings = [self.read(r) if r.error is None else None for r in replies]
        score = self.verdict(replies, readings)
        if self.binary:
            score.extra.update(sample_probability(replies, readings, self.scores or {}))
        return score

    @property
    def binary(self) -> bool:
        """Whether the rubric has two scores (pass/fail): then each row keeps ``<metric>/p``, the judge's probability of a pass."""
        return self.scores is not None and len(set(self.scores.values())) == 2

    def score(self, ctx: ScoringContext) -> Score:
        """Sync twin of :meth:`ascore`."""
        from .._core.run.threads import run_coroutine

        return run_coroutine(self.ascore(ctx))

    def __repr__(self) -> str:
        if self.panel:
            names = [p.name for p in self.panel]
            return f"PointwiseMetric(metric={self.name!r}, judges={names!r}, num_samples={self.num_samples})"
        return f"PointwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"



def _panel_failure_text(score: Score) -> str:
    """Why a judge gave no verdict on a row, from the failed Score :func:`judge_failure` built."""
    return score.error or (score.extra or {}).get("error") or score.explanation or "no verdict"


def panel_verdict(
    metric: JudgedMetric,
    replies: Sequence[Sequence[JudgeReply]],
    read: Callable[[JudgeReply], Reading | None],
) -> Score:
    """The row's Score from every panel judge's replies (``replies[j]``: judge ``j``'s samples, in panel order)."""
    flat = [reply for per_judge in replies for reply in per_judge]
    extra, usage = cost_columns(flat)
    panel: dict[str, Any] = {}
    good_all: list[tuple[float, str]] = []
    failed: list[tuple[str, str]] = []
    for member, answers in zip(metric.panel, replies):
        readings = [read(r) if r.error is None else None for r in answers]
        good = [g for g in readings if g is not None]
        key = f"judge/{member.name}"
        panel[f"{key}/votes"] = [None if g is None else g[0] for g in readings]
        spent, _ = cost_columns(answers)
        panel[f"{key}/calls"] = spent["judge_calls"]
        if "input_tokens" in spent:
            panel[f"{key}/tokens"] = spent["input_tokens"] + spent["output_tokens"]
        if good:
            panel[f"{key}/score"] = aggregate([v for v, _ in good], metric.aggregation)[0]
            good_all.extend(good)
        else:
            why = _panel_failure_text(judge_failure(
                {}, None, answers=[r.text for r in answers if r.error is None],
                errors=[r.error for r in answers if r.error is not None], expected=metric.expected_answer))
            panel[f"{key}/score"] = NAN
            panel[f"{key}/error"] = why
            failed.append((member.name, why))
    n = len(metric.panel)
    extra["samples_failed"] = len(flat) - len(good_all)
    extra["judges_failed"] = len(failed)
    said = "; ".join(f"{name} failed: {why}" for name, why in failed)
    extra["panel"] = f"{n - len(failed)} of {n} judges voted" + (f"; {said}" if said else "")
    extra.update(panel)
    if not good_all:
        score = judge_failure(
            extra, usage,
            answers=[r.text for r in flat if r.error is None],
            errors=[r.error for r in flat if r.error is not None],
            expected=metric.expected_answer,
        )
        error = f"every judge of the panel failed: {said}"
        return Score(score.value, explanation=score.explanation, extra=score.extra, failed=True, usage=usage, error=error)
    value, agreement = aggregate([v for v, _ in good_all], metric.aggregation)
    extra["agreement"] = agreement
    extra["sample_values"] = [v for v, _ in good_all]
    explanation = min(good_all, key=lambda g: abs(g[0] - value))[1]
    if failed:
        explanation = f"[{extra['panel']}] {explanation}"
    return Score(value, explanation=explanation, extra=extra, usage=usage)
