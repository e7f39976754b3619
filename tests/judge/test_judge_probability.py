"""Probability-native judging: ``<metric>/p`` from the providers' own clients (langchain-openai and
google-genai pointed at local stand-ins that send log-probabilities in each provider's wire format),
from an answer that states a probability, and NaN for judges that give a verdict only; then the
soft labels in comparisons and in the judge correction (``StatsConfig(judge_scores="probability")``)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError, LevelfieldError
from levelfield.metrics import PointwiseMetric, PointwiseMetricPromptTemplate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from provider_standins import Bill, GeminiStandIn, OpenAIStandIn, Step  # noqa: E402

langchain_openai = pytest.importorskip("langchain_openai")

ROW = [{"case_id": "c1", "prompt": "Book a table for two", "response": "Booked for two at 8pm.",
        "predicted_trajectory": []}]


def _answer(explanation: str, rating_tokens: list[str], alternatives: list[tuple[str, float]],
            field: str = "score") -> Step:
    """A judge's JSON answer as generated tokens; the rating's first token carries ``alternatives``
    (token, probability), the chosen one first."""
    chosen_p = alternatives[0][1]
    head = ['{"', "explanation", '":', ' "', explanation, '",', ' "', field, '":', ' "']
    tokens: list[tuple[str, float, tuple[tuple[str, float], ...]]] = [(t, -0.01, ()) for t in head]
    tokens.append((rating_tokens[0], math.log(chosen_p), tuple((a, math.log(p)) for a, p in alternatives)))
    tokens += [(t, -0.001, ()) for t in rating_tokens[1:]]
    tokens.append(('"}', -0.001, ()))
    text = "".join(t for t, _, _ in tokens)
    return Step(Bill(120, 20), text=text, tokens=tuple(tokens))


def _openai_judge(provider: OpenAIStandIn, **options) -> object:
    return langchain_openai.ChatOpenAI(model="gpt-4o-mini", base_url=f"{provider.url}/v1", api_key="sk-test",
                                       max_retries=0, **options)


@pytest.mark.parametrize("structured_output", [None, False], ids=["structured", "text"])
@pytest.mark.parametrize(("rating", "alternatives", "expected"), [
    ("1", [("1", 0.8), ("0", 0.2)], 0.8),
    ("0", [("0", 0.7), ("1", 0.25), ("Yes", 0.05)], 0.25 / 0.95),
])
def test_openai_logprobs_give_the_probability_of_a_pass(structured_output, rating, alternatives, expected):
    with OpenAIStandIn(model="gpt-4o-mini", script=[_answer("Looks right.", [rating], alternatives)]) as provider:
        judge = _openai_judge(provider, logprobs=True, top_logprobs=5)
        metric = lf.metrics.judged.safety(judge=judge, judge_config=lf.JudgeConfig(cache=False, structured_output=structured_output))
        row = lf.evaluate(ROW, metrics=[metric], progress=False).metrics_table.iloc[0]
        assert provider.requests[0]["logprobs"] is True and provider.requests[0]["top_logprobs"] == 5
    assert row["safety/score"] == float(rating)
    assert row["safety/p"] == pytest.approx(expected)


def test_a_verdict_only_openai_judge_works_as_before_with_p_nan():
    with OpenAIStandIn(model="gpt-4o-mini", script=[_answer("Looks right.", ["1"], [("1", 0.8), ("0", 0.2)])]) as provider:
        metric = lf.metrics.judged.safety(judge=_openai_judge(provider), judge_config=lf.JudgeConfig(cache=False))
        row = lf.evaluate(ROW, metrics=[metric], progress=False).metrics_table.iloc[0]
        assert "logprobs" not in provider.requests[0]
    assert row["safety/score"] == 1.0 and "safety/failed" not in row or not row.get("safety/failed")
    assert math.isnan(row["safety/p"])


def test_logprobs_are_kept_in_the_cache(tmp_path):
    step = _answer("Fine.", ["1"], [("1", 0.6), ("0", 0.4)])
    with OpenAIStandIn(model="gpt-4o-mini", script=[step]) as provider:
        judge = _openai_judge(provider, logprobs=True, top_logprobs=3)
        first = lf.evaluate(ROW, metrics=[lf.metrics.judged.safety(judge=judge, judge_config=lf.JudgeConfig(cache=tmp_path))], progress=False)
        again = lf.evaluate(ROW, metrics=[lf.metrics.judged.safety(judge=judge, judge_config=lf.JudgeConfig(cache=tmp_path))], progress=False)
        assert len(provider.requests) == 1  # the second run is answered from the cache
    assert first.metrics_table.iloc[0]["safety/p"] == pytest.approx(0.6)
    assert again.metrics_table.iloc[0]["safety/p"] == pytest.approx(0.6)


# Word ratings in four languages: the rating's first token is read (a word is often split).
LANGUAGES = [
    ("pt", {"sim": 1, "não": 0}, "A reserva foi feita corretamente.", ["n", "ão"], [("n", 0.65), ("sim", 0.35)], 0.35),
    ("zh", {"是": 1, "否": 0}, "预订已正确完成。", ["是"], [("是", 0.9), ("否", 0.1)], 0.9),
    ("de", {"ja": 1, "nein": 0}, "Die Buchung wurde korrekt ausgeführt.", ["ja"], [("ja", 0.75), ("nein", 0.25)], 0.75),
    ("ja", {"はい": 1, "いいえ": 0}, "予約は正しく完了しました。", ["いい", "え"], [("いい", 0.6), ("は", 0.4)], 0.4),
]


@pytest.mark.parametrize(("language", "scores", "explanation", "rating_tokens", "alternatives", "expected"),
                         LANGUAGES, ids=[lang[0] for lang in LANGUAGES])
def test_word_ratings_in_other_languages(language, scores, explanation, rating_tokens, alternatives, expected):
    template = PointwiseMetricPromptTemplate(
        criteria={"booked": "The booking was made as asked."},
        rating_rubric={word: ("pass" if value else "fail") for word, value in scores.items()},
        input_variables=["prompt"],
    )
    step = _answer(explanation, rating_tokens, alternatives)
    with OpenAIStandIn(model="gpt-4o-mini", script=[step]) as provider:
        judge = _openai_judge(provider, logprobs=True, top_logprobs=5)
        metric = PointwiseMetric("booked", template, judge, rubric_scores=scores, judge_config=lf.JudgeConfig(cache=False, structured_output=False))
        row = lf.evaluate(ROW, metrics=[metric], progress=False).metrics_table.iloc[0]
    assert row["booked/score"] == float(scores["".join(rating_tokens)])
    assert row["booked/explanation"] == explanation
    assert row["booked/p"] == pytest.approx(expected)


def test_gemini_logprobs_through_google_genai():
    """google-genai asked for response_logprobs: a function judge returns its response as it is."""
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    step = _answer("Correct booking.", ["1"], [("1", 0.85), ("0", 0.15)])
    with GeminiStandIn(model="gemini-2.5-flash", script=[step]) as provider:
        client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=provider.url))

        async def gemini_judge(prompt: str):
            return await client.aio.models.generate_content(
                model="gemini-2.5-flash", contents=prompt,
                config=types.GenerateContentConfig(response_logprobs=True, logprobs=5))

        row = lf.evaluate(ROW, metrics=[lf.metrics.judged.safety(judge=gemini_judge, judge_config=lf.JudgeConfig(cache=False))],
                          progress=False).metrics_table.iloc[0]
        assert provider.requests[0]["generationConfig"]["responseLogprobs"] is True
    assert row["safety/score"] == 1.0
    assert row["safety/p"] == pytest.approx(0.85)


def test_langchain_google_genai_gives_a_verdict_only():
    """langchain-google-genai does not pass Gemini's logprobs on: the verdict is read, p is NaN."""
    chat_google = pytest.importorskip("langchain_google_genai")
    step = _answer("Correct booking.", ["1"], [("1", 0.85), ("0", 0.15)])
    with GeminiStandIn(model="gemini-2.5-flash", script=[step]) as provider:
        # vertexai=False: after a test that ran vertexai.init(project=...), the client would pick Vertex's routes
        judge = chat_google.ChatGoogleGenerativeAI(model="gemini-2.5-flash", base_url=provider.url, api_key="test-key",
                                                   vertexai=False, max_retries=0)
        row = lf.evaluate(ROW, metrics=[lf.metrics.judged.safety(judge=judge, judge_config=lf.JudgeConfig(cache=False, structured_output=False))],
                          progress=False).metrics_table.iloc[0]
    assert row["safety/score"] == 1.0, row.get("safety/error")
    assert math.isnan(row["safety/p"])


YES_NO = PointwiseMetricPromptTemplate(criteria={"ok": "The answer is right."},
                                       rating_rubric={"yes": "right", "no": "wrong"}, input_variables=["prompt"])


def _decision_metric(answer) -> PointwiseMetric:
    return PointwiseMetric("ok", YES_NO, answer, rubric_scores={"yes": 1, "no": 0}, judge_config=lf.JudgeConfig(cache=False))


@pytest.mark.parametrize(("answer", "score", "p"), [
    ({"verdict": "yes", "probability": 0.83}, 1.0, 0.83),
    ({"verdict": "no", "confidence": 0.9}, 0.0, 0.1),
    ({"score": "yes", "probability": "64%"}, 1.0, 0.64),
    ('{"explanation": "fine", "score": "no", "p": 0.2}', 0.0, 0.2),
])
def test_a_decision_models_probability_in_the_answer(answer, score, p):
    row = lf.evaluate(ROW, metrics=[_decision_metric(lambda prompt: answer)], progress=False).metrics_table.iloc[0]
    assert row["ok/score"] == score
    assert row["ok/p"] == pytest.approx(p)


def test_a_probability_outside_0_1_keeps_the_verdict_and_says_why_p_is_missing():
    row = lf.evaluate(ROW, metrics=[_decision_metric(lambda prompt: {"verdict": "yes", "probability": 83})],
                      progress=False).metrics_table.iloc[0]
    assert row["ok/score"] == 1.0
    assert math.isnan(row["ok/p"])
    assert "outside [0, 1]" in row["ok/p_error"] and "0.83" in row["ok/p_error"]


def test_samples_average_their_probabilities():
    answers = iter([{"verdict": "yes", "probability": 0.9}, {"verdict": "yes", "probability": 0.7},
                    {"verdict": "no", "probability": 0.2}])
    metric = PointwiseMetric("ok", YES_NO, lambda prompt: next(answers), rubric_scores={"yes": 1, "no": 0},
                             judge_config=lf.JudgeConfig(cache=False, samples=3, concurrency=1))
    row = lf.evaluate(ROW, metrics=[metric], progress=False).metrics_table.iloc[0]
    assert row["ok/score"] == 1.0  # the majority verdict, as before
    assert row["ok/p"] == pytest.approx(0.6)


def test_a_function_judge_returning_something_else_is_told_what_to_return():
    row = lf.evaluate(ROW, metrics=[_decision_metric(lambda prompt: 42)], progress=False).metrics_table.iloc[0]
    assert row["ok/failed"] and "dict, a chat message or a google-genai response" in row["ok/error"]


def test_non_binary_rubrics_have_no_p_column():
    metric = lf.metrics.judged.tool_use_quality(judge=lambda prompt: '{"score": "4"}', judge_config=lf.JudgeConfig(cache=False))
    table = lf.evaluate(ROW, metrics=[metric], progress=False).metrics_table
    assert table.iloc[0]["tool_use_quality/score"] == 4.0
    assert "tool_use_quality/p" not in table


# -- soft labels in comparisons and the judge correction -----------------------------------------

CASES = [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": "r"} for i in range(12)]
# Each agent's answer carries the probability its judge gives it; the verdict is p >= 0.5.
P_A = [0.9, 0.8, 0.6, 0.55, 0.7, 0.95, 0.4, 0.85, 0.65, 0.75, 0.3, 0.9]
P_B = [0.6, 0.45, 0.5, 0.2, 0.55, 0.7, 0.1, 0.6, 0.35, 0.5, 0.15, 0.65]


def _agent(probabilities):
    return lambda prompt: f"p={probabilities[int(prompt.split()[-1])]}"


def _judge(prompt: str) -> dict:
    p = float(prompt.split("p=")[1].split()[0].strip('"'))
    return {"verdict": "yes" if p >= 0.5 else "no", "probability": p}


def _soft_metric() -> PointwiseMetric:
    template = PointwiseMetricPromptTemplate(criteria={"ok": "right"}, rating_rubric={"yes": "right", "no": "wrong"},
                                             input_variables=["prompt"])
    return PointwiseMetric("ok", template, _judge, rubric_scores={"yes": 1, "no": 0}, judge_config=lf.JudgeConfig(cache=False))


def test_judge_scores_probability_uses_soft_labels_in_summary_and_paired_test():
    agents = {"a": _agent(P_A), "b": _agent(P_B)}
    hard = lf.compare(CASES, agents, metrics=[_soft_metric()], progress=False)
    soft = lf.compare(CASES, agents, metrics=[_soft_metric()], progress=False,
                      stats=lf.StatsConfig(judge_scores="probability"))
    verdicts_a = np.array(P_A) >= 0.5
    assert hard.summary.loc["a", "ok/mean"] == pytest.approx(verdicts_a.mean())
    assert soft.summary.loc["a", "ok/mean"] == pytest.approx(np.mean(P_A))
    assert soft.summary.loc["b", "ok/mean"] == pytest.approx(np.mean(P_B))
    assert soft.paired("ok", "a", "b").d == pytest.approx(np.array(P_A) - np.array(P_B))
    assert soft.paired("ok", "a", "b").test == "t"
    assert hard.paired("ok", "a", "b").test == "mcnemar"
    assert "score the judge's probability of a pass" in str(soft)
    assert "probability" not in str(hard)
    assert soft.summary.attrs["judge_scores"] == "probability"


def test_judge_scores_probability_with_a_verdict_only_judge_is_refused_with_the_fix():
    metric = PointwiseMetric("ok", YES_NO, lambda prompt: '{"score": "yes"}', rubric_scores={"yes": 1, "no": 0},
                             judge_config=lf.JudgeConfig(cache=False))
    cmp = lf.compare(CASES[:3], {"a": lambda p: "x"}, metrics=[metric], progress=False,
                     stats=lf.StatsConfig(judge_scores="probability"))
    with pytest.raises(ConfigError, match=r"judge_scores='probability': metric 'ok' has no judge probability on any row.*"
                                          r"logprobs=True.*judge_scores=\"verdict\""):
        _ = cmp.summary


def test_a_bad_judge_scores_option_names_the_choices():
    with pytest.raises(ConfigError, match=r"judge_scores='prob': use 'verdict' .* or 'probability'"):
        lf.StatsConfig(judge_scores="prob")


def _labelled_cases(p, truth):
    return [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": "r", "human_label": truth[i] if i % 2 == 0 else None}
            for i in range(len(p))]


def test_the_judge_correction_uses_the_calibrated_probabilities():
    truth = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    cases = _labelled_cases(P_A, truth)
    verdict = lf.evaluate(cases, _agent(P_A), [_soft_metric()], progress=False)
    soft = lf.evaluate(cases, _agent(P_A), [_soft_metric()], progress=False,
                       stats=lf.StatsConfig(judge_scores="probability"))
    hard_c, soft_c = verdict.judge_corrections["ok"], soft.judge_corrections["ok"]
    assert hard_c.method == "rogan-gladen" and soft_c.method == "calibrated-probability"
    # The oracle: a least-squares line of the labels on p over the labelled rows, averaged over every row.
    p, labelled = np.array(P_A), np.arange(0, 12, 2)
    slope, intercept = np.polyfit(p[labelled], np.array(truth, dtype=float)[labelled], 1)
    assert soft_c.corrected == pytest.approx(min(1, max(0, float(np.mean(intercept + slope * p)))))
    assert soft_c.judged_rate == pytest.approx(p.mean())
    assert soft.summary_metrics["ok/corrected_mean"] == pytest.approx(soft_c.corrected)
    # Calibration on the labelled rows, in both modes (where the judge gave probabilities).
    brier = float(np.mean((p[labelled] - np.array(truth)[labelled]) ** 2))
    assert hard_c.calibration.brier == pytest.approx(brier)
    assert soft.summary_metrics["ok/judge_brier"] == pytest.approx(brier)
    assert "ok/judge_ece" in soft.summary_metrics
    words = soft_c.describe()
    assert "the judge's probabilities" in words and "Brier" in words and "mean p" in words


def test_a_verdict_only_judge_correction_is_unchanged():
    truth = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    metric = PointwiseMetric("ok", YES_NO, lambda prompt: '{"score": "yes"}' if "0.9" in prompt or "0.8" in prompt
                             else '{"score": "no"}', rubric_scores={"yes": 1, "no": 0}, judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(_labelled_cases(P_A, truth), _agent(P_A), [metric], progress=False)
    correction = result.judge_corrections["ok"]
    assert correction.method == "rogan-gladen" and correction.calibration is None
    assert "ok/judge_brier" not in result.summary_metrics
    with pytest.raises(LevelfieldError, match="no judge probability on any row"):
        lf.evaluate(_labelled_cases(P_A, truth), _agent(P_A), [metric], progress=False,
                    stats=lf.StatsConfig(judge_scores="probability"))


def test_evaluate_refuses_statistics_options_it_does_not_use():
    with pytest.raises(ConfigError, match=r"reducer='max' apply to comparisons; evaluate uses only confidence and judge_scores"):
        lf.evaluate(CASES[:2], lambda p: "x", ["exact_match"], progress=False, stats=lf.StatsConfig(reducer="max"))


def test_the_cli_prints_the_soft_correction_and_calibration(tmp_path, capsys, monkeypatch):
    truth = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps({k: v for k, v in c.items() if k != "human_label"})
                              for c in _labelled_cases(P_A, truth)), encoding="utf-8")
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,human_label\n" + "\n".join(f"c{i},{truth[i]}" for i in range(0, 12, 2)), encoding="utf-8")
    (tmp_path / "soft_judge_mod.py").write_text(
        f"P = {P_A!r}\n"
        "def agent(prompt):\n    return f'p={P[int(prompt.split()[-1])]}'\n"
        "def judge(prompt):\n"
        "    p = float(prompt.split('p=')[1].split()[0].strip('\"'))\n"
        "    return {'verdict': 'valid' if p >= 0.5 else 'invalid', 'probability': p}\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    from levelfield.cli.main import main

    code = main(["eval", str(data), "--agent", "soft_judge_mod:agent", "--metric", "final_response_match_v2", "--judge",
                 "soft_judge_mod:judge", "--human-labels", str(labels), "--judge-scores", "probability"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "using 6 human labels and the judge's probabilities" in out
    assert "judge calibration against 6 human labels: Brier" in out and "observed" in out


def test_adk_yes_no_criteria_read_the_verdict_tokens_probability():
    rows = [{"case_id": "c1", "prompt": "Capital of France?", "response": "Paris.", "reference": "Paris"}]
    step = _answer("Same city as the reference.", ["valid"], [("valid", 0.7), ("in", 0.3)], field="verdict")
    with OpenAIStandIn(model="gpt-4o-mini", script=[step]) as provider:
        judge = _openai_judge(provider, logprobs=True, top_logprobs=5)
        metric = lf.metrics.adk.final_response_match_v2(judge=judge, judge_config=lf.JudgeConfig(samples=3, cache=False))
        row = lf.evaluate(rows, metrics=[metric], progress=False).metrics_table.iloc[0]
        assert len(provider.requests) == 3
    assert row["final_response_match_v2/score"] == 1.0
    assert row["final_response_match_v2/p"] == pytest.approx(0.7)


def test_adk_yes_no_criteria_with_a_verdict_only_judge_have_p_nan():
    rows = [{"case_id": "c1", "prompt": "Capital of France?", "response": "Paris.", "reference": "Paris"}]
    judge = lf.testing.ScriptedJudge()
    table = lf.evaluate(rows, metrics=["safety_v1", "final_response_match_v2"], judge=judge, progress=False).metrics_table
    assert table.iloc[0]["safety_v1/score"] == 1.0 and math.isnan(table.iloc[0]["safety_v1/p"])
    assert math.isnan(table.iloc[0]["final_response_match_v2/p"])


def test_the_report_shows_each_judge_against_human_labels_with_its_calibration():
    truth = [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    cases = _labelled_cases(P_A, truth)
    soft = lf.compare(cases, {"a": _agent(P_A)}, metrics=[_soft_metric()], progress=False,
                      stats=lf.StatsConfig(judge_scores="probability"))
    page = lf.report.render(soft)
    expected = lf.evaluate(cases, _agent(P_A), [_soft_metric()], progress=False,
                           stats=lf.StatsConfig(judge_scores="probability")).judge_corrections["ok"]
    assert '<section id="judges">' in page and 'href="#judges"' in page
    assert "judge&#x27;s probabilities, calibrated" in page
    assert f"{expected.calibration.brier:.3f}" in page and f"{expected.calibration.ece:.3f}" in page
    assert f"{expected.corrected * 100:.1f}%" in page
    assert "observed pass rate" in page
    # Without human labels there is no such section.
    plain = lf.compare(CASES, {"a": _agent(P_A)}, metrics=[_soft_metric()], progress=False)
    assert 'id="judges"' not in lf.report.render(plain)


def test_soft_scores_are_not_mixed_with_the_samples_verdicts_in_the_noise_split():
    template = PointwiseMetricPromptTemplate(criteria={"ok": "right"}, rating_rubric={"yes": "right", "no": "wrong"},
                                             input_variables=["prompt"])
    metric = PointwiseMetric("ok", template, _judge, rubric_scores={"yes": 1, "no": 0}, judge_config=lf.JudgeConfig(cache=False, samples=3))
    soft = lf.compare(CASES, {"a": _agent(P_A)}, metrics=[metric], progress=False,
                      stats=lf.StatsConfig(judge_scores="probability"))
    samples = soft.sample_scores("ok", "a")
    assert samples.shape == (12, 1, 1) and samples[:, 0, 0] == pytest.approx(P_A)
    assert math.isnan(soft.noise("ok").loc[0, "var_judge"])
