"""Baselines: saved runs join a comparison as an agent, paired by case and trial, never re-run."""

import numpy as np
import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError, ConfigTypeError

CASES = [
    {"case_id": "a", "prompt": "turn on light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "b", "prompt": "turn off light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
    {"case_id": "c", "prompt": "dim light", "reference": "done",
     "reference_trajectory": [{"tool_name": "dim", "tool_input": {"level": 3}}]},
]
# The old dataset had case "x" (since removed) and lacked "c" (added since).
OLD_CASES = [CASES[0], CASES[1], {"case_id": "x", "prompt": "open door", "reference": "done"}]
METRICS = ["trajectory_exact_match", "exact_match"]
calls = {"old": 0}


def old_agent(prompt):
    calls["old"] += 1
    on = "on " in prompt
    return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": on}}]}


def new_agent(prompt):
    if "dim" in prompt:
        return {"response": "done", "predicted_trajectory": [{"tool_name": "dim", "tool_input": {"level": 3}}]}
    return {"response": "ok", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": None}}]}


@pytest.fixture
def saved(tmp_path):
    """The --out folder of an earlier eval of the old agent on the old dataset, named 'main'."""
    lf.compare(OLD_CASES, {"old": old_agent}, ["exact_match"], progress=False).save(tmp_path / "main")
    calls["old"] = 0
    return tmp_path / "main"


def test_a_saved_folder_joins_as_an_agent_named_after_the_folder(saved):
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    assert cmp.agents == ["new", "main"] and cmp.baseline.name == "main"


def test_the_baseline_is_not_run_again(saved):
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    assert calls["old"] == 0
    assert [r.output.response for r in cmp.results["main"].runs] == ["done", "done"]


def test_cases_on_one_side_only_are_reported(saved):
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    assert (cmp.baseline.missing_cases, cmp.baseline.extra_cases) == (["c"], ["x"])
    assert "no run for 1 case(s): c" in cmp.baseline.describe()
    assert "1 case(s) not in the dataset, left out: x" in cmp.baseline.describe()


def test_only_cases_on_both_sides_are_paired(saved):
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    row = cmp.pairwise("trajectory_exact_match").iloc[0]
    assert (row["agent_a"], row["agent_b"], row["n"], row["losses"]) == ("new", "main", 2, 2)


def test_baseline_runs_are_scored_with_the_new_metrics_from_their_saved_outputs(saved):
    # The folder was saved with exact_match only; trajectory_exact_match is computed from its trajectories.
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    scores = cmp.case_scores("trajectory_exact_match")["main"]
    assert scores.loc["a"] == 1.0 and scores.loc["b"] == 1.0 and np.isnan(scores.loc["c"])


def test_an_eval_result_can_be_the_baseline():
    result = lf.evaluate(CASES, old_agent, METRICS, progress=False)
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline={"v1": result}, progress=False)
    assert cmp.agents == ["new", "v1"] and cmp.baseline.missing_cases == []


def test_baseline_trials_pair_with_new_trials():
    result = lf.evaluate(CASES, old_agent, METRICS, trials=2, progress=False)
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline={"v1": result}, trials=2, progress=False)
    assert cmp.baseline.trials == 2
    assert not np.isnan(cmp.trial_scores("exact_match", "v1")).any()


def test_a_baseline_named_like_an_agent_is_refused(saved):
    with pytest.raises(ConfigError, match="named 'main' like an agent"):
        lf.compare(CASES, {"main": new_agent}, METRICS, baseline=saved, progress=False)


def test_a_missing_folder_says_what_a_baseline_is(tmp_path):
    with pytest.raises(ConfigError, match="no such folder; give the --out folder"):
        lf.compare(CASES, {"new": new_agent}, METRICS, baseline=tmp_path / "nope", progress=False)


def test_a_folder_with_several_agents_asks_which_one(tmp_path):
    lf.compare(CASES, {"p": old_agent, "q": new_agent}, METRICS, progress=False).save(tmp_path / "two")
    with pytest.raises(ConfigError, match=r"holds 2 agents \(p, q\); pick one"):
        lf.compare(CASES, {"new": new_agent}, METRICS, baseline=tmp_path / "two", progress=False)


def test_a_baseline_of_the_wrong_kind_is_a_type_error():
    with pytest.raises(ConfigTypeError, match="got int"):
        lf.compare(CASES, {"new": new_agent}, METRICS, baseline=42, progress=False)


def test_the_report_section_states_each_change_in_words(saved):
    from levelfield.report.changes import baseline_section

    cmp = lf.compare(CASES, {"新しい": new_agent}, METRICS, baseline=saved, progress=False)
    section = baseline_section(cmp)
    assert section.startswith('<section id="baseline"><h2>Against the baseline</h2>')
    assert "<b>trajectory_exact_match</b> (新しい): no significant change (worse than main by 100.0 points" in section
    assert "no run for 1 case(s): c" in section


def test_the_report_section_is_empty_without_a_baseline():
    from levelfield.report.changes import baseline_section

    assert baseline_section(lf.compare(CASES, {"new": new_agent}, METRICS, progress=False)) == ""


def test_a_judged_metric_keeps_the_baselines_saved_scores_without_asking_the_judge_again(tmp_path, monkeypatch):
    from levelfield.testing import ScriptedChatModel

    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))
    asked = []

    def judge(messages):
        asked.append(1)
        return "score: 1"

    template = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"Done": "Did the agent finish?"}, rating_rubric={"1": "yes", "0": "no"}, input_variables=["prompt"])

    def metric():
        return lf.metrics.PointwiseMetric("done", template, ScriptedChatModel(judge), judge_config=lf.JudgeConfig(cache=False, structured_output=False, backoff=0.0))

    lf.compare(CASES, {"old": old_agent}, [metric()], progress=False).save(tmp_path / "main")
    asked.clear()
    cmp = lf.compare(CASES, {"new": new_agent}, [metric()], baseline=tmp_path / "main", progress=False)
    assert len(asked) == len(CASES)  # the new agent's runs only
    assert cmp.case_scores("done")["main"].tolist() == [1.0, 1.0, 1.0]


def test_a_baseline_with_more_trials_says_which_are_compared():
    result = lf.evaluate(CASES, old_agent, METRICS, trials=3, progress=False)
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline={"v1": result}, progress=False)
    assert "it ran 3 trials per case; the first 1 are compared" in cmp.baseline.describe()


def test_a_run_with_a_baseline_resumes_from_its_out_folder(tmp_path):
    result = lf.evaluate(CASES, old_agent, METRICS, progress=False)
    first = lf.compare(CASES, {"new": new_agent}, METRICS, baseline={"v1": result}, out=tmp_path / "new", progress=False)
    again = lf.compare(CASES, {"new": new_agent}, METRICS, baseline={"v1": result}, out=tmp_path / "new", resume=True,
                       progress=False)
    assert again.agents == first.agents == ["new", "v1"]
    assert len(again.results["new"].runs) == len(CASES)


def test_the_html_report_shows_the_baseline_section_and_links_it(saved, tmp_path):
    cmp = lf.compare(CASES, {"new": new_agent}, METRICS, baseline=saved, progress=False)
    page = lf.report.write(cmp, tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<section id="baseline"><h2>Against the baseline</h2>' in page
    assert '<a href="#baseline">Baseline</a>' in page
    assert page.index('id="baseline"') < page.index('id="summary"')
