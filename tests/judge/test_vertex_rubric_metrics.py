"""Vertex AI's rubric metrics by their Vertex names, computed locally with a scripted judge: every spelling
Vertex users write, GENERAL_QUALITY's rubrics generated once per case and kept in the run record, bad
input named. (Vertex's own objects are built from the installed google-cloud-aiplatform when present.)"""

from __future__ import annotations

import json
import math
import re

import pytest

import levelfield as lf
from levelfield import JudgeAnswersUnreadableWarning
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


class RubricJudge:
    """A scripted judge: writes ``rubrics`` when asked to generate, says yes to every property except those
    naming ``missing`` words that the answer lacks; counts what it was asked."""

    def __init__(self, rubrics, *, name: str = "judge") -> None:
        self.rubrics = rubrics
        self.generated = 0
        self.judged: list[str] = []
        self.__name__ = name

    def __call__(self, prompt: str) -> str:
        if "Write the rubric" in prompt:
            self.generated += 1
            return self.rubrics if isinstance(self.rubrics, str) else json.dumps({"rubrics": self.rubrics}, ensure_ascii=False)
        self.judged.append(prompt)
        answer = prompt.split("# The agent's final answer\n", 1)[-1].split("\n# Properties", 1)[0]
        blocks = []
        for rid, text in re.findall(r"\[id: ([^\]]+)\] (.*)", prompt):
            needed = re.findall(r"'([^']+)'", text)
            ok = all(word in answer for word in needed)
            blocks.append(f"ID: {rid}\nProperty: {text}\nRationale: {'enthalten' if ok else 'fehlt'}\nVerdict: {'yes' if ok else 'no'}")
        return "\n\n".join(blocks)


GERMAN = [{"id": "temp", "property": "Die Antwort nennt die Temperatur '21'."},
          {"id": "unit", "property": "Die Antwort nennt die Einheit '°C'."}]
JAPANESE = [{"id": "1", "property": "回答は「晴れ」という天気を述べている '晴れ'"}]


def _cases() -> EvalDataset:
    return EvalDataset([EvalCase(case_id="paris", prompt="Wie warm ist es in Paris?"),
                        EvalCase(case_id="tokyo", prompt="東京の天気は？")])


def _agents():
    def careful(prompt: str) -> str:
        return "Es sind 21 °C." if "Paris" in prompt else "晴れです。"

    def vague(prompt: str) -> str:
        return "Es ist warm, 21 Grad." if "Paris" in prompt else "わかりません。"

    return {"careful": careful, "vague": vague}


class SplitJudge(RubricJudge):
    """German rubrics for the Paris case, Japanese ones for the Tokyo case."""

    def __call__(self, prompt: str) -> str:
        if "Write the rubric" in prompt:
            self.rubrics = GERMAN if "Paris" in prompt else JAPANESE
        return super().__call__(prompt)


# -- the names Vertex users write ------------------------------------------------------------------


@pytest.mark.parametrize(("written", "column"), [
    ("GENERAL_QUALITY", "general_quality_v2"),
    ("general_quality", "general_quality_v2"),
    ("general_quality_v1", "general_quality_v1"),
    ("HALLUCINATION", "hallucination_v2"),
    ("hallucination_v1", "hallucination_v1"),
    ("MULTI_TURN_TASK_SUCCESS", "multi_turn_task_success_v1"),
    ("multi_turn_tool_use_quality", "multi_turn_tool_use_quality_v1"),
    ("MULTI_TURN_TRAJECTORY_QUALITY", "multi_turn_trajectory_quality_v1"),
])
def test_each_vertex_spelling_names_the_metric_as_vertex_names_its_column(written, column):
    (metric,) = lf.metrics.resolve_metrics([written], judge=RubricJudge(GERMAN))
    assert metric.name == column
    assert "computed locally with your judge" in metric.description and "Vertex" in metric.description


def test_our_rubric_metric_objects_build_with_the_judge_given_to_evaluate():
    judge = RubricJudge(GERMAN)
    spec = lf.metrics.RubricMetric.GENERAL_QUALITY(version="v1")
    result = lf.evaluate([{"case_id": "paris", "prompt": "Wie warm ist es in Paris?", "response": "21 °C"}],
                         metrics=[spec], judge=judge, progress=False)
    assert result.scores[0]["general_quality_v1/score"] == 1.0
    built = lf.metrics.RubricMetric.MULTI_TURN_TASK_SUCCESS(judge=judge)
    assert isinstance(built, lf.metrics.Metric) and built.name == "multi_turn_task_success_v1" and built.num_samples == 1
    with pytest.raises(lf.MetricError, match=r"RubricMetric.GENERAL_QUALITY.*needs a judge model"):
        lf.evaluate([{"prompt": "p", "response": "r"}], metrics=[lf.metrics.RubricMetric.GENERAL_QUALITY], progress=False)


def test_vertexs_own_rubric_metric_objects_are_accepted_unchanged():
    loaders = pytest.importorskip("vertexai._genai._evals_metric_loaders")
    common = pytest.importorskip("vertexai._genai.types.common")
    judge = RubricJudge(GERMAN)
    metrics = lf.metrics.resolve_metrics(
        [loaders.RubricMetric.GENERAL_QUALITY, loaders.RubricMetric.MULTI_TURN_TASK_SUCCESS,
         loaders.RubricMetric.HALLUCINATION(version="v1"), common.Metric(name="general_quality_v1", rubric_group_name="gq")],
        judge=judge)
    assert [m.name for m in metrics] == ["general_quality_v2", "multi_turn_task_success_v1", "hallucination_v1", "general_quality_v1"]
    assert metrics[3].rubric_group_name == "gq"
    with pytest.raises(lf.MetricError, match=r"unknown Vertex rubric metric 'TEXT_QUALITY'"):
        lf.metrics.resolve_metrics([loaders.RubricMetric.TEXT_QUALITY], judge=judge)


def test_an_unknown_vertex_name_suggests_the_nearest():
    with pytest.raises(lf.MetricError, match=r"unknown metric 'GENERAL_QUALTY'\. Did you mean 'GENERAL_QUALITY'\?"):
        lf.evaluate([{"prompt": "p", "response": "r"}], metrics=["GENERAL_QUALTY"], judge=RubricJudge(GERMAN), progress=False)
    with pytest.raises(AttributeError, match=r"Did you mean 'MULTI_TURN_TASK_SUCCESS'\?"):
        _ = lf.metrics.RubricMetric.MULTI_TURN_TASK_SUCESS
    with pytest.raises(lf.MetricError, match=r"has no version 'v3'"):
        lf.metrics.RubricMetric.GENERAL_QUALITY(version="v3")


# -- GENERAL_QUALITY: rubrics generated once per case --------------------------------------------------


def test_general_quality_generates_rubrics_once_per_case_for_every_agent_and_trial():
    judge = SplitJudge(None)
    data = _cases()
    cmp = lf.compare(data, _agents(), metrics=["GENERAL_QUALITY"], judge=judge, trials=2, progress=False)
    assert judge.generated == 2  # two cases; two agents x two trials each judged on the same rubrics
    careful, vague = (cmp.results[a].metrics_table for a in ("careful", "vague"))
    assert list(careful["general_quality_v2/score"]) == [1.0, 1.0, 1.0, 1.0]
    assert list(vague["general_quality_v2/score"]) == [0.5, 0.5, 0.0, 0.0]
    verdicts = vague["general_quality_v2/rubrics"].iloc[0]
    assert [(v["id"], v["verdict"], v["rationale"]) for v in verdicts] == [("temp", "yes", "enthalten"), ("unit", "no", "fehlt")]
    # Kept on the case in Vertex's rubric shape, under the metric's name.
    group = data[1].metadata["rubric_groups"]["general_quality_v2"]
    assert group == [{"rubric_id": "1", "content": {"property": {"description": JAPANESE[0]["property"]}}}]
    # The judge's cost counts each call once: two generations and four distinct answers judged.
    calls = [*careful["general_quality_v2/judge_calls"], *vague["general_quality_v2/judge_calls"]]
    assert sum(calls) == 6 and len(judge.judged) == 4


def test_generated_rubrics_are_saved_in_the_run_record_and_a_resumed_run_never_generates_again(tmp_path):
    first = RubricJudge(GERMAN, name="first")
    data = [{"case_id": "paris", "prompt": "Wie warm ist es in Paris?"}]
    agent = _agents()["vague"]
    quality = lf.metrics.RubricMetric.GENERAL_QUALITY(version="v1", judge_config=lf.JudgeConfig(cache=False))
    lf.evaluate(data, agent, metrics=[quality], judge=first, out=tmp_path / "run", progress=False)
    assert first.generated == 1
    saved = lf.EvalResult.load(tmp_path / "run")
    assert saved.dataset[0].metadata["rubric_groups"]["general_quality_v1"][1]["content"]["property"]["description"] == GERMAN[1]["property"]
    assert saved.scores[0]["general_quality_v1/score"] == 0.5
    # A judge that would write other rubrics: the resumed run is re-scored on the saved ones.
    other = RubricJudge([{"id": "x", "property": "Die Antwort ist höflich 'bitte'."}], name="other")
    again = lf.evaluate(data, agent, metrics=[quality], judge=other, out=tmp_path / "run", resume=True, progress=False)
    assert other.generated == 0 and len(other.judged) == 1
    assert "[id: unit] Die Antwort nennt die Einheit '°C'." in other.judged[0]
    assert again.scores[0]["general_quality_v1/score"] == 0.5


def test_rubric_groups_the_dataset_gives_in_vertexs_shape_are_used_without_generating():
    evals = pytest.importorskip("vertexai._genai.types.evals")
    rubrics = [evals.Rubric(rubric_id="sun", content=evals.RubricContent(property=evals.RubricContentProperty(
        description="回答は天気を述べている '晴れ'")), type="CONTENT").model_dump(mode="json")]
    judge = RubricJudge(GERMAN)
    result = lf.evaluate([{"case_id": "tokyo", "prompt": "東京の天気は？", "response": "晴れです。",
                           "rubric_groups": {"wetter": {"rubrics": rubrics}}}],
                         metrics=[lf.metrics.RubricMetric.GENERAL_QUALITY(rubric_group_name="wetter")], judge=judge, progress=False)
    assert judge.generated == 0
    assert result.scores[0]["general_quality_v2/score"] == 1.0
    assert result.scores[0]["general_quality_v2/rubrics"][0]["property"] == "回答は天気を述べている '晴れ'"


def test_an_empty_generated_rubric_list_is_a_failed_score_naming_the_case_with_the_answer_kept():
    judge = RubricJudge('{"rubrics": []}')
    data = EvalDataset([EvalCase(case_id="paris", prompt="Wie warm ist es in Paris?", response="21 °C")])
    row = lf.evaluate(data, metrics=["GENERAL_QUALITY"], judge=judge, progress=False).scores[0]
    assert math.isnan(row["general_quality_v2/score"]) and row["general_quality_v2/failed"] is True
    assert row["general_quality_v2/error"].startswith("case 'paris': the judge generated an empty rubric list")
    assert row["general_quality_v2/unparsed"] == ['{"rubrics": []}']
    assert "rubric_groups" not in data[0].metadata  # nothing kept: the next run asks again
    assert judge.judged == []


def test_an_unreadable_generation_answer_is_a_judge_failure_with_the_raw_answer_kept():
    judge = RubricJudge("Gute Antworten sind hilfreich.")
    with pytest.warns(JudgeAnswersUnreadableWarning, match="general_quality_v1"):
        row = lf.evaluate([{"case_id": "paris", "prompt": "Wie warm?", "response": "21 °C"}], metrics=["general_quality_v1"],
                          judge=judge, progress=False).scores[0]
    assert math.isnan(row["general_quality_v1/score"]) and row["general_quality_v1/failed"] is True
    assert "general_quality_v1/explanation" not in row
    assert row["general_quality_v1/unreadable_answer"] == "Gute Antworten sind hilfreich."
    assert '{"rubrics": [{"id": "1"' in row["general_quality_v1/error"]  # the format the generation answer needs
    assert row["general_quality_v1/unparsed"] == ["Gute Antworten sind hilfreich."]


def test_an_unreadable_verdict_is_nan_with_the_raw_answer_kept():
    def judge(prompt: str) -> str:
        return json.dumps({"rubrics": GERMAN}) if "Write the rubric" in prompt else "Sieht gut aus."

    row = lf.evaluate([{"case_id": "paris", "prompt": "Wie warm?", "response": "21 °C"}], metrics=["general_quality_v1"],
                      judge=judge, progress=False).scores[0]
    assert math.isnan(row["general_quality_v1/score"]) and row["general_quality_v1/failed"] is True
    assert row["general_quality_v1/unparsed"] == ["(no readable verdict for rubric(s) temp, unit) Sieht gut aus."]


# -- the multi-turn ones and HALLUCINATION ------------------------------------------------------------


def test_multi_turn_vertex_names_compute_as_the_adk_criteria_of_the_same_spec_name():
    def judge(prompt: str) -> str:
        rubrics = re.findall(r"\[id: ([^\]]+)\] (.*)", prompt)
        return "\n\n".join(f"ID: {i}\nProperty: {t}\nRationale: ok\nVerdict: {'no' if i == 'order' else 'yes'}" for i, t in rubrics)

    case = EvalCase(case_id="c", turns=[Turn(prompt="Schalte Licht 1 ein.", response="Erledigt.",
                                                predicted_trajectory=[lf.ToolCall(tool_name="set", tool_input={"id": 1}, agent="home")])])
    by_vertex = lf.evaluate(EvalDataset([case]), metrics=["MULTI_TURN_TOOL_USE_QUALITY"], judge=judge, progress=False).scores[0]
    by_adk = lf.evaluate(EvalDataset([case]), metrics=[lf.metrics.adk.multi_turn_tool_use_quality_v1(judge, judge_config=lf.JudgeConfig(samples=1))],
                         progress=False).scores[0]
    assert by_vertex["multi_turn_tool_use_quality_v1/score"] == by_adk["multi_turn_tool_use_quality_v1/score"] == 0.75


def test_hallucination_is_the_share_of_supported_sentences():
    def judge(prompt: str) -> str:
        if "<sentences>" in prompt:
            return ("sentence: Es sind 21 °C.\nlabel: supported\nrationale: Werkzeug sagt 21\n\n"
                    "sentence: Morgen schneit es.\nlabel: unsupported\nrationale: nicht belegt")
        return "<sentence>Es sind 21 °C.</sentence>\n<sentence>Morgen schneit es.</sentence>"

    row = lf.evaluate([{"prompt": "Wie warm?", "response": "Es sind 21 °C. Morgen schneit es."}], metrics=["HALLUCINATION"],
                      judge=judge, progress=False).scores[0]
    assert row["hallucination_v2/score"] == 0.5


def test_a_row_without_an_answer_is_not_judged_and_asks_for_no_rubrics():
    judge = RubricJudge(GERMAN)
    rows = [{"case_id": "paris", "prompt": "Wie warm ist es in Paris?", "response": "Es sind 21 °C."},
            {"case_id": "rom", "prompt": "Wie warm ist es in Rom?", "predicted_trajectory": []}]
    result = lf.evaluate(rows, metrics=["general_quality_v1"], judge=judge, progress=False)
    assert [r["general_quality_v1/score"] for r in result.scores][0] == 1.0
    assert math.isnan(result.scores[1]["general_quality_v1/score"]) and judge.generated == 1
