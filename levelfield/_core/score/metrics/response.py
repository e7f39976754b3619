"""Response metrics: the agent's final text against the reference text (sacrebleu, rouge-score).

Every text metric tokenizes Unicode-aware (see :mod:`.tokenizer`), so identical Chinese or
Arabic text scores 1.0, and every score is clipped to [0, 1] (floating-point BLEU can land a
hair above 1). The Vertex-named metrics (``exact_match``, ``bleu``, ``rouge_*``) score the
row's final answer against its reference: for a multi-turn case, the last turn; a row without
a reference or a response gives NaN. ``response_match_score`` follows ADK turn by turn.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Any, ClassVar

from .base import Metric, Score, ScoringContext
from .rouge import RougeTexts
from .tokenizer import bleu_tokenize_name

__all__ = ["ExactMatch", "Bleu", "Rouge", "ResponseMatchScore"]


_MAX_REFERENCES = 50_000  # distinct references whose n-grams a Bleu keeps; reaching it starts afresh


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _given(text: str | None) -> str:
    """A field the metric ``requires``: the scorer gives it only rows that have it."""
    assert text is not None, "a metric was given a row without a field it requires"
    return text


class ExactMatch(Metric):
    """1 if the response equals the reference (surrounding whitespace ignored), else 0."""

    requires = ("reference", "response")
    reads = ("reference", "response")

    def __init__(self, *, name: str = "exact_match") -> None:
        self.name = name

    def score(self, ctx: ScoringContext) -> float:
        return float(_given(ctx.response).strip() == _given(ctx.reference).strip())


class Bleu(Metric):
    """Sentence BLEU of the response against the reference, from sacrebleu, scaled to [0, 1].

    ``use_effective_order`` defaults to True, as sacrebleu's ``sentence_bleu`` does: without it
    any answer shorter than four words scores 0. ``tokenize="auto"`` picks sacrebleu's tokenizer
    by script (``13a`` for Latin text, ``zh`` for Chinese, ``char`` for Japanese and Thai,
    ``intl`` for other scripts; see :func:`.tokenizer.bleu_tokenize_name`); any sacrebleu
    tokenizer name fixes it.
    """

    requires = ("reference", "response")
    reads = ("reference", "response")

    def __init__(self, *, use_effective_order: bool = True, tokenize: str = "auto", name: str = "bleu") -> None:
        from sacrebleu.metrics import BLEU

        known = list(BLEU.TOKENIZERS)
        if tokenize != "auto" and tokenize not in known:
            from ...errors import MetricError

            raise MetricError(f"Bleu tokenize={tokenize!r} is not 'auto' or one of sacrebleu's: {', '.join(known)}")
        self.name = name
        self.tokenize = tokenize
        self._effective_order = use_effective_order
        self._by_tokenizer: dict[str, object] = {}
        self._references: dict[tuple[str, str], dict] = {}
        self._pairs: dict[tuple[str, str, str], float] = {}

    def __getstate__(self) -> dict:
        # Worker processes get the settings; sacrebleu objects and the reference cache are rebuilt there.
        return {**self.__dict__, "_by_tokenizer": {}, "_references": {}, "_pairs": {}}

    def _bleu(self, tokenize: str) -> Any:  # sacrebleu's BLEU
        bleu = self._by_tokenizer.get(tokenize)
        if bleu is None:
            from sacrebleu.metrics import BLEU

            bleu = self._by_tokenizer[tokenize] = BLEU(effective_order=self._effective_order, tokenize=tokenize)
        return bleu

    def score(self, ctx: ScoringContext) -> float:
        reference, response = _given(ctx.reference), _given(ctx.response)
        tokenize = bleu_tokenize_name(reference, response) if self.tokenize == "auto" else self.tokenize
        bleu = self._bleu(tokenize)
        # sacrebleu's sentence_score, through the hooks its reference caching is built on
        # (preprocess, reference info, segment statistics, score from statistics), so that a
        # reference repeated over agents and trials has its n-grams extracted once.
        # The same answer to the same reference (agents and trials that agree) is scored once.
        pair = (tokenize, reference, response)
        known = self._pairs.get(pair)
        if known is not None:
            return known
        key = (tokenize, reference)
        info = self._references.get(key)
        if info is None:
            if len(self._references) >= _MAX_REFERENCES:
                self._references.clear()
            info = self._references[key] = bleu._extract_reference_info([bleu._preprocess_segment(reference)])
        stats = segment_statistics(bleu, bleu._preprocess_segment(response), info)
        value = self._pairs[pair] = _unit(bleu._compute_score_from_stats(stats).score / 100.0)
        if len(self._pairs) >= _MAX_REFERENCES:
            self._pairs.clear()
        return value


def segment_statistics(bleu: Any, hypothesis: str, info: dict) -> list[int]:
    """sacrebleu's ``BLEU._compute_segment_statistics(hypothesis, info)``: the same integers
    (hypothesis and closest reference length, clipped matches and totals per n-gram order), with
    the hypothesis' n-grams counted a whole order at a time (``zip`` over shifted token lists,
    the same tuples sacrebleu's ``extract_all_word_ngrams`` makes, every order in one ``Counter``)
    instead of one by one."""
    ref_ngrams, ref_lens = info["ref_ngrams"], info["ref_lens"]
    tokens = hypothesis.split()
    length = len(tokens)
    order = bleu.max_ngram_order
    top = min(order, length)
    total = [length - n + 1 if n <= top else 0 for n in range(1, order + 1)]
    correct = [0] * order
    get = ref_ngrams.get
    grams = Counter(chain.from_iterable(zip(*[tokens[i:] for i in range(n)]) for n in range(1, top + 1)))
    for gram, count in grams.items():
        most = get(gram)
        if most is not None:
            correct[len(gram) - 1] += count if count < most else most
    return [length, bleu._get_closest_ref_len(length, ref_lens), *correct, *total]


class Rouge(Metric):
    """ROUGE F-measure of the response against the reference, as rouge-score computes it.

    ``rouge_type`` is one of rouge-score's types: ``rouge1``, ``rouge2``, ``rougeL``, ``rougeLsum``.
    Tokens are Unicode-aware (:class:`.tokenizer.UnicodeTokenizer`); on ASCII text they are
    rouge-score's own. Each distinct text is tokenized once (:class:`.rouge.RougeTexts`), so a
    reference shared by many agents and trials costs one tokenization.
    """

    requires = ("reference", "response")
    reads: ClassVar[tuple[str, ...] | None] = ("reference", "response")
    _names = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougeL": "rouge_l", "rougeLsum": "rouge_l_sum"}

    def __init__(
        self,
        rouge_type: str = "rougeL",
        *,
        use_stemmer: bool = False,
        split_summaries: bool = False,
        name: str | None = None,
    ) -> None:
        if rouge_type not in self._names:
            from ...errors import MetricError

            raise MetricError(f"Rouge rouge_type={rouge_type!r} is not one of {', '.join(self._names)}")
        self.rouge_type = rouge_type
        self.name = name or self._names[rouge_type]
        self._texts = RougeTexts(rouge_type, use_stemmer=use_stemmer, split_summaries=split_summaries)

    def _f(self, reference: str, response: str) -> float:
        return _unit(self._texts.fmeasure(reference, response))

    def score(self, ctx: ScoringContext) -> float | Score:
        return self._f(_given(ctx.reference), _given(ctx.response))


class ResponseMatchScore(Rouge):
    """ADK's ``response_match_score``: ROUGE-1 F-measure with stemming, averaged over turns.

    As ADK scores it: every turn counts; a turn without an expected answer is scored against
    the empty string (0), a turn without an answer likewise; thought parts of the expected
    answer count as its text. A case is computable when at least one turn has an expected answer.
    """

    reads = None  # every turn, and the expected answer's thoughts

    def __init__(self, *, name: str = "response_match_score") -> None:
        super().__init__("rouge1", use_stemmer=True, name=name)

    def computable(self, ctx: ScoringContext) -> bool:
        if ctx.failure or (not ctx.turns and ctx.response is None):  # a saved row with no answer at all
            return False
        return any(t.reference is not None for t in ctx.conversation())

    def score(self, ctx: ScoringContext) -> float | Score:
        scores = []
        for turn in ctx.conversation():
            reference = turn.reference or ""
            if turn.reference_thoughts:
                # ROUGE-1 counts unigrams, so where the thoughts stand in the text does not matter.
                reference = f"{turn.reference_thoughts}\n{reference}"
            scores.append(self._f(reference, turn.response or ""))
        if not ctx.turns:
            return scores[0]
        # Per-turn scores let criteria pool turns over trials, as ADK does.
        return Score(sum(scores) / len(scores), extra={"per_turn": scores})
