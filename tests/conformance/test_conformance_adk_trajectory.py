"""tool_trajectory_avg_score equals google-adk's TrajectoryEvaluator, turn by turn, on generated
conversations: repeats, reorders, extras, missing calls, nested and Unicode arguments, True vs 1,
calls written without args, turns without expected calls, every match type, with and without
ignore_args."""

from __future__ import annotations

import random

import pytest
from adk_oracle import adk_trajectory_scores, invocation

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext, TurnContext
from levelfield.metrics import ToolTrajectoryAvgScore

TOOLS = ["get_weather", "set_device_info", "天气查询", "погода", "wetter_abfragen", "予約する"]
VALUES = [0, 1, 2, 1.0, 2.5, True, False, None, "", "on", "Living Room", "北京", "Zürich", "São Paulo", "東京",
          [1, 2], ["a", "b"], {"status": "ON"}, {"nested": {"deep": [1, {"x": "y"}]}}]


def _call(rng: random.Random) -> lf.ToolCall:
    name = rng.choice(TOOLS)
    if rng.random() < 0.15:
        return lf.ToolCall(tool_name=name)  # written without args
    keys = rng.sample(["city", "device_id", "updates", "unit", "ort", "日付"], rng.randint(0, 3))
    return lf.ToolCall(tool_name=name, tool_input={k: rng.choice(VALUES) for k in keys})


def _twin(call: lf.ToolCall, rng: random.Random) -> lf.ToolCall:
    """A predicted call equal to ``call`` as an agent would send it, or nearly equal."""
    args = dict(call.tool_input)
    roll = rng.random()
    if roll < 0.15 and args:
        key = rng.choice(list(args))
        value = args[key]
        # The type twins ADK's == cannot tell apart, and ones it can.
        # Keyed by type too: True, 1 and 1.0 are one dict key, so a plain dict kept only one of them.
        swaps = {(bool, True): 1, (int, 1): True, (bool, False): 0, (int, 0): False, (float, 1.0): 1,
                 (float, 2.5): "2.5", (str, "on"): "On"}
        args[key] = swaps.get((type(value), value), value) if not isinstance(value, (list, dict)) else value
    elif roll < 0.25 and args:
        args[rng.choice(list(args))] = rng.choice(VALUES)
    return lf.ToolCall(tool_name=call.tool_name, tool_input=args)


def _predicted(reference: list[lf.ToolCall], rng: random.Random) -> list[lf.ToolCall]:
    calls = [_twin(c, rng) for c in reference]
    edits = rng.randint(0, 3)
    for _ in range(edits):
        kind = rng.choice(["reorder", "extra", "drop", "repeat", "none"])
        if kind == "reorder" and len(calls) > 1:
            i, j = rng.sample(range(len(calls)), 2)
            calls[i], calls[j] = calls[j], calls[i]
        elif kind == "extra":
            calls.insert(rng.randint(0, len(calls)), _twin(_call(rng), rng))
        elif kind == "drop" and calls:
            calls.pop(rng.randrange(len(calls)))
        elif kind == "repeat" and calls:
            i = rng.randrange(len(calls))
            calls.insert(i, calls[i])
    return calls


def _conversation(rng: random.Random) -> list[tuple[list[lf.ToolCall], list[lf.ToolCall] | None]]:
    turns = []
    for _ in range(rng.randint(1, 4)):
        reference = [_call(rng) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3 and reference:
            reference.append(reference[rng.randrange(len(reference))])  # the same call twice
        expected = None if rng.random() < 0.15 else reference
        turns.append((_predicted(reference, rng), expected))
    if all(expected is None for _, expected in turns):
        turns[0] = (turns[0][0], [])
    return turns


CONVERSATIONS = [_conversation(random.Random(seed)) for seed in range(250)]


def _ours(turns, match_type: str, ignore_args: bool) -> tuple[float, list[float]]:
    ctx = ScoringContext(
        case_id="c", prompt="p", response="", predicted_trajectory=turns[-1][0],
        reference_trajectory=turns[-1][1],
        turns=[TurnContext(prompt="p", predicted_trajectory=p, reference_trajectory=r) for p, r in turns],
    )
    metric = ToolTrajectoryAvgScore(match_type, ignore_args=ignore_args)
    assert metric.computable(ctx)
    score = metric.score(ctx)
    return score.value, score.extra["per_turn"]


def _adk(turns, match_type: str, ignore_args: bool) -> tuple[float, list[float]]:
    actual = [invocation("p", "", p, expected=False) for p, _ in turns]
    expected = [invocation("p", "", r, expected=True) for _, r in turns]
    return adk_trajectory_scores(actual, expected, match_type, ignore_args)


@pytest.mark.parametrize("ignore_args", [False, True], ids=["args", "ignore_args"])
@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER", "ANY_ORDER"])
def test_every_generated_conversation_scores_as_adks_trajectory_evaluator(match_type, ignore_args):
    for number, turns in enumerate(CONVERSATIONS):
        ours, ours_per_turn = _ours(turns, match_type, ignore_args)
        adk, adk_per_turn = _adk(turns, match_type, ignore_args)
        assert ours_per_turn == adk_per_turn, f"conversation {number}: {turns}"
        assert ours == pytest.approx(adk), f"conversation {number}"


def test_generated_conversations_cover_the_hard_cases():
    """The generator really produces what the comparison claims to cover (a guard on the test itself)."""
    every_turn = [t for conv in CONVERSATIONS for t in conv]
    scores = [
        s for conv in CONVERSATIONS for s in _adk(conv, "EXACT", False)[1]
    ]
    assert 0.2 < sum(scores) / len(scores) < 0.8  # both outcomes, often
    assert any(r is None for _, r in every_turn)  # turns without expected calls
    assert any(r and len({(c.tool_name, repr(c.tool_input)) for c in r}) < len(r) for _, r in every_turn)  # repeats
    assert any(r and any("tool_input" not in c.model_fields_set for c in r) for _, r in every_turn)  # no args
    assert sum(len(conv) > 1 for conv in CONVERSATIONS) > 100  # multi-turn


@pytest.mark.parametrize(
    ("predicted", "expected", "adk_says"),
    [
        ({"on": True}, {"on": 1}, 1.0),
        ({"level": 1}, {"level": 1.0}, 1.0),
        ({"on": "true"}, {"on": True}, 0.0),
    ],
    ids=["True-vs-1", "1-vs-1.0", "text-vs-bool"],
)
def test_argument_equality_under_adk_criteria_is_pythons(predicted, expected, adk_says):
    turns = [([lf.ToolCall(tool_name="t", tool_input=predicted)], [lf.ToolCall(tool_name="t", tool_input=expected)])]
    assert _adk(turns, "EXACT", False)[0] == adk_says
    assert _ours(turns, "EXACT", False)[0] == adk_says


def test_our_own_matcher_keeps_true_apart_from_1():
    ctx = ScoringContext(case_id="c", prompt="p", response="",
                         predicted_trajectory=[lf.ToolCall(tool_name="t", tool_input={"on": True})],
                         reference_trajectory=[lf.ToolCall(tool_name="t", tool_input={"on": 1})])
    assert lf.metrics.TrajectoryExactMatch().score(ctx).value == 0.0
    assert ToolTrajectoryAvgScore(matcher=lf.ToolCallMatcher()).score(ctx) == 0.0
    assert ToolTrajectoryAvgScore().score(ctx) == 1.0


def test_expected_call_without_args_fails_against_an_agents_empty_args_as_in_adk():
    turns = [([lf.ToolCall(tool_name="now", tool_input={})], [lf.ToolCall(tool_name="now")])]
    assert _adk(turns, "EXACT", False)[0] == 0.0
    assert _ours(turns, "EXACT", False)[0] == 0.0
    # levelfield's own matcher reads a missing args as {}.
    ctx = ScoringContext(case_id="c", prompt="p", response="", predicted_trajectory=turns[0][0],
                         reference_trajectory=turns[0][1])
    assert lf.metrics.TrajectoryExactMatch().score(ctx).value == 1.0
