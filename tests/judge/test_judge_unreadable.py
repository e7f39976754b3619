"""A judge whose answers no parser reads is not silent: each such row is a judge failure (NaN, the raw
answer kept, the expected format named), a metric where it is most rows warns once (naming the judge,
the metric, one answer and the format), the command line exits 1; and lf.testing.ScriptedJudge answers
every judged metric's prompt in the format it reads."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import levelfield as lf
from levelfield import JudgeAnswersUnreadableWarning
from levelfield._core.data.dataset import EvalCase, EvalDataset
from levelfield._core.score.metrics.base import ScoringContext
from levelfield.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.judged_fixture.judges import unreadable  # noqa: E402

UNREADABLE = "Score: 5/5. Great answer!"
HOME = str(ROOT / "tests" / "fixture" / "home.evalset.json")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def _rows(n: int = 3) -> list[dict]:
    return [{"case_id": f"c{i}", "prompt": f"Turn on light {i}.", "response": f"Light {i} is on. Anything else?",
             "reference": f"Light {i} is on.", "expected_facts": [f"light {i} is on"],
             "retrieved_context": [{"content": f"light {i}: on", "doc_uri": "home://lights"}]} for i in range(n)]


def _unread_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, JudgeAnswersUnreadableWarning)]


# Every judged metric family, built with a given judge; the second item is a piece of the format it expects.
FAMILIES = {
    "pointwise (binary rubric)": (lambda j: lf.metrics.judged.safety(judge=j), '"score": "1"'),
    "adk final_response_match_v2": (lambda j: lf.metrics.adk.final_response_match_v2(judge=j, judge_config=lf.JudgeConfig(samples=2)),
                                    '"verdict": "valid"'),
    "adk safety_v1": (lambda j: lf.metrics.adk.safety_v1(judge=j), '"verdict": "safe"'),
    "adk rubric-based": (lambda j: lf.metrics.adk.rubric_based_final_response_quality_v1(
        judge=j, rubrics=["The answer says the light is on."], judge_config=lf.JudgeConfig(samples=1)), "Verdict: yes"),
    "adk multi-turn": (lambda j: lf.metrics.adk.multi_turn_task_success_v1(judge=j, judge_config=lf.JudgeConfig(samples=1)), "Verdict: yes"),
    "adk hallucinations_v1": (lambda j: lf.metrics.adk.hallucinations_v1(judge=j), "<sentence>"),
    "vertex GENERAL_QUALITY": (lambda j: lf.metrics.RubricMetric.GENERAL_QUALITY(judge=j), '{"rubrics": [{"id": "1"'),
    "databricks correctness": (lambda j: lf.metrics.databricks.correctness(judge=j), '"score": "1"'),
    "databricks chunk_relevance": (lambda j: lf.metrics.databricks.chunk_relevance(judge=j), '"score": "1"'),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_judge_grading_in_its_own_words_fails_every_row_and_warns_once(family):
    build, expected_piece = FAMILIES[family]
    metric = build(unreadable)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lf.evaluate(_rows(), metrics=[metric], progress=False)
    table, name = result.metrics_table, metric.name
    assert table[f"{name}/score"].isna().all()
    assert table[f"{name}/failed"].eq(True).all()
    assert table[f"{name}/unreadable_answer"].eq(UNREADABLE).all()
    assert table[f"{name}/error"].str.startswith("the judge's answer could not be read: expected ").all()
    assert table[f"{name}/error"].str.contains(expected_piece, regex=False).all()
    assert table[f"{name}/error"].str.endswith(f"it answered {UNREADABLE!r}").all()
    if f"{name}/explanation" in table:  # the raw answer is no explanation of a score
        assert not table[f"{name}/explanation"].eq(UNREADABLE).any()
    assert result.summary_metrics[f"{name}/failure_count"] == 3
    (message,) = _unread_warnings(caught)
    assert message.startswith(f"judge 'tests.judged_fixture.judges.unreadable' gave answers no parser reads on 3 of 3 "
                              f"judged rows of metric {name!r}")
    assert f"One answer: {UNREADABLE!r}." in message
    assert f"Expected {metric.expected_answer}." in message and expected_piece in message


@pytest.mark.parametrize("metric", [lf.metrics.judged.tool_use_quality,
                                    lambda judge: lf.metrics.PointwiseMetric("mine", "Rate {response}.", judge=judge)])
def test_a_judged_metric_that_reads_the_same_answer_is_not_a_failure(metric):
    # "Score: 5/5" is a rating on a 1-5 rubric, and a number where any number is a score: read as 5.
    m = metric(judge=unreadable)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lf.evaluate(_rows(), metrics=[m], progress=False)
    assert list(result.metrics_table[f"{m.name}/score"]) == [5.0, 5.0, 5.0]
    assert f"{m.name}/failed" not in result.metrics_table
    assert _unread_warnings(caught) == []


def test_per_turn_user_simulator_quality_with_unreadable_answers_is_a_judge_failure_not_a_score():
    from levelfield.testing import ScriptedUser

    case = EvalCase(case_id="sim", conversation_scenario={
        "starting_prompt": "Turn on device_1.", "conversation_plan": "Ask to turn on device_1, then say thanks."})
    user = ScriptedUser([("Done", "Thanks!"), ("welcome", None)])
    metric = lf.metrics.adk.per_turn_user_simulator_quality_v1(judge=unreadable, judge_config=lf.JudgeConfig(samples=1))
    with pytest.warns(JudgeAnswersUnreadableWarning, match="per_turn_user_simulator_quality_v1"):
        result = lf.evaluate(EvalDataset([case]), lambda p: "Done." if "device_1" in p else "You're welcome.",
                             metrics=[metric], simulator=user, progress=False)
    row = result.scores[0]
    assert math.isnan(row["per_turn_user_simulator_quality_v1/score"])  # it was a share of turns, unread ones as 0
    assert row["per_turn_user_simulator_quality_v1/unreadable_answer"] == UNREADABLE
    assert '"is_valid": true' in row["per_turn_user_simulator_quality_v1/error"]


def test_pairwise_unreadable_answers_are_judge_failures():
    metric = lf.metrics.PairwiseMetric("better", judge=unreadable)
    a = ScoringContext(case_id="c", prompt="Turn on the light.", response="It is on.", predicted_trajectory=[])
    b = ScoringContext(case_id="c", prompt="Turn on the light.", response="Done.", predicted_trajectory=[])
    score = metric.score_pair(a, b)
    assert math.isnan(score.value) and score.failed
    assert score.extra["unreadable_answer"] == UNREADABLE
    assert '"winner": "A"' in score.error and "winner one of A, B, tie" in score.error


def _mixed_judge(bad_cases: set[str]):
    def judge(prompt: str) -> str:
        if any(f"light {i}." in prompt for i in bad_cases):
            return UNREADABLE
        return json.dumps({"explanation": "safe", "score": "1"})

    return judge


@pytest.mark.parametrize("bad, warned", [({"0", "1"}, False), ({"0", "1", "2"}, False), ({"0", "1", "2", "3"}, True)])
def test_failures_are_counted_and_only_a_majority_of_unreadable_rows_warns(bad, warned):
    metric = lf.metrics.judged.safety(judge=_mixed_judge(bad), judge_config=lf.JudgeConfig(cache=False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lf.evaluate(_rows(6), metrics=[metric], progress=False)
    summary = result.summary_metrics
    assert summary["safety/failure_count"] == len(bad) and summary["safety/nan_count"] == len(bad)
    assert summary["safety/mean"] == 1.0  # the readable rows keep their scores
    found = _unread_warnings(caught)
    assert len(found) == int(warned)  # more than half of the judged rows, not half
    if warned:
        assert "on 4 of 6 judged rows of metric 'safety'" in found[0]


def test_judge_errors_are_not_called_unreadable():
    def broken(prompt: str) -> str:
        raise ConnectionError("judge unreachable")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lf.evaluate(_rows(), metrics=[lf.metrics.judged.safety(judge=broken, judge_config=lf.JudgeConfig(retries=0))], progress=False)
    table = result.metrics_table
    assert table["safety/failed"].eq(True).all() and "safety/unreadable_answer" not in table
    assert table["safety/error"].str.contains("judge unreachable").all()
    assert _unread_warnings(caught) == []


def test_compare_warns_once_per_metric_over_every_agent():
    metrics = [lf.metrics.judged.safety(judge=unreadable), lf.metrics.adk.safety_v1(judge=unreadable), "exact_match"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lf.compare([{k: r[k] for k in ("case_id", "prompt", "reference")} for r in _rows()],
                   {"a": lambda p: "It is on.", "b": lambda p: "Done."}, metrics, progress=False)
    found = _unread_warnings(caught)
    assert len(found) == 2
    assert any("on 6 of 6 judged rows of metric 'safety'" in m for m in found)
    assert any("on 6 of 6 judged rows of metric 'safety_v1'" in m for m in found)


# -- answers in other languages, in a format the metric reads ---------------------------------------


def _answering(answer: str):
    def judge(prompt: str) -> str:
        return answer

    return judge


@pytest.mark.parametrize("metric, answer, value, explained", [
    (lambda j: lf.metrics.judged.safety(judge=j),
     '{"explanation": "A resposta é segura e não causa danos.", "score": "1"}', 1.0, "A resposta é segura"),
    (lambda j: lf.metrics.adk.final_response_match_v2(judge=j, judge_config=lf.JudgeConfig(samples=1)),
     '```json\n{"reasoning": "回答与参考答案一致，灯已打开。", "verdict": "valid"}\n```', 1.0, "回答与参考答案一致"),
    (lambda j: lf.metrics.adk.rubric_based_final_response_quality_v1(
        judge=j, rubrics=[{"id": "an", "property": "Die Antwort sagt, dass das Licht an ist."}], judge_config=lf.JudgeConfig(samples=1)),
     "ID: an\nProperty: Die Antwort sagt, dass das Licht an ist.\nRationale: Die Antwort bestätigt es nicht.\nVerdict: no",
     0.0, "Die Antwort bestätigt es nicht."),
    (lambda j: lf.metrics.adk.safety_v1(judge=j),
     '{"explanation": "この回答には危険な指示が含まれています。", "verdict": "unsafe"}', 0.0, "危険な指示"),
    (lambda j: lf.metrics.judged.tool_use_quality(judge=j),
     "**Bewertung:** gut.\n\nScore: 4", 4.0, "Bewertung"),
])
def test_answers_in_other_languages_in_a_readable_format_are_read(metric, answer, value, explained):
    m = metric(_answering(answer))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = lf.evaluate(_rows(2), metrics=[m], progress=False).metrics_table
    assert list(table[f"{m.name}/score"]) == [value, value]
    assert f"{m.name}/failed" not in table
    assert table[f"{m.name}/explanation"].str.contains(explained, regex=False).all()
    assert _unread_warnings(caught) == []


# -- the command line -------------------------------------------------------------------------------


def test_eval_with_an_unreadable_judge_exits_1_and_says_why(capsys):
    code = main(["eval", HOME, "--agent", "tests.fixture.agents:careful_follow_up", "--metric", "final_response_match_v2",
                 "--metric", "response_match_score", "--judge", "tests.judged_fixture.judges:unreadable", "-q"])
    captured = capsys.readouterr()
    assert code == 1
    assert ("levelfield eval: judge 'tests.judged_fixture.judges.unreadable' gave answers no parser reads on 5 of 5 "
            "judged rows of metric 'final_response_match_v2'") in captured.err
    assert f"One answer: {UNREADABLE!r}. Expected a JSON object like" in captured.err
    assert captured.err.count("gave answers no parser reads") == 1
    assert "response_match_score" in captured.out  # the table is printed as usual


def test_eval_with_a_scripted_judge_exits_0(capsys):
    code = main(["eval", HOME, "--agent", "tests.fixture.agents:careful_follow_up", "--metric", "final_response_match_v2",
                 "--judge", "tests.judged_fixture.judges:judge", "-q"])
    assert code == 0
    assert "gave answers no parser reads" not in capsys.readouterr().err


def test_compare_with_an_unreadable_judge_exits_1(capsys):
    code = main(["compare", HOME, "--agent", "a=tests.fixture.agents:careful_follow_up",
                 "--agent", "b=tests.fixture.agents:hasty_follow_up", "--metric", "safety_v1",
                 "--judge", "tests.judged_fixture.judges:unreadable", "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert "levelfield compare: judge 'tests.judged_fixture.judges.unreadable' gave answers no parser reads on 10 of 10" in err


def test_eval_of_saved_predictions_with_an_unreadable_judge_exits_1(tmp_path, capsys):
    data = tmp_path / "saved.jsonl"
    data.write_text("".join(json.dumps({k: r[k] for k in ("case_id", "prompt", "response", "reference")}) + "\n"
                            for r in _rows()), encoding="utf-8")
    code = main(["eval", str(data), "--metric", "safety_v1", "--judge", "tests.judged_fixture.judges:unreadable", "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert "levelfield eval: judge 'tests.judged_fixture.judges.unreadable' gave answers no parser reads on 3 of 3" in err


# -- lf.testing.ScriptedJudge -----------------------------------------------------------------------


ALL_FAMILIES = [build for build, _ in FAMILIES.values()] + [
    lambda j: lf.metrics.judged.tool_use_quality(judge=j),  # a 1-5 rubric
    lambda j: lf.metrics.PointwiseMetric("mine", "Rate {response} from 0 to 1.", judge=j),  # any number is a score
]


def test_the_scripted_judge_answers_every_judged_metric_in_its_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEVELFIELD_CACHE_DIR")
    judge = lf.testing.ScriptedJudge(explanation="Tudo certo.")
    metrics = [build(judge) for build in ALL_FAMILIES]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = lf.evaluate(_rows(), metrics=metrics, progress=False)
    summary = result.summary_metrics
    best = {m.name: 5.0 if m.name == "tool_use_quality" else 1.0 for m in metrics}  # "mine": any number, 1 for yes
    assert {m.name: summary[f"{m.name}/mean"] for m in metrics} == best
    assert all(summary[f"{m.name}/nan_count"] == 0 for m in metrics)
    assert result.metrics_table["safety/explanation"].eq("Tudo certo.").all()
    assert _unread_warnings(caught) == []
    assert not (tmp_path / ".levelfield-cache").exists()  # scripted answers are never cached


def test_the_scripted_judge_follows_its_rules():
    def decide(question):
        if question.kind == "rubric":
            return "Anything else" not in question.prompt  # the agent's answers all end with a question
        if question.kind == "rating":
            return "2"
        if question.kind == "sentence":
            return not question.item.endswith("?")
        return None

    judge = lf.testing.ScriptedJudge(decide, verdict=False)
    metrics = [lf.metrics.judged.tool_use_quality(judge=judge), lf.metrics.adk.safety_v1(judge=judge),
               lf.metrics.adk.hallucinations_v1(judge=judge), lf.metrics.RubricMetric.GENERAL_QUALITY(judge=judge),
               lf.metrics.judged.safety(judge=lf.testing.ScriptedJudge(verdict=False))]
    summary = lf.evaluate(_rows(), metrics=metrics, progress=False).summary_metrics
    assert summary["tool_use_quality/mean"] == 2.0
    assert summary["safety_v1/mean"] == 0.0  # verdict=False: unsafe
    assert summary["hallucinations_v1/mean"] == 0.5  # "Light i is on." supported, "Anything else?" not
    assert summary["general_quality_v2/mean"] == 0.0
    assert summary["safety/mean"] == 0.0  # the worst rating of a binary rubric


def test_the_scripted_judge_on_pairs_says_tie_by_default_and_follows_a_rule():
    a = ScoringContext(case_id="c", prompt="Turn on the light.", response="It is on.", predicted_trajectory=[])
    b = ScoringContext(case_id="c", prompt="Turn on the light.", response="Done.", predicted_trajectory=[])
    tie = lf.metrics.PairwiseMetric("better", judge=lf.testing.ScriptedJudge()).score_pair(a, b)
    assert tie.value == 0.5 and tie.extra["position_bias"] is False

    def prefers_it_is_on(question):
        first = question.prompt.split("It is on.")[0]
        return "B" if "Done." in first else "A"  # whichever position "It is on." is shown in

    won = lf.metrics.PairwiseMetric("better", judge=lf.testing.ScriptedJudge(prefers_it_is_on)).score_pair(a, b)
    assert won.value == 1.0 and won.extra["position_bias"] is False


def test_the_scripted_judge_refuses_a_prompt_levelfield_does_not_send():
    with pytest.raises(ValueError, match="does not recognise this prompt"):
        lf.testing.ScriptedJudge()("How good is this answer?")


def test_the_scripted_judge_loads_lazily():
    code = ("import sys, levelfield as lf; assert 'levelfield.testing.judge' not in sys.modules; "
            "lf.testing.ScriptedJudge; assert 'levelfield.testing.judge' in sys.modules; "
            "assert 'langchain_core' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
