"""The text metrics' cached fast path gives the libraries' own numbers (rouge-score, sacrebleu).

Random multilingual texts (English, Portuguese, German, Chinese, Japanese; short and long, one
line and several; empty and identical pairs), each reference scored against many responses so
that the per-text caches are hit, compared to ``RougeScorer(...).score`` and
``sacrebleu.sentence_bleu`` called here, to 1e-9.
"""

from __future__ import annotations

import pickle
import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer
from rouge_score.tokenizers import DefaultTokenizer

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext
from levelfield._core.score.metrics.tokenizer import UnicodeTokenizer, bleu_tokenize_name

TOLERANCE = 1e-9

WORDS = {
    "en": "the running runs runner cats cat's houses housing lights turned turning off on is are "
          "temperature degrees 23 set preferred living room flights departed generously".split(),
    "pt": "a reserva para quatro pessoas foi confirmada sexta-feira às oito horas pedido "
          "número enviado chegará três dias úteis ação coração".split(),
    "de": "die heizung im wohnzimmer läuft jetzt auf dreiundzwanzig grad ihre bestellung "
          "wurde storniert und der betrag wird erstattet straße größe".split(),
    "zh": list("今天北京的天气很好气温二十五度适合出门散步您订单已经发货预计三内送达"),
    "ja": list("東京の天気は晴れです気温二十度で風弱いご予約金曜日午後七時に確定しましたカタカナ"),
}
PUNCT = [", ", ". ", "! ", "? ", " - ", "\n", "。", "、", " (x) "]


def _text(rnd: random.Random, lang: str, length: int) -> str:
    words = WORDS[lang]
    spaced = lang not in ("zh", "ja")
    out: list[str] = []
    for _ in range(length):
        out.append(rnd.choice(words))
        if rnd.random() < 0.12:
            out.append(rnd.choice(PUNCT))
        elif spaced:
            out.append(" ")
    if rnd.random() < 0.2:  # a mixed-script answer
        out.append(" " + rnd.choice(WORDS[rnd.choice(list(WORDS))]))
    return "".join(out)


def _edit(rnd: random.Random, text: str) -> str:
    units = list(text) if rnd.random() < 0.5 else text.split(" ")
    for _ in range(rnd.randrange(4)):
        if units and rnd.random() < 0.5:
            units.pop(rnd.randrange(len(units)))
        else:
            units.insert(rnd.randrange(len(units) + 1), rnd.choice(units) if units else "x")
    return ("" if len(units) == len(text) else " ").join(units)


def _pairs(seed: int) -> list[tuple[str, str]]:
    """(reference, response) pairs: each reference against 8 responses (edits, identical, empty, other texts)."""
    rnd = random.Random(seed)
    pairs = [("", ""), ("", "anything"), ("anything", ""), ("...", "!!"), ("今天", "今天"), ("Running", "runs")]
    for _ in range(40):
        lang = rnd.choice(list(WORDS))
        length = rnd.choice([1, 3, 8, 20, 70, 110])  # past 64 tokens the LCS bit vectors span several words
        reference = _text(rnd, lang, length)
        responses = [reference, "", _text(rnd, lang, rnd.randrange(1, 30)), _text(rnd, rnd.choice(list(WORDS)), 10)]
        responses += [_edit(rnd, reference) for _ in range(4)]
        pairs += [(reference, r) for r in responses]
    return pairs


PAIRS = _pairs(46)


def _ctx(reference: str, response: str) -> ScoringContext:
    return ScoringContext(case_id="c", prompt="p", response=response, predicted_trajectory=[], reference=reference)


@pytest.mark.parametrize("use_stemmer", [False, True])
@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_rouge_equals_rouge_score_on_multilingual_text(rouge_type, use_stemmer):
    metric = lf.metrics.Rouge(rouge_type, use_stemmer=use_stemmer)
    oracle = rouge_scorer.RougeScorer([rouge_type], tokenizer=UnicodeTokenizer(use_stemmer=use_stemmer))
    for reference, response in PAIRS:
        expected = oracle.score(reference, response)[rouge_type].fmeasure
        got = metric.score(_ctx(reference, response))
        assert abs(got - expected) <= TOLERANCE, (rouge_type, use_stemmer, reference, response, got, expected)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_rouge_equals_rouge_score_on_ascii_with_its_default_tokenizer(rouge_type):
    # On ASCII text our tokens are rouge-score's own, stemmer and all.
    for use_stemmer in (False, True):
        metric = lf.metrics.Rouge(rouge_type, use_stemmer=use_stemmer)
        oracle = rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer)
        for reference, response in PAIRS:
            if reference.isascii() and response.isascii():
                expected = oracle.score(reference, response)[rouge_type].fmeasure
                assert abs(metric.score(_ctx(reference, response)) - expected) <= TOLERANCE


def test_identical_texts_score_one_in_every_script():
    for rouge_type in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        metric = lf.metrics.Rouge(rouge_type)
        for text in ("今天北京的天气很好", "東京の天気は晴れです", "Die Größe der Straße", "a reserva foi confirmada"):
            assert metric.score(_ctx(text, text)) == 1.0


def test_unicode_tokenizer_is_adks_and_stems_as_rouge_score():
    adk = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
    for use_stemmer in (False, True):
        ours, theirs = UnicodeTokenizer(use_stemmer), adk._UnicodeAwareTokenizer(use_stemmer)
        default = DefaultTokenizer(use_stemmer)
        for reference, response in PAIRS:
            for text in (reference, response):
                assert ours.tokenize(text) == theirs.tokenize(text)
                if text.isascii():
                    assert ours.tokenize(text) == default.tokenize(text)


def test_response_match_score_equals_adks_evaluator():
    adk = pytest.importorskip("google.adk.evaluation.final_response_match_v1")
    metric = lf.metrics.ResponseMatchScore()
    for reference, response in PAIRS:
        expected = adk._calculate_rouge_1_scores(response, reference).fmeasure
        assert abs(metric.score(_ctx(reference, response)) - expected) <= TOLERANCE


@pytest.mark.parametrize("use_effective_order", [True, False])
def test_bleu_equals_sacrebleu_sentence_bleu_on_multilingual_text(use_effective_order):
    metric = lf.metrics.Bleu(use_effective_order=use_effective_order)
    for reference, response in PAIRS:
        tokenize = bleu_tokenize_name(reference, response)
        expected = sacrebleu.sentence_bleu(response, [reference], tokenize=tokenize,
                                           use_effective_order=use_effective_order).score / 100
        expected = min(1.0, max(0.0, expected))
        got = metric.score(_ctx(reference, response))
        assert abs(got - expected) <= TOLERANCE, (reference, response, got, expected)


def test_bleu_with_a_fixed_tokenizer_equals_sacrebleu():
    metric = lf.metrics.Bleu(tokenize="char")
    for reference, response in PAIRS[:120]:
        expected = min(1.0, sacrebleu.sentence_bleu(response, [reference], tokenize="char").score / 100)
        assert abs(metric.score(_ctx(reference, response)) - expected) <= TOLERANCE


def test_metrics_pickled_after_use_score_the_same_with_an_empty_cache():
    # Worker processes get a pickled metric: its caches do not travel, its settings do.
    metrics = [lf.metrics.Rouge("rougeL"), lf.metrics.ResponseMatchScore(), lf.metrics.Bleu()]
    before = [[m.score(_ctx(r, p)) for r, p in PAIRS[:80]] for m in metrics]
    copies = pickle.loads(pickle.dumps(metrics))
    assert copies[1]._texts._texts == {} and copies[1]._texts._tokenizer._stemmer._stems == {}
    assert [[m.score(_ctx(r, p)) for r, p in PAIRS[:80]] for m in copies] == before


def test_batch_scorer_gives_the_row_by_row_numbers():
    rows = [{"case_id": f"c{i}", "prompt": "p", "reference": r, "response": p} for i, (r, p) in enumerate(PAIRS)]
    names = ["rouge_1", "rouge_2", "rouge_l", "rouge_l_sum", "bleu", "exact_match", "response_match_score"]
    table = lf.evaluate(rows, metrics=names, progress=False).metrics_table
    oracles = {"rouge_1": ("rouge1", False), "rouge_2": ("rouge2", False), "rouge_l": ("rougeL", False),
               "rouge_l_sum": ("rougeLsum", False), "response_match_score": ("rouge1", True)}
    for name, (rouge_type, stem) in oracles.items():
        oracle = rouge_scorer.RougeScorer([rouge_type], tokenizer=UnicodeTokenizer(use_stemmer=stem))
        expected = [oracle.score(r, p)[rouge_type].fmeasure for r, p in PAIRS]
        assert table[f"{name}/score"].tolist() == pytest.approx(expected, abs=TOLERANCE), name
    bleu = [min(1.0, sacrebleu.sentence_bleu(p, [r], tokenize=bleu_tokenize_name(r, p)).score / 100) for r, p in PAIRS]
    assert table["bleu/score"].tolist() == pytest.approx(bleu, abs=TOLERANCE)
    assert table["exact_match/score"].tolist() == [float(p.strip() == r.strip()) for r, p in PAIRS]


def test_every_whitespace_character_separates_tokens():
    # The tokenizer tokenizes a text piece by piece between whitespace (``\\s``): exact only if
    # every whitespace character is a separator under its rule, and one-token characters too.
    import re
    import sys

    from levelfield._core.score.metrics.tokenizer import _ALONE, _SEPARATOR, _kind

    chars = [chr(c) for c in range(sys.maxunicode + 1)]
    spaces = [c for c in chars if re.fullmatch(r"\s", c) or c.isspace()]
    assert len(spaces) > 20
    assert [c for c in spaces if _kind(c) != _SEPARATOR] == []
    assert UnicodeTokenizer().tokenize("今天\u3000北京 x\u00a0y") == ["今", "天", "北", "京", "x", "y"]
    assert _kind("今") == _ALONE


def test_bleu_segment_statistics_are_sacrebleus_integers_with_one_reference_or_several():
    from sacrebleu.metrics import BLEU

    from levelfield._core.score.metrics.response import segment_statistics

    for tokenize in ("13a", "zh", "char", "intl"):
        bleu = BLEU(effective_order=True, tokenize=tokenize)
        for k, (reference, response) in enumerate(PAIRS):
            others = [bleu._preprocess_segment(r) for r, _ in PAIRS[k + 1:k + 3]]
            hypothesis = bleu._preprocess_segment(response)
            for refs in ([bleu._preprocess_segment(reference)], [bleu._preprocess_segment(reference), *others]):
                info = bleu._extract_reference_info(refs)
                assert segment_statistics(bleu, hypothesis, info) == bleu._compute_segment_statistics(hypothesis, info)


def test_a_pair_met_again_is_scored_once_with_the_libraries_numbers(monkeypatch):
    from levelfield._core.score.metrics import response as response_module

    counted = []
    real = response_module.segment_statistics
    monkeypatch.setattr(response_module, "segment_statistics", lambda *a: counted.append(1) or real(*a))
    shuffled = PAIRS * 2
    random.Random(3).shuffle(shuffled)  # agents and trials that agree, met in any order
    bleu, rouge_l = lf.metrics.Bleu(), lf.metrics.Rouge("rougeL")
    oracle = rouge_scorer.RougeScorer(["rougeL"], tokenizer=UnicodeTokenizer())
    for reference, response in shuffled:
        expected = min(1.0, sacrebleu.sentence_bleu(response, [reference],
                                                    tokenize=bleu_tokenize_name(reference, response)).score / 100)
        assert abs(bleu.score(_ctx(reference, response)) - expected) <= TOLERANCE
        expected = oracle.score(reference, response)["rougeL"].fmeasure
        assert abs(rouge_l.score(_ctx(reference, response)) - expected) <= TOLERANCE
    assert len(counted) == len(set(PAIRS))
