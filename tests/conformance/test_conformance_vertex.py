"""The Vertex AI metric names, checked against hand-worked cases from Vertex's documented
definitions, including the repeated-call cases a greedy or set-based matcher gets wrong; and the
text metrics on non-Latin text (identical = 1, partial overlap = partial credit, always in [0, 1])."""

from __future__ import annotations

import pytest

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext
from levelfield._core.score.metrics.tokenizer import bleu_tokenize_name

A = lf.ToolCall(tool_name="get_weather", tool_input={"city": "Paris"})
A_FAILED = lf.ToolCall(tool_name="get_weather", tool_input={"city": "Paris"}, error="timeout")
B = lf.ToolCall(tool_name="book", tool_input={"city": "Paris", "nights": 2})
C = lf.ToolCall(tool_name="pay", tool_input={})
NAMES = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
         "trajectory_precision", "trajectory_recall"]

# (case, predicted, reference, exact, in_order, any_order, precision, recall), worked by hand.
TABLE = [
    ("identical", [A, B], [A, B], 1, 1, 1, 1, 1),
    ("reordered", [B, A], [A, B], 0, 0, 1, 1, 1),
    ("extra call", [A, C, B], [A, B], 0, 1, 1, 2 / 3, 1),
    ("missing call", [A], [A, B], 0, 0, 0, 1, 1 / 2),
    ("wrong args", [lf.ToolCall(tool_name="get_weather", tool_input={"city": "Rome"}), B], [A, B], 0, 0, 0, 1 / 2, 1 / 2),
    # One tool called twice and expected twice: each expected call is matched once.
    ("called twice, expected twice", [A, A], [A, A], 1, 1, 1, 1, 1),
    ("called once, expected twice", [A], [A, A], 0, 0, 0, 1, 1 / 2),
    ("called twice, expected once", [A, A], [A], 0, 1, 1, 1 / 2, 1),
    # A retried call: the failed attempt is an extra call, the retry matches.
    ("retried call", [A_FAILED, A, B], [A, B], 0, 1, 1, 2 / 3, 1),
    # A superset holding duplicates of the expected calls.
    ("superset with duplicates", [A, B, A, C], [A, A], 0, 1, 1, 1 / 2, 1),
    ("both empty", [], [], 1, 1, 1, 1, 1),
    ("nothing expected, a call made", [C], [], 0, 1, 1, 0, 1),
    ("a call expected, none made", [], [A], 0, 0, 0, 0, 0),
]


@pytest.mark.parametrize("row", TABLE, ids=[row[0] for row in TABLE])
def test_trajectory_metric_gives_the_hand_worked_value(row):
    case, predicted, reference, *expected = row
    ctx = ScoringContext(case_id=case, prompt="p", response="", predicted_trajectory=predicted,
                         reference_trajectory=reference)
    got = [metric.score(ctx).value for metric in lf.metrics.resolve_metrics(NAMES)]  # each explains itself too
    assert got == pytest.approx(list(expected))


def test_single_tool_use_needs_no_reference():
    ctx = ScoringContext(case_id="c", prompt="p", response="", predicted_trajectory=[A, B])
    assert lf.metrics.TrajectorySingleToolUse("book").score(ctx) == 1.0
    assert lf.metrics.TrajectorySingleToolUse("pay").score(ctx) == 0.0


TEXT = ["The heating is now at 23 degrees.", "今天北京的天气很好。", "東京の天気は晴れです。", "서울의 날씨는 맑습니다.",
        "Погода в Москве хорошая.", "الطقس في القاهرة مشمس.", "อากาศในกรุงเทพร้อนมาก", "Die Heizung läuft auf 23 Grad.",
        "O ar-condicionado está ligado."]
TEXT_METRICS = ["exact_match", "bleu", "rouge_1", "rouge_2", "rouge_l", "rouge_l_sum", "response_match_score"]


def _scores(reference: str, response: str) -> list[float]:
    ctx = ScoringContext(case_id="c", prompt="p", response=response, predicted_trajectory=[], reference=reference)
    return [m.score(ctx) for m in lf.metrics.resolve_metrics(TEXT_METRICS)]


@pytest.mark.parametrize("text", TEXT)
def test_identical_text_scores_exactly_1_on_every_text_metric(text):
    assert _scores(text, text) == [1.0] * len(TEXT_METRICS)


@pytest.mark.parametrize(("reference", "response"), [
    ("今天北京的天气很好", "今天上海的天气不好"),
    ("東京の天気は晴れです", "大阪の天気は雨です"),
    ("Погода в Москве хорошая", "Погода в Париже хорошая"),
    ("الطقس في القاهرة مشمس", "الطقس في بيروت مشمس"),
])
def test_partial_overlap_in_non_latin_text_gets_partial_credit(reference, response):
    exact, *others = _scores(reference, response)
    assert exact == 0.0
    assert all(0.0 < s < 1.0 for s in others), others


@pytest.mark.parametrize(("texts", "tokenizer"), [
    (("The heating is on.",), "13a"),
    (("Die Heizung läuft.", "São Paulo"), "13a"),
    (("今天北京的天气很好",), "zh"),
    (("東京の天気は晴れです",), "char"),
    (("อากาศร้อนมาก",), "char"),
    (("Погода хорошая",), "intl"),
    (("서울의 날씨는 맑습니다",), "intl"),
])
def test_bleu_picks_sacrebleus_tokenizer_by_script(texts, tokenizer):
    assert bleu_tokenize_name(*texts) == tokenizer


def test_bleu_of_identical_latin_text_is_not_above_1():
    # sacrebleu's own value is 1.0000000000000004 here.
    text = "The Living Room temperature is now set to your preferred 23 degrees."
    assert _scores(text, text)[1] == 1.0


def test_vertex_names_score_the_last_turn_of_a_multi_turn_case():
    rows = [{"case_id": "c", "turns": [
        {"prompt": "a", "reference": "erste Antwort", "response": "ganz anders"},
        {"prompt": "b", "reference": "zweite Antwort", "response": "zweite Antwort"},
    ]}]
    table = lf.evaluate(rows, metrics=["rouge_l", "exact_match"], progress=False).metrics_table
    assert table[["rouge_l/score", "exact_match/score"]].values.tolist() == [[1.0, 1.0]]
