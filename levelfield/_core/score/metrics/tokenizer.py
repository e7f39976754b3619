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

import re
import unicodedata
from functools import lru_cache
from typing import Any

__all__ = ["UnicodeTokenizer", "bleu_tokenize_name"]

# (first, last) code points, inclusive.
_ONE_TOKEN_PER_CHAR = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTERED = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _within(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


_SEPARATOR, _WORD, _ALONE, _CLUSTER = 0, 1, 2, 3
_MAX_CHUNKS = 100_000  # distinct pieces a tokenizer remembers; reaching it starts afresh
_ALONE_CLASS = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _ONE_TOKEN_PER_CHAR)
# A one-token character, or a run of characters that are neither that nor whitespace.
_PIECES = re.compile(f"[{_ALONE_CLASS}]|[^{_ALONE_CLASS}\\s]+")


@lru_cache(maxsize=65536)
def _kind(char: str) -> int:
    # Cached per character: a text is classified at the cost of a dict look-up per character.
    code = ord(char)
    if _within(code, _ONE_TOKEN_PER_CHAR):
        return _ALONE
    is_mark = unicodedata.category(char).startswith("M")
    if _within(code, _CLUSTERED) and not is_mark:
        return _CLUSTER  # a base letter opens a new cluster
    return _WORD if char.isalnum() or is_mark else _SEPARATOR


@lru_cache(maxsize=1)
def porter_module() -> Any:
    """nltk's ``nltk.stem.porter`` (the stemmer rouge-score uses), without running ``nltk/__init__``.

    Importing ``nltk`` imports most of it (scipy.stats among the rest): 1.5-3 s of a fresh process,
    for one small module. Unless ``nltk`` is imported already, its package and ``nltk.stem`` are
    stood in for by empty packages over the same folders while ``nltk.stem.porter`` (and the few
    modules it imports) load, under the import lock; then every ``nltk`` entry this made leaves
    ``sys.modules``, so a later ``import nltk`` is the whole, real one. The code is nltk's own."""
    import _imp
    import importlib
    import importlib.util
    import sys
    import types

    if "nltk" in sys.modules:
        return importlib.import_module("nltk.stem.porter")
    _imp.acquire_lock()
    try:
        spec = importlib.util.find_spec("nltk")
        if spec is None or not spec.submodule_search_locations:
            return importlib.import_module("nltk.stem.porter")  # raises the usual ImportError
        folders = list(spec.submodule_search_locations)
        for name, path in (("nltk", folders), ("nltk.stem", [f"{f}/stem" for f in folders])):
            shell = types.ModuleType(name)
            shell.__path__ = path
            sys.modules[name] = shell
        return importlib.import_module("nltk.stem.porter")
    finally:
        for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
            del sys.modules[name]
        _imp.release_lock()


class _Stems:
    """rouge-score's Porter stemmer, each word stemmed once: words repeat across texts far more
    than texts do, and stemming is most of the cost of tokenizing."""

    _MAX_WORDS = 100_000

    def __init__(self) -> None:
        self._stemmer = porter_module().PorterStemmer()
        self._stems: dict[str, str] = {}

    def __getstate__(self) -> dict:
        return {}  # the stemmer is rebuilt, the memo starts empty

    def __setstate__(self, state: dict) -> None:
        _Stems.__init__(self)

    def stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            if len(self._stems) >= self._MAX_WORDS:
                self._stems.clear()
            stem = self._stems[word] = self._stemmer.stem(word)
        return stem


class UnicodeTokenizer:
    """A rouge-score tokenizer (an object with ``tokenize(text) -> list[str]``) for any script."""

    def __init__(self, use_stemmer: bool = False) -> None:
        from rouge_score.tokenize import tokenize

        self.use_stemmer = use_stemmer
        # rouge-score's DefaultTokenizer(use_stemmer) is tokenize.tokenize(text, PorterStemmer()
        # or None); the same call, with a stemmer that remembers its words.
        self._stemmer = _Stems() if use_stemmer else None
        self._tokenize = tokenize
        self._chunks: dict[str, list[str]] = {}

    def _ascii(self, text: str) -> list[str]:
        return self._tokenize(text, self._stemmer)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_chunks": {}}

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, in order."""
        if text.isascii():
            # Exactly the rule below for ASCII text (NFKC changes nothing there), in one call.
            return self._ascii(text)
        # Whitespace and one-token characters (Han, kana, Hangul) close a word under the rule of
        # ``_chunk``, so the tokens of a text are those of its pieces between them, one after
        # another; pieces (words, punctuation, single characters) repeat across texts, so each
        # is tokenized once.
        tokens: list[str] = []
        chunks = self._chunks
        for chunk in _PIECES.findall(unicodedata.normalize("NFKC", text).lower()):
            got = chunks.get(chunk)
            if got is None:
                if len(chunks) >= _MAX_CHUNKS:
                    chunks.clear()
                got = chunks[chunk] = self._chunk(chunk)
            tokens += got
        return tokens

    def _chunk(self, text: str) -> list[str]:
        """The tokens of ``text``, already NFKC-normalized and lower-cased."""
        tokens: list[str] = []
        word: list[str] = []

        def close_word() -> None:
            if word:
                joined = "".join(word)
                tokens.extend(self._ascii(joined) if joined.isascii() else [joined])
                word.clear()

        for char in text:
            kind = _kind(char)
            if kind == _WORD:
                word.append(char)
            elif kind == _ALONE:
                close_word()
                tokens.append(char)
            elif kind == _CLUSTER:
                close_word()
                word.append(char)
            else:
                close_word()
        close_word()
        return tokens


_KANA = ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F))
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))


@lru_cache(maxsize=65536)
def _script(char: str) -> str:
    code = ord(char)
    if _within(code, _KANA):
        return "kana"
    if _within(code, _HAN):
        return "han"
    if _within(code, _CLUSTERED):
        return "clustered"
    if char.isalpha() and not unicodedata.name(char, "").startswith("LATIN"):
        return "other"
    return "latin"


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
    scripts = {_script(c) for c in set(joined)}
    if "kana" in scripts:
        return "char"
    if "han" in scripts:
        return "zh"
    if "clustered" in scripts:
        return "char"
    return "intl" if "other" in scripts else "13a"
