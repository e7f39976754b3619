"""The run record: save -> load gives the same results and summaries, for every kind of metric."""

import json
import math

import numpy as np
import pytest

import levelfield as lf
from levelfield import Comparison
from levelfield._core.results.record import FORMAT, VERSION, read_record
from levelfield._core.score.metrics.base import Metric, Score

CASES = [
    {"case_id": "a", "prompt": "turn on light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "b", "prompt": "turn off light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
    {"case_id": "c", "prompt": "say hi", "reference": "你好，世界", "reference_trajectory": []},
    {"case_id": "d", "prompt": "no reference here"},
]


def right(prompt):
    if "light" in prompt:
        return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": "on " in prompt}}]}
    return {"response": "你好，世界", "predicted_trajectory": []}


def crashes_without_reference(prompt):
    if "no reference" in prompt:
        raise RuntimeError("nothing to do")
    return right(prompt)


class NeedsReference(Metric):
    """A metric outside the registry that needs a reference: 1 when the response equals it."""

    requires = ("reference", "response")

    def __init__(self, name: str = "my_match") -> None:
        self.name = name

    def score(self, ctx):
        return Score(float(ctx.response == ctx.reference), explanation=f"{ctx.response!r} vs {ctx.reference!r}")


def judged_metric():
    from levelfield.testing import ScriptedChatModel

    judge = ScriptedChatModel(lambda messages: '{"score": 1, "explanation": "fine"}')
    template = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"ok": "Is the response fine?"}, rating_rubric={"1": "fine", "0": "not fine"},
        input_variables=["prompt"],
    )
    return lf.metrics.PointwiseMetric(metric="judged_ok", metric_prompt_template=template, judge=judge, judge_config=lf.JudgeConfig(cache=False))


EVERY_KIND = [
    "trajectory_exact_match", "trajectory_recall", "rouge_l_sum", "bleu", "exact_match",
    lf.metrics.TrajectoryRecall(matcher=lf.ToolCallMatcher(args="ignore"), name="recall_names"),
    lf.metrics.TrajectorySingleToolUse(tool_name="switch"),
    lf.metrics.CustomMetric(name="long", metric_function=lambda row: {"long": float(len(row["response"] or "") > 3)}),
    NeedsReference(),
]


def _metric_summary(frame):
    return frame.drop(columns=[c for c in frame if c.startswith("latency")]).to_numpy(float)


def test_saved_comparison_with_a_failed_run_and_no_reference_keeps_its_summary(tmp_path):
    # The case issue 21 names: a metric outside the registry that requires a reference, and a
    # failed run on the case that has none. Before: mean 1.0 n 1, after loading: 0.5 n 2.
    cmp = lf.compare(CASES, {"a": crashes_without_reference}, [NeedsReference()], progress=False)
    assert cmp.summary.loc["a", "my_match/mean"] == 1.0 and cmp.summary.loc["a", "my_match/n"] == 3
    cmp.save(tmp_path)
    loaded = Comparison.load(tmp_path)
    assert loaded.summary.loc["a", "my_match/mean"] == 1.0
    assert loaded.summary.loc["a", "my_match/n"] == 3
    assert loaded.metrics[0].requires == ("reference", "response")


def test_save_load_gives_the_same_comparison_summary_for_every_metric_kind(tmp_path):
    metrics = [*EVERY_KIND, judged_metric()]
    cmp = lf.compare(CASES, {"right": right, "crashy": crashes_without_reference}, metrics, trials=2, progress=False)
    cmp.save(tmp_path)
    loaded = Comparison.load(tmp_path)
    assert list(loaded.summary.columns) == list(cmp.summary.columns)
    np.testing.assert_allclose(_metric_summary(loaded.summary), _metric_summary(cmp.summary))
    for metric in cmp.metric_names:
        np.testing.assert_allclose(
            loaded.pairwise(metric)[["difference", "p_value"]].to_numpy(float),
            cmp.pairwise(metric)[["difference", "p_value"]].to_numpy(float),
        )


def test_save_load_gives_the_same_evaluation_summary_and_table(tmp_path):
    result = lf.evaluate(CASES, crashes_without_reference, [*EVERY_KIND, judged_metric()], progress=False)
    result.save(tmp_path)
    loaded = lf.EvalResult.load(tmp_path)
    before, after = result.summary_metrics, loaded.summary_metrics
    assert before.keys() == after.keys()
    for key in before:
        assert before[key] == pytest.approx(after[key], nan_ok=True), key
    assert loaded.scores[2]["my_match/explanation"] == result.scores[2]["my_match/explanation"]
    assert list(loaded.metrics_table["case_id"]) == ["a", "b", "c", "d"]
    assert loaded.runs[3].failure and "nothing to do" in loaded.runs[3].error


def test_saved_predictions_round_trip(tmp_path):
    rows = [dict(c, response="done", predicted_trajectory=c.get("reference_trajectory") or []) for c in CASES]
    result = lf.evaluate(rows, metrics=["trajectory_exact_match", "exact_match"])
    result.save(tmp_path)
    loaded = lf.EvalResult.load(tmp_path)
    assert loaded.scored_saved_predictions and loaded.agent_name is None
    assert loaded.summary_metrics["exact_match/mean"] == result.summary_metrics["exact_match/mean"]


def test_the_record_has_a_versioned_header_with_metric_specs_and_options(tmp_path):
    lf.compare(CASES, {"right": right}, ["trajectory_exact_match", NeedsReference()], progress=False,
               out=tmp_path, timeout=30)
    header = json.loads((tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == FORMAT and header["version"] == VERSION and header["status"] == "complete"
    assert header["agents"] == ["right"] and header["dataset"]["cases"] == 4
    specs = {m["name"]: m for m in header["metrics"]}
    assert specs["my_match"]["requires"] == ["reference", "response"]
    assert specs["my_match"]["class"].endswith("NeedsReference")
    assert header["options"]["timeout"] == 30 and header["settings"]["failed_runs"] == "zero"


def test_non_latin_text_is_kept_verbatim_in_the_record(tmp_path):
    lf.evaluate(CASES, right, ["exact_match"], progress=False, out=tmp_path)
    text = (tmp_path / "runs.jsonl").read_text(encoding="utf-8")
    assert "你好，世界" in text
    assert lf.EvalResult.load(tmp_path).runs[2].output.response == "你好，世界"


def test_agent_data_json_cannot_hold_is_saved_in_a_faithful_text_form(tmp_path):
    import datetime

    def odd(prompt):
        return {"response": "ok", "predicted_trajectory": [
            {"tool_name": "t", "tool_input": {"when": datetime.date(2026, 1, 2), "tags": {"x"}, "ratio": math.nan},
             "tool_output": object()}]}

    result = lf.evaluate(CASES[:1], odd, ["trajectory_exact_match"], progress=False, out=tmp_path)
    call = lf.EvalResult.load(tmp_path).runs[0].output.trajectory[0]
    assert call.tool_input == {"when": "2026-01-02", "tags": ["x"], "ratio": None}
    assert call.tool_output.startswith("<object object")
    assert result.runs[0].output.trajectory[0].tool_input["when"] == datetime.date(2026, 1, 2)


def test_a_newer_record_version_is_a_clear_error(tmp_path):
    lf.evaluate(CASES, right, ["exact_match"], progress=False, out=tmp_path)
    path = tmp_path / "runs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["version"] = VERSION + 1
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(lf.RecordError, match="newer than this levelfield reads"):
        read_record(tmp_path)


def test_a_file_that_is_not_a_record_is_named(tmp_path):
    (tmp_path / "runs.jsonl").write_text('{"case_id": "a"}\n', encoding="utf-8")
    with pytest.raises(lf.RecordError, match="not a levelfield run record"):
        Comparison.load(tmp_path)


def test_a_broken_line_in_the_middle_names_its_line(tmp_path):
    lf.evaluate(CASES, right, ["exact_match"], progress=False, out=tmp_path)
    path = tmp_path / "runs.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:10]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(lf.RecordError, match="line 3"):
        read_record(path)


def test_a_record_of_several_agents_needs_an_agent_to_load_as_one_result(tmp_path):
    lf.compare(CASES, {"x": right, "y": crashes_without_reference}, ["exact_match"], progress=False, out=tmp_path)
    with pytest.raises(lf.RecordError, match="2 agents"):
        lf.EvalResult.load(tmp_path)
    assert lf.EvalResult.load(tmp_path, agent="y").agent_name == "y"


def test_max_reducer_counts_a_case_solved_when_any_trial_solved_it():
    calls = {"n": 0}

    def every_other(prompt):
        calls["n"] += 1
        return right(prompt) if calls["n"] % 2 else {"response": "no", "predicted_trajectory": []}

    cases = CASES[:2]
    mean = lf.compare(cases, {"x": every_other}, ["trajectory_exact_match"], trials=2, concurrency=1, progress=False)
    calls["n"] = 0
    best = lf.compare(cases, {"x": every_other}, ["trajectory_exact_match"], trials=2, concurrency=1,
                      progress=False, stats=lf.StatsConfig(reducer="max"))
    assert mean.summary.loc["x", "trajectory_exact_match/mean"] == 0.5
    assert best.summary.loc["x", "trajectory_exact_match/mean"] == 1.0


def test_an_unknown_reducer_is_a_config_error_before_any_run():
    def never(prompt):
        raise AssertionError("must not run")

    with pytest.raises(lf.ConfigError, match="reducer='best'"):
        lf.compare(CASES, {"x": never}, ["exact_match"], stats=lf.StatsConfig(reducer="best"), progress=False)


def test_arguments_that_contain_themselves_score_no_match_and_save(tmp_path):
    def loops(prompt):
        args = {"on": True}
        args["again"] = args
        return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": args}]}

    cmp = lf.compare(CASES[:1], {"loops": loops}, ["trajectory_exact_match", "trajectory_recall"], progress=False,
                     out=tmp_path)
    assert cmp.summary.loc["loops", "trajectory_recall/mean"] == 0.0
    call = Comparison.load(tmp_path).results["loops"].runs[0].output.trajectory[0]
    assert call.tool_input["on"] is True and "cycle" in json.dumps(call.tool_input)


def test_the_report_states_the_trial_reducer(tmp_path):
    cmp = lf.compare(CASES[:2], {"x": right}, ["trajectory_exact_match"], trials=2, stats=lf.StatsConfig(reducer="max"), progress=False)
    page = lf.report.write(cmp, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "trials are reduced by their max per case first" in page
