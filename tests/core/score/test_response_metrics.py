"""Response metrics give the libraries' own numbers; custom metrics follow Vertex's signature."""

import math

import pytest
import sacrebleu
from rouge_score import rouge_scorer

import levelfield as lf
from levelfield._core.score.metrics.base import ScoringContext

PAIRS = [
    ("The Living Room is now set to 23 degrees.", "The Living Room temperature is now set to your preferred 23 degrees."),
    ("device_2 is off", "device_2 in the Bedroom is now off."),
    ("Turning lights on", "The lights are turned off"),
    ("", "Anything at all"),
]


def ctx(response, reference):
    return ScoringContext(case_id="c", prompt="p", response=response, predicted_trajectory=[], reference=reference)


@pytest.mark.parametrize("response,reference", PAIRS)
@pytest.mark.parametrize("name,rouge_type", [("rouge_1", "rouge1"), ("rouge_2", "rouge2"),
                                              ("rouge_l", "rougeL"), ("rouge_l_sum", "rougeLsum")])
def test_rouge_equals_rouge_score_fmeasure(name, rouge_type, response, reference):
    (metric,) = lf.metrics.resolve_metrics([name])
    expected = rouge_scorer.RougeScorer([rouge_type]).score(reference, response)[rouge_type].fmeasure
    assert metric.score(ctx(response, reference)) == pytest.approx(expected)


@pytest.mark.parametrize("response,reference", PAIRS)
def test_bleu_equals_sacrebleu_sentence_bleu(response, reference):
    (metric,) = lf.metrics.resolve_metrics(["bleu"])
    expected = sacrebleu.sentence_bleu(response, [reference]).score / 100
    assert metric.score(ctx(response, reference)) == pytest.approx(expected)


def test_bleu_without_effective_order_is_zero_for_short_partial_answers():
    metric = lf.metrics.Bleu(use_effective_order=False)
    assert metric.score(ctx("The cat sat", "the cat sat on")) == 0.0
    assert lf.metrics.Bleu().score(ctx("The cat sat", "the cat sat on")) > 0.3


@pytest.mark.parametrize("response,reference", PAIRS)
def test_response_match_score_is_rouge1_with_stemming(response, reference):
    expected = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(reference, response)["rouge1"].fmeasure
    (metric,) = lf.metrics.resolve_metrics(["response_match_score"])
    assert metric.score(ctx(response, reference)) == pytest.approx(expected)


def test_exact_match_ignores_surrounding_whitespace_only():
    (metric,) = lf.metrics.resolve_metrics(["exact_match"])
    assert metric.score(ctx(" Done. \n", "Done.")) == 1.0
    assert metric.score(ctx("done.", "Done.")) == 0.0


def test_response_metric_without_reference_is_nan():
    rows = [{"prompt": "p", "response": "r", "reference": None}, {"prompt": "q", "response": "r", "reference": "r"}]
    table = lf.evaluate(rows, metrics=["exact_match"]).metrics_table
    assert math.isnan(table["exact_match/score"][0]) and table["exact_match/score"][1] == 1.0


def essential_tools(instance):
    names = [c["tool_name"] for c in instance["predicted_trajectory"]]
    return {"essential_tools_present": float("set_temperature" in names), "explanation": f"called {names}",
            "n_calls": len(names)}


def test_custom_metric_gets_vertex_instance_and_writes_extra_columns():
    rows = [{"prompt": "p", "response": "r", "reference": "r", "user": "u1",
             "predicted_trajectory": [{"tool_name": "set_temperature", "tool_input": {"temperature": 23}}]}]
    seen = []
    spy = lf.metrics.CustomMetric(name="spy", metric_function=lambda inst: seen.append(inst) or {"spy": 1})
    metric = lf.metrics.CustomMetric(name="essential_tools_present", metric_function=essential_tools)
    table = lf.evaluate(rows, metrics=[metric, spy]).with_explanations()
    assert table["essential_tools_present/score"][0] == 1.0
    assert table["essential_tools_present/explanation"][0] == "called ['set_temperature']"
    assert table["essential_tools_present/n_calls"][0] == 1
    assert seen[0]["predicted_trajectory"] == [{"tool_name": "set_temperature", "tool_input": {"temperature": 23}}]
    assert seen[0]["user"] == "u1" and seen[0]["reference"] == "r"


def test_custom_metric_that_raises_gives_nan_and_error_not_a_crash():
    def broken(instance):
        raise ZeroDivisionError("oops")

    result = lf.evaluate([{"prompt": "p", "response": "r"}] * 1, metrics=[lf.metrics.CustomMetric("broken", broken)])
    row = result.metrics_table.iloc[0]
    assert math.isnan(row["broken/score"])
    assert "ZeroDivisionError: oops" in row["broken/error"]
    assert result.summary_metrics["broken/failure_count"] == 1


def test_custom_metric_missing_its_key_is_reported():
    metric = lf.metrics.CustomMetric("mine", lambda inst: {"other": 1})
    row = lf.evaluate([{"prompt": "p", "response": "r"}], metrics=[metric]).metrics_table.iloc[0]
    assert math.isnan(row["mine/score"]) and "no key 'mine'" in row["mine/error"]


async def test_async_custom_metric_is_awaited():
    async def score(instance):
        return {"async_len": len(instance["response"])}

    result = await lf.aevaluate([{"prompt": "p", "response": "four"}], metrics=[lf.metrics.CustomMetric("async_len", score)])
    assert result.metrics_table["async_len/score"][0] == 4.0


def test_unknown_metric_name_lists_known_names():
    with pytest.raises(lf.MetricError, match=r"unknown metric 'trajectory_exakt_match'.*trajectory_exact_match"):
        lf.metrics.resolve_metrics(["trajectory_exakt_match"])


def test_two_metrics_with_one_name_are_an_error():
    with pytest.raises(lf.MetricError, match="two metrics are named 'trajectory_recall'"):
        lf.metrics.resolve_metrics(["trajectory_recall", lf.metrics.TrajectoryRecall()])


def test_metric_that_needs_arguments_says_how():
    with pytest.raises(lf.MetricError, match=r"TrajectorySingleToolUse\(tool_name=...\)"):
        lf.metrics.resolve_metrics(["trajectory_single_tool_use"])


def test_bleu_with_an_unknown_tokenizer_is_refused_naming_the_known_ones():
    with pytest.raises(lf.MetricError, match=r"Bleu tokenize='kr' is not 'auto' or one of sacrebleu's: .*zh"):
        lf.metrics.Bleu(tokenize="kr")


def test_bleu_with_a_fixed_tokenizer_uses_it_whatever_the_script():
    ctx = ScoringContext(case_id="c", prompt="p", response="今天上海的天气很好", predicted_trajectory=[],
                         reference="今天北京的天气很好")
    # 13a sees each unsegmented sentence as one word, so the two share nothing; auto picks zh.
    assert lf.metrics.Bleu(tokenize="13a").score(ctx) == 0.0
    assert lf.metrics.Bleu().score(ctx) > 0.0
