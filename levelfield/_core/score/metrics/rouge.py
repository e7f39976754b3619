"""ROUGE F-measures from tokens analysed once per distinct text, equal to rouge-score's.

A comparison scores the same reference against every agent's every trial, so the reference is
tokenized (and stemmed) once, not once a row: :class:`RougeTexts` keeps each distinct text's
tokens, n-gram counts and LCS match masks. The scores are rouge-score's by construction:

- ROUGE-N: clipped n-gram overlap, precision over the response's n-grams and recall over the
  reference's (each at least 1), as ``rouge_scorer._score_ngrams``;
- ROUGE-L: the length of the longest common subsequence over each side's length, as
  ``rouge_scorer._score_lcs``. The length is found bit-parallel (Hyyro's bit-vector algorithm)
  instead of by a table: the same integer, so the same floats;
- ROUGE-Lsum: rouge-score's own ``_summary_level_lcs`` on the cached sentence tokens; when both
  sides are one sentence it equals ROUGE-L of that sentence, and is computed so.

Every F-measure is ``scoring.fmeasure``'s ``2pr / (p + r)`` (0 when p + r is 0), with the same
operations in the same order. ``tests/test_rouge_fast.py`` checks all of it against rouge-score.
"""

from __future__ import annotations

from typing import Any

from .tokenizer import UnicodeTokenizer

__all__ = ["RougeTexts", "rouge_f"]

# Distinct texts kept per metric: a bound on memory over a long pass; reaching it starts afresh.
_MAX_TEXTS = 50_000


class _Text:
    """What ROUGE needs of one text, computed when first asked."""

    __slots__ = ("tokens", "grams", "masks", "sentences")

    def __init__(self, tokens: list[str] | None) -> None:
        self.tokens = tokens
        self.grams: dict[Any, int] | None = None  # n-gram (a token, or a tuple of n) -> its count
        self.masks: dict[str, int] | None = None
        self.sentences: list[list[str]] | None = None


class RougeTexts:
    """One ROUGE type's scores of (reference, response) pairs, each distinct text analysed once.

    ``rouge_type`` is rouge-score's: ``rouge<N>``, ``rougeL`` or ``rougeLsum``.
    """

    def __init__(self, rouge_type: str, *, use_stemmer: bool = False, split_summaries: bool = False) -> None:
        self.rouge_type = rouge_type
        self.use_stemmer = use_stemmer
        self.split_summaries = split_summaries
        self.n = int(rouge_type[5:]) if rouge_type not in ("rougeL", "rougeLsum") else 0
        self._tokenizer = UnicodeTokenizer(use_stemmer=use_stemmer)
        self._texts: dict[str, _Text] = {}
        self._pairs: dict[tuple[str, str], float] = {}

    def __getstate__(self) -> dict[str, Any]:
        # Worker processes get the settings, not the parent's cache.
        return {"rouge_type": self.rouge_type, "use_stemmer": self.use_stemmer, "split_summaries": self.split_summaries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        RougeTexts.__init__(self, state["rouge_type"], use_stemmer=state["use_stemmer"], split_summaries=state["split_summaries"])

    def _text(self, text: str) -> _Text:
        entry = self._texts.get(text)
        if entry is None:
            if len(self._texts) >= _MAX_TEXTS:
                self._texts.clear()
            whole = self.rouge_type != "rougeLsum"  # Lsum tokenizes sentence by sentence, as rouge-score does
            entry = self._texts[text] = _Text(self._tokenizer.tokenize(text) if whole else None)
        return entry

    def fmeasure(self, reference: str, response: str) -> float:
        """The F-measure of ``response`` against ``reference``, as ``RougeScorer.score(reference, response)`` gives it."""
        pair = (reference, response)
        known = self._pairs.get(pair)  # the same answer to the same reference (agents, trials that agree): once
        if known is not None:
            return known
        target, prediction = self._text(reference), self._text(response)
        if self.n:
            value = self._ngrams(target, prediction)
        elif self.rouge_type == "rougeL":
            value = self._lcs(target, prediction)
        else:
            value = self._lsum(target, self._sentences(target, reference), self._sentences(prediction, response))
        if len(self._pairs) >= _MAX_TEXTS:
            self._pairs.clear()
        self._pairs[pair] = value
        return value

    def _counts(self, entry: _Text) -> dict:
        grams = entry.grams
        if grams is None:
            tokens, n = entry.tokens, self.n
            assert tokens is not None, "n-grams are counted of whole texts, which keep their tokens"
            grams = {}
            keys = tokens if n == 1 else [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
            for key in keys:
                grams[key] = grams.get(key, 0) + 1
            entry.grams = grams
        return grams

    def _ngrams(self, target: _Text, prediction: _Text) -> float:
        t, p = self._counts(target), self._counts(prediction)
        small, large = (t, p) if len(t) <= len(p) else (p, t)
        get = large.get
        overlap = 0
        for gram, count in small.items():
            other = get(gram)
            if other is not None:
                overlap += count if count < other else other
        return rouge_f(overlap, max(sum(p.values()), 1), max(sum(t.values()), 1))

    def _lcs(self, target: _Text, prediction: _Text) -> float:
        ref, can = target.tokens, prediction.tokens
        if not ref or not can:
            return 0.0
        return rouge_f(_lcs_length(target, ref, can), len(can), len(ref))

    def _sentences(self, entry: _Text, text: str) -> list[list[str]]:
        if entry.sentences is None:
            if self.split_summaries:
                import nltk

                sents = nltk.sent_tokenize(text)
            else:
                sents = text.split("\n")
            entry.sentences = [self._tokenizer.tokenize(s) for s in sents if len(s)]
        return entry.sentences

    def _lsum(self, target: _Text, ref_sents: list[list[str]], can_sents: list[list[str]]) -> float:
        if len(ref_sents) == 1 and len(can_sents) == 1:
            # One sentence a side: the union LCS is one LCS, and every token of it is a hit
            # (a common subsequence holds no token more often than either side does).
            ref, can = ref_sents[0], can_sents[0]
            if not ref or not can:
                return 0.0
            return rouge_f(_lcs_length(target, ref, can), len(can), len(ref))
        from rouge_score.rouge_scorer import _summary_level_lcs

        return float(_summary_level_lcs(ref_sents, can_sents).fmeasure)


def _masks(tokens: list[str]) -> dict[str, int]:
    """Per token, the bit mask of its positions in ``tokens`` (the reference side of the LCS)."""
    masks: dict[str, int] = {}
    bit = 1
    for token in tokens:
        masks[token] = masks.get(token, 0) | bit
        bit <<= 1
    return masks


def _lcs_length(target: _Text | None, ref: list[str], can: list[str]) -> int:
    """The length of the longest common subsequence of ``ref`` and ``can`` (``target``: the cache
    entry ``ref`` belongs to, which keeps its masks; None to compute them for this call).

    Hyyro's bit-vector algorithm: bit i of ``v`` is 0 where row i of the LCS table steps up;
    ``v``'s low bits never depend on its high ones (additions carry upward only, and ``u`` is a
    subset of ``v``), so no mask is needed between steps.
    """
    masks: dict[str, int]
    if target is None:
        masks = _masks(ref)
    else:
        if target.masks is None:
            target.masks = _masks(ref)
        masks = target.masks
    m = len(ref)
    full = (1 << m) - 1
    v = full
    get = masks.get
    for token in can:
        match = get(token)
        if match is not None:
            u = v & match
            v = (v + u) | (v - u)
    return m - (v & full).bit_count()


def rouge_f(hits: int, predicted: int, target: int) -> float:
    """rouge-score's F-measure of ``hits`` matched units out of ``predicted`` and ``target`` units."""
    precision = hits / predicted
    recall = hits / target
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0
