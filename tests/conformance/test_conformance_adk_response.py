"""response_match_score equals google-adk's response evaluator on text in many scripts, on
generated edits of it, on multi-turn conversations with turns that expect no answer, and on
expected answers with thought parts."""

from __future__ import annotations

import random
import unicodedata

import pytest
from adk_oracle import adk_response_scores, invocation

from levelfield._core.score.metrics.base import ScoringContext, TurnContext
from levelfield.metrics import ResponseMatchScore

SENTENCES = [
    "The lights in the living room are now turned off.",
    "Running the dishwasher tonight; it runs for 2 hours.",
    "今天北京的天气很好，气温二十五度。",
    "東京の天気は晴れです。気温は二十度です。",
    "서울의 날씨는 맑고 기온은 25도입니다.",
    "Погода в Москве хорошая, температура двадцать градусов.",
    "الطقس في القاهرة مشمس ودرجة الحرارة ثلاثون.",
    "อากาศในกรุงเทพวันนี้ร้อนมาก",
    "दिल्ली में आज मौसम साफ़ है और तापमान तीस डिग्री है।",
    "Die Heizung im Wohnzimmer läuft jetzt auf 23 Grad.",
    "O ar-condicionado da sala está ligado em São Paulo.",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＬＥＴＴＥＲＳ and café vs cafe\u0301",
    "Mixed 中文 and English, 日本語とEnglish 😀 emoji.",
    "",
]


def _tokens(text: str, rng: random.Random) -> str:
    """An edit of ``text``: words or characters dropped, swapped, added, re-cased."""
    units = text.split() if " " in text else list(text)
    joiner = " " if " " in text else ""
    kind = rng.choice(["same", "drop", "shuffle", "add", "case", "nfd"])
    if kind == "drop" and units:
        units.pop(rng.randrange(len(units)))
    elif kind == "shuffle":
        rng.shuffle(units)
    elif kind == "add":
        units.insert(rng.randint(0, len(units)), rng.choice(["extra", "額外", "ещё", "mais"]))
    elif kind == "case":
        return joiner.join(units).upper()
    elif kind == "nfd":
        return unicodedata.normalize("NFD", joiner.join(units))
    return joiner.join(units)


PAIRS = [(s, _tokens(s, random.Random(i * 31 + j))) for i, s in enumerate(SENTENCES) for j in range(6)]


def _ours(turns) -> tuple[float, list[float]]:
    ctx = ScoringContext(
        case_id="c", prompt="p", response=turns[-1][1], predicted_trajectory=[], reference=turns[-1][0],
        turns=[TurnContext(prompt="p", reference=ref, response=resp, reference_thoughts=thoughts)
               for ref, resp, thoughts in turns],
    )
    score = ResponseMatchScore().score(ctx)
    return score.value, score.extra["per_turn"]


def _adk(turns) -> tuple[float, list[float]]:
    actual = [invocation("p", resp, None, expected=False) for _, resp, _ in turns]
    expected = [invocation("p", ref, None, expected=True, thoughts=thoughts) for ref, _, thoughts in turns]
    return adk_response_scores(actual, expected)


@pytest.mark.parametrize(("reference", "response"), PAIRS)
def test_generated_pair_scores_as_adks_response_evaluator(reference, response):
    ours, _ = _ours([(reference, response, None)])
    adk, _ = _adk([(reference, response, None)])
    assert ours == pytest.approx(adk, abs=1e-12)


@pytest.mark.parametrize("text", [s for s in SENTENCES if s])
def test_identical_text_in_any_script_scores_1(text):
    assert _ours([(text, text, None)])[0] == 1.0


def test_partial_overlap_in_chinese_gets_partial_credit():
    ours, _ = _ours([("今天北京的天气很好", "今天上海的天气不好", None)])
    assert 0.0 < ours < 1.0
    assert ours == pytest.approx(_adk([("今天北京的天气很好", "今天上海的天气不好", None)])[0])


def test_a_conversation_with_a_turn_that_expects_no_answer_scores_as_adk():
    turns = [("The lights are on.", "The lights are on.", None), (None, "Anything else?", None)]
    ours = _ours(turns)
    assert ours == _adk(turns)
    assert ours[0] == 0.5


def test_thought_parts_of_the_expected_answer_count_as_adk_counts_them():
    turns = [("The heating is at 23 degrees.", "The heating is at 23 degrees.", "I should check the thermostat.")]
    ours = _ours(turns)
    assert ours[0] == pytest.approx(_adk(turns)[0])
    assert ours[0] < 1.0


def test_many_turn_conversations_score_as_adk():
    rng = random.Random(7)
    for _ in range(60):
        turns = []
        for _ in range(rng.randint(1, 4)):
            ref, resp = rng.choice(PAIRS)
            turns.append((None if rng.random() < 0.2 else ref, resp, None))
        if all(ref is None for ref, _, _ in turns):
            continue
        ours, ours_per_turn = _ours(turns)
        adk, adk_per_turn = _adk(turns)
        assert ours_per_turn == pytest.approx(adk_per_turn, abs=1e-12)
        assert ours == pytest.approx(adk, abs=1e-12)
