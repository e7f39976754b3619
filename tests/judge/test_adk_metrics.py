"""tool_trajectory_avg_score and response_match_score give ADK's numbers: derived by hand from
ADK's rules, and compared with ADK's own evaluators on the same predictions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext, TurnContext
from levelfield.metrics import ResponseMatchScore, ToolTrajectoryAvgScore

FIXTURE = Path(__file__).resolve().parents[1] / "fixture"
sys.path.insert(0, str(FIXTURE.parent))
from fixture.agents import careful_follow_up, hasty_follow_up  # noqa: E402

T1 = lf.ToolCall(tool_name="t1", tool_input={"a": 1})
T2 = lf.ToolCall(tool_name="t2", tool_input={"b": 2})
T3 = lf.ToolCall(tool_name="t3", tool_input={})
X = lf.ToolCall(tool_name="x", tool_input={})


def _turn(pred, ref, response="", reference=None):
    return TurnContext(prompt="p", predicted_trajectory=pred, reference_trajectory=ref,
                       response=response, reference=reference)


def _ctx(*turns):
    return ScoringContext(case_id="c", prompt="p", response=turns[-1].response,
                          predicted_trajectory=turns[-1].predicted_trajectory,
                          reference=turns[-1].reference, reference_trajectory=turns[-1].reference_trajectory,
                          turns=list(turns))


def _value(result):
    return result.value if hasattr(result, "value") else result


@pytest.mark.parametrize(
    ("match_type", "pred", "expected"),
    [
        # ADK's docs: expected [T1, T2, T3].
        ("EXACT", [T1, T2, T3], 1.0),
        ("EXACT", [T1, X, T2, T3], 0.0),
        ("IN_ORDER", [T1, X, T2, X, T3, X], 1.0),
        ("IN_ORDER", [T2, T1, T3], 0.0),
        ("ANY_ORDER", [T2, X, T1, X, T3], 1.0),
        ("ANY_ORDER", [T1, T2, X], 0.0),
    ],
)
def test_match_types_follow_adks_documented_examples(match_type, pred, expected):
    metric = ToolTrajectoryAvgScore(match_type)
    assert _value(metric.score(_ctx(_turn(pred, [T1, T2, T3])))) == expected


def test_ignore_args_compares_tool_names_only():
    pred = [lf.ToolCall(tool_name="t1", tool_input={"a": 99})]
    assert _value(ToolTrajectoryAvgScore(ignore_args=True).score(_ctx(_turn(pred, [T1])))) == 1.0
    assert _value(ToolTrajectoryAvgScore().score(_ctx(_turn(pred, [T1])))) == 0.0


def test_tool_trajectory_avg_score_is_the_mean_over_turns():
    ctx = _ctx(_turn([T1], [T1]), _turn([X], [T2]), _turn([], []))
    result = ToolTrajectoryAvgScore().score(ctx)
    assert result.value == pytest.approx(2 / 3)
    assert result.extra["per_turn"] == [1.0, 0.0, 1.0]


def test_response_match_score_is_stemmed_rouge_1_f_averaged_over_turns():
    # Turn 1 by hand: "the lights are on" vs "the light is on"; stemming makes lights -> light,
    # so 3 of 4 unigrams match each way: P = R = F = 0.75. Turn 2 is identical: 1.0.
    ctx = _ctx(
        _turn([], [], response="the light is on", reference="the lights are on"),
        _turn([], [], response="It is 21 degrees.", reference="It is 21 degrees."),
    )
    result = ResponseMatchScore().score(ctx)
    assert result.extra["per_turn"] == [pytest.approx(0.75), pytest.approx(1.0)]
    assert result.value == pytest.approx(0.875)


def test_a_turn_without_an_expected_response_scores_against_the_empty_string_as_in_adk():
    ctx = _ctx(_turn([], [], response="a b", reference="a b"), _turn([], None, response="zzz", reference=None))
    assert ResponseMatchScore().score(ctx).value == 0.5


def test_a_turn_without_expected_calls_expects_none_as_in_adk():
    ctx = _ctx(_turn([], [], response="a b", reference="a b"), _turn([X], None, response="zzz", reference=None))
    assert ToolTrajectoryAvgScore().score(ctx).extra["per_turn"] == [1.0, 0.0]


def test_multi_turn_metrics_are_computable_when_only_earlier_turns_have_references():
    ctx = _ctx(_turn([T1], [T1], response="a", reference="a"), _turn([], None, response="b", reference=None))
    assert ctx.reference is None and ctx.reference_trajectory is None
    assert ResponseMatchScore().computable(ctx)
    assert ToolTrajectoryAvgScore().computable(ctx)


def test_multi_turn_metrics_are_not_computable_for_a_failed_run():
    ctx = _ctx(_turn([T1], [T1], response="a", reference="a"))
    ctx.failure = True
    assert not ResponseMatchScore().computable(ctx)
    assert not ToolTrajectoryAvgScore().computable(ctx)


def _adk_invocations(prompts, outputs):
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.genai import types

    return [
        Invocation(
            user_content=types.Content(parts=[types.Part(text=p)], role="user"),
            final_response=types.Content(parts=[types.Part(text=text)], role="model"),
            intermediate_data=IntermediateData(
                tool_uses=[types.FunctionCall(name=c.tool_name, args=c.tool_input) for c in calls]
            ),
        )
        for p, (text, calls) in zip(prompts, outputs)
    ]


@pytest.mark.parametrize("agent", [careful_follow_up, hasty_follow_up], ids=["careful", "hasty"])
def test_scores_equal_adks_evaluators_on_the_same_predictions(agent):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    ds = lf.load_dataset(FIXTURE)
    result = lf.evaluate(ds, agent, ["tool_trajectory_avg_score", "response_match_score"], progress=False)
    table = result.metrics_table.set_index("case_id")
    compared = 0
    for case, run in zip(ds, result.runs):
        turns = case.turns or [lf._core.data.dataset.Turn(prompt=case.prompt, reference=case.reference,
                                                     reference_trajectory=case.reference_trajectory)]
        outputs = run.turns or [run.output]
        actual = _adk_invocations([t.prompt for t in turns], [(o.response, o.trajectory) for o in outputs])
        expected = _adk_invocations([t.prompt for t in turns], [(t.reference, t.reference_trajectory) for t in turns])
        trajectory = TrajectoryEvaluator(threshold=1.0).evaluate_invocations(actual, expected).overall_score
        rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8)).evaluate_invocations(
            actual, expected
        ).overall_score
        assert table.loc[case.case_id, "tool_trajectory_avg_score/score"] == pytest.approx(trajectory), case.case_id
        assert table.loc[case.case_id, "response_match_score/score"] == pytest.approx(rouge), case.case_id
        compared += 1
    assert compared == 7


def test_hasty_agent_gets_the_hand_derived_scores_on_the_fixture():
    result = lf.evaluate(FIXTURE, hasty_follow_up, ["tool_trajectory_avg_score", "response_match_score"], progress=False)
    scores = result.metrics_table.set_index("case_id")["tool_trajectory_avg_score/score"].to_dict()
    # warmer_room: calls reordered; kitchen_all_off: look-up skipped; lights: turn 2 sends "40" for 40.
    assert scores == {
        "turn_off_device_2": 1.0,
        "warmer_room": 0.0,
        "kitchen_all_off": 0.0,
        "device_3_follow_up": 1.0,
        "greeting": 1.0,
        "lights": 0.5,
        "thermostat": 1.0,
    }


def test_any_order_accepts_the_reordered_parallel_calls():
    metric = ToolTrajectoryAvgScore("ANY_ORDER")
    result = lf.evaluate(f"{FIXTURE / 'home.evalset.json'}:warmer_room", hasty_follow_up, [metric], progress=False)
    assert result.metrics_table["tool_trajectory_avg_score/score"].tolist() == [1.0]


@pytest.mark.parametrize("ignore_args", [False, True], ids=["args", "ignore_args"])
@pytest.mark.parametrize("match_type", ["EXACT", "IN_ORDER", "ANY_ORDER"])
def test_match_types_equal_the_installed_adks_trajectory_evaluator(match_type, ignore_args):
    pytest.importorskip("google.adk")
    from google.adk.evaluation import eval_metrics
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    if not hasattr(eval_metrics, "ToolTrajectoryCriterion"):
        pytest.skip("this ADK has EXACT matching only")
    criterion = eval_metrics.ToolTrajectoryCriterion(threshold=1.0, match_type=match_type, ignore_args=ignore_args)
    adk = TrajectoryEvaluator(eval_metric=eval_metrics.EvalMetric(
        metric_name="tool_trajectory_avg_score", threshold=1.0, criterion=criterion))
    other_args = lf.ToolCall(tool_name="t1", tool_input={"a": 5})
    # One turn per situation: exact, extras, reordered, missing, other args, repeated calls, empty.
    pairs = [
        ([T1, T2], [T1, T2]),
        ([T1, X, T2], [T1, T2]),
        ([T2, T1], [T1, T2]),
        ([T1], [T1, T2]),
        ([other_args, T2], [T1, T2]),
        ([T1, T1], [T1, T1]),
        ([T1], [T1, T1]),
        ([], []),
        ([X], []),
    ]
    outputs = [("", pred) for pred, _ in pairs]
    expected = [("", ref) for _, ref in pairs]
    prompts = ["p"] * len(pairs)
    adk_result = adk.evaluate_invocations(_adk_invocations(prompts, outputs), _adk_invocations(prompts, expected))
    ours = ToolTrajectoryAvgScore(match_type, ignore_args=ignore_args).score(_ctx(*[_turn(p, r) for p, r in pairs]))
    assert ours.extra["per_turn"] == [r.score for r in adk_result.per_invocation_results]
    assert ours.value == pytest.approx(adk_result.overall_score)
