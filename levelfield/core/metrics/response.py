"""Response metrics: the agent's final text against the reference text (sacrebleu, rouge-score)."""

from __future__ import annotations

from .base import Metric, Score, ScoringContext

__all__ = ["ExactMatch", "Bleu", "Rouge", "ResponseMatchScore"]


class ExactMatch(Metric):
    """1 if the response equals the reference (surrounding whitespace ignored), else 0."""

    requires = ("reference", "response")

    def __init__(self, *, name: str = "exact_match") -> None:
        self.name = name

    def score(self, ctx: ScoringContext) -> float:
        return float(ctx.response.strip() == ctx.reference.strip())


class Bleu(Metric):
    """Sentence BLEU of the response against the reference, from sacrebleu, scaled to [0, 1].

    ``use_effective_order`` defaults to True, as sacrebleu's ``sentence_bleu`` does: without it
    any answer shorter than four words scores 0.
    """

    requires = ("reference", "response")

    def __init__(self, *, use_effective_order: bool = True, name: str = "bleu") -> None:
        from sacrebleu.metrics import BLEU

        self.name = name
        self._bleu = BLEU(effective_order=use_effective_order)

    def score(self, ctx: ScoringContext) -> float:
        # The base class's sentence_score: BLEU's own logs a warning on every call when
        # effective order is off, which the user chose knowingly.
        return super(type(self._bleu), self._bleu).sentence_score(ctx.response, [ctx.reference]).score / 100.0


class Rouge(Metric):
    """ROUGE F-measure of the response against the reference, from rouge-score.

    ``rouge_type`` is one of rouge-score's types: ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum``.
    """

    requires = ("reference", "response")
    _names = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougeL": "rouge_l", "rougeLsum": "rouge_l_sum"}

    def __init__(
        self,
        rouge_type: str = "rougeL",
        *,
        use_stemmer: bool = False,
        split_summaries: bool = False,
        name: str | None = None,
    ) -> None:
        from rouge_score.rouge_scorer import RougeScorer

        if rouge_type not in self._names:
            from ..errors import MetricError

            raise MetricError(f"Rouge rouge_type={rouge_type!r} is not one of {', '.join(self._names)}")
        self.rouge_type = rouge_type
        self.name = name or self._names[rouge_type]
        self._scorer = RougeScorer([rouge_type], use_stemmer=use_stemmer, split_summaries=split_summaries)

    def score(self, ctx: ScoringContext) -> float:
        # rouge-score's argument order is (target, prediction).
        return self._scorer.score(ctx.reference, ctx.response)[self.rouge_type].fmeasure


class ResponseMatchScore(Rouge):
    """ADK's ``response_match_score``: ROUGE-1 F-measure with stemming, averaged over turns."""

    def __init__(self, *, name: str = "response_match_score") -> None:
        super().__init__("rouge1", use_stemmer=True, name=name)

    def computable(self, ctx: ScoringContext) -> bool:
        # A multi-turn case is scorable when any turn has a reference, even if the last one has none.
        if ctx.failure:
            return False
        if ctx.turns:
            return any(t.get("reference") is not None for t in ctx.turns)
        return ctx.reference is not None and ctx.response is not None

    def score(self, ctx: ScoringContext) -> float | Score:
        if not ctx.turns:
            return super().score(ctx)
        scores = [
            self._scorer.score(t["reference"], t.get("response") or "")[self.rouge_type].fmeasure
            for t in ctx.turns
            if t.get("reference") is not None
        ]
        if not scores:
            return float("nan")
        # Per-turn scores let criteria pool turns over trials, as ADK does.
        return Score(sum(scores) / len(scores), extra={"per_turn": scores})
