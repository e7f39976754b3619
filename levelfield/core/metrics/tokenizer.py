"""Text tokenization for the text metrics: Unicode-aware words for ROUGE, a script-chosen
sacrebleu tokenizer for BLEU.

rouge-score's default tokenizer keeps only ``[a-z0-9]``, so Chinese, Japanese, Russian or Arabic
text has no tokens at all and every score is 0. :class:`UnicodeTokenizer` applies the rule
google-adk's ``response_match_score`` uses, so our numbers equal ADK's on every script:

- the text is NFKC-normalized and lower-cased;
- each Han, Hiragana, Katakana or Hangul-syllable character is one token (these scripts are
  written without spaces and levelfield bundles no word segmenter);
- Thai, Lao, Khmer and Myanmar text is cut into clusters: a base letter with the combining
  marks that follow it;
- elsewhere a token is a run of letters, digits and combining marks; everything else separates;
- an all-ASCII token goes through rouge-score's own tokenizer (Porter stemming when asked).
"""

from __future__ import annotations

import unicodedata

__all__ = ["UnicodeTokenizer", "bleu_tokenize_name"]

# (first, last) code points, inclusive.
_ONE_TOKEN_PER_CHAR = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTERED = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _within(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


class UnicodeTokenizer:
    """A rouge-score tokenizer (an object with ``tokenize(text) -> list[str]``) for any script."""

    def __init__(self, use_stemmer: bool = False) -> None:
        from rouge_score.tokenizers import DefaultTokenizer

        self.use_stemmer = use_stemmer
        self._ascii = DefaultTokenizer(use_stemmer=use_stemmer)

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, in order."""
        tokens: list[str] = []
        word: list[str] = []

        def close_word() -> None:
            if word:
                joined = "".join(word)
                tokens.extend(self._ascii.tokenize(joined) if joined.isascii() else [joined])
                word.clear()

        for char in unicodedata.normalize("NFKC", text).lower():
            code = ord(char)
            if _within(code, _ONE_TOKEN_PER_CHAR):
                close_word()
                tokens.append(char)
            elif _within(code, _CLUSTERED) and not _is_mark(char):
                close_word()  # a base letter opens a new cluster
                word.append(char)
            elif char.isalnum() or _is_mark(char):
                word.append(char)
            else:
                close_word()
        close_word()
        return tokens


def _has(text: str, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(_within(ord(c), ranges) for c in text)


_KANA = ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))


def bleu_tokenize_name(*texts: str) -> str:
    """The sacrebleu tokenizer for these texts, chosen by script.

    Japanese (any kana) -> ``char``, since ``ja-mecab`` needs MeCab; Chinese (Han without kana)
    -> ``zh``; Thai, Lao, Khmer, Myanmar (no spaces between words) -> ``char``; other non-Latin
    letters (Cyrillic, Greek, Arabic, Hebrew, Hangul, Devanagari...) -> ``intl``; Latin script,
    accented or not -> ``13a``, sacrebleu's and Vertex AI's default.
    """
    joined = "".join(texts)
    if joined.isascii():
        return "13a"
    if _has(joined, _KANA):
        return "char"
    if _has(joined, _HAN):
        return "zh"
    if _has(joined, _CLUSTERED):
        return "char"
    if any(c.isalpha() and not unicodedata.name(c, "").startswith("LATIN") for c in joined):
        return "intl"
    return "13a"
