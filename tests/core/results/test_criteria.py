"""test_config.json criteria: reading them, ADK's defaults, and the pass/fail verdict of each case."""

from __future__ import annotations

import itertools
import json
import math
import threading
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.results.case_verdicts import apply_criteria, format_verdicts
from levelfield._core.results.criteria import (
    DEFAULT_CRITERIA,
    Criterion,
    criteria_metrics,
    find_config,
    load_criteria,
)
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

FIXTURE = Path(__file__).resolve().parents[2] / "fixture"
EVALSET = FIXTURE / "home.evalset.json"


def _judge(source, agent, criteria, trials=1):
    crit = load_criteria(criteria)
    result = lf.evaluate(source, agent, criteria_metrics(crit), progress=False, trials=trials, retries=0)
    return {v.case_id: v for v in apply_criteria(result, crit)}


def test_defaults_are_adks_defaults():
    assert DEFAULT_CRITERIA == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    assert [(c.metric, c.threshold) for c in load_criteria(None)] == list(DEFAULT_CRITERIA.items())


def test_defaults_equal_those_of_the_installed_adk():
    pytest.importorskip("google.adk")
    try:  # ADK 1.x kept them on AgentEvaluator; later versions in eval_config.
        from google.adk.evaluation.eval_config import get_evaluation_criteria_or_default

        adk_defaults = get_evaluation_criteria_or_default(None).criteria
    except ImportError:
        from google.adk.evaluation.agent_evaluator import DEFAULT_CRITERIA as adk_defaults
    assert DEFAULT_CRITERIA == adk_defaults


def test_criterion_objects_read_as_the_installed_adk_reads_them(tmp_path):
    pytest.importorskip("google.adk")
    eval_config = pytest.importorskip("google.adk.evaluation.eval_config")
    metrics = pytest.importorskip("google.adk.evaluation.eval_metrics")
    if not hasattr(metrics, "ToolTrajectoryCriterion"):
        pytest.skip("this ADK has no trajectory match types")
    config = {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER",
                                                         "ignore_args": True},
                           "response_match_score": 0.7}}
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(config))
    adk = {m.metric_name: m for m in eval_config.get_eval_metrics_from_config(
        eval_config.get_evaluation_criteria_or_default(str(path)))}
    adk_traj = metrics.ToolTrajectoryCriterion.model_validate(adk["tool_trajectory_avg_score"].criterion.model_dump())
    ours = {c.metric: c for c in load_criteria(path)}
    assert (ours["tool_trajectory_avg_score"].threshold, ours["tool_trajectory_avg_score"].match_type,
            ours["tool_trajectory_avg_score"].ignore_args) == (adk_traj.threshold, adk_traj.match_type.name,
                                                             adk_traj.ignore_args)
    assert ours["response_match_score"].threshold == adk["response_match_score"].threshold


def test_test_config_file_is_read():
    assert [(c.metric, c.threshold) for c in load_criteria(FIXTURE / "test_config.json")] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]


def test_config_is_found_beside_a_file_and_inside_a_folder(tmp_path):
    assert find_config(EVALSET) == FIXTURE / "test_config.json"
    assert find_config(FIXTURE) == FIXTURE / "test_config.json"
    assert find_config(tmp_path) is None


def test_folder_without_config_gets_the_defaults(tmp_path):
    assert [(c.metric, c.threshold) for c in load_criteria(tmp_path)] == list(DEFAULT_CRITERIA.items())


def test_criterion_object_takes_match_type_and_ignore_args():
    (c,) = load_criteria({"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "in-order",
                                                                     "ignore_args": True}}})
    assert (c.threshold, c.match_type, c.ignore_args) == (0.5, "IN_ORDER", True)
    metric = c.build_metric()
    assert (metric.match_type, metric.ignore_args) == ("IN_ORDER", True)


def test_criterion_accepts_camel_case_and_adks_enum_numbers():
    (c,) = load_criteria({"tool_trajectory_avg_score": {"threshold": 1, "matchType": 2}})
    assert c.match_type == "ANY_ORDER"


def test_other_levelfield_metrics_can_be_criteria():
    (c,) = load_criteria({"trajectory_recall": 0.9})
    assert c.build_metric().name == "trajectory_recall"


def test_judged_adk_criterion_without_a_judge_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"final_response_match_v2": 0.5}}))
    (criterion,) = load_criteria(path)
    with pytest.raises(lf.MetricError, match=r"test_config.json: criterion 'final_response_match_v2' needs a judge.*--judge"):
        criteria_metrics([criterion])


def test_judged_adk_criterion_is_built_with_the_judge_and_the_files_options(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judgeModelOptions": {"numSamples": 3}}}}))
    (metric,) = criteria_metrics(load_criteria(path), judge=lambda prompt: '{"verdict": "valid"}')
    assert (metric.name, metric.num_samples) == ("final_response_match_v2", 3)


def test_a_misspelt_criterion_suggests_the_nearest_name():
    with pytest.raises(lf.MetricError, match=r"unknown criterion 'final_respons_match_v2'\. Did you mean 'final_response_match_v2'\?"):
        load_criteria({"final_respons_match_v2": 0.5})


def test_bad_judge_options_are_refused_naming_the_criterion():
    with pytest.raises(lf.MetricError, match=r"'safety_v1' judge_model_options.num_samples must be a positive integer"):
        load_criteria({"safety_v1": {"threshold": 1, "judge_model_options": {"num_samples": 0}}})


@pytest.mark.parametrize("name", ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"])
def test_a_threshold_for_an_efficiency_criterion_is_refused_with_adks_reason(name):
    # google-adk 2.x: "`<name>` does not support a threshold: ... it is reported automatically on every eval."
    with pytest.raises(lf.MetricError, match=rf"`{name}` does not support a threshold: it reports a value and never "
                                              r"passes or fails\. Remove it from `criteria` entirely; it is reported "
                                              r"automatically on every eval\."):
        load_criteria({"tool_trajectory_avg_score": 1.0, name: 2})


def test_efficiency_criteria_are_informational():
    from levelfield._core.results.criteria import efficiency_criteria

    criteria = efficiency_criteria()
    assert [c.metric for c in criteria] == ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                                            "invocation_duration_v1"]
    assert all(c.informational for c in criteria)
    assert criteria[0].describe() == "tool_call_count_v1 (informational)"


def test_unknown_metric_is_refused():
    with pytest.raises(lf.MetricError, match="unknown criterion 'tool_score'"):
        load_criteria({"tool_score": 1.0})


def test_threshold_must_be_a_number():
    with pytest.raises(lf.MetricError, match="'response_match_score' must be a threshold number"):
        load_criteria({"response_match_score": "high"})


def test_match_type_must_be_known():
    with pytest.raises(lf.MetricError, match='criteria.tool_trajectory_avg_score.match_type = "SOMETIMES" is not one of EXACT, IN_ORDER, ANY_ORDER'):
        load_criteria({"tool_trajectory_avg_score": {"threshold": 1, "match_type": "SOMETIMES"}})


def test_config_without_criteria_object_is_refused(tmp_path):
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"tool_trajectory_avg_score": 1.0}))
    with pytest.raises(lf.MetricError, match=r'expected \{"criteria"'):
        load_criteria(path)


def test_case_passes_when_every_metric_meets_its_threshold():
    verdicts = _judge(EVALSET, careful_agent, {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})
    assert verdicts["turn_off_device_2"].passed
    assert verdicts["turn_off_device_2"].reasons == []


def test_case_fails_when_one_metric_is_below_its_threshold():
    verdicts = _judge(EVALSET, hasty_agent, {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8})
    warmer = verdicts["warmer_room"]
    assert not warmer.passed
    assert warmer.reasons == ["tool_trajectory_avg_score 0.000 < 1"]
    assert warmer.metrics["response_match_score"].passed


def test_threshold_is_inclusive():
    verdicts = _judge(FIXTURE / "lights.test.json", hasty_agent, {"tool_trajectory_avg_score": 0.5})
    assert verdicts["lights"].metrics["tool_trajectory_avg_score"].score == 0.5
    assert verdicts["lights"].passed


def test_match_type_from_criteria_changes_the_verdict():
    strict = _judge(f"{EVALSET}:warmer_room", hasty_agent, {"tool_trajectory_avg_score": 1.0})
    loose = _judge(f"{EVALSET}:warmer_room", hasty_agent,
                   {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "ANY_ORDER"}})
    assert (strict["warmer_room"].passed, loose["warmer_room"].passed) == (False, True)


def test_trials_pool_every_turn_of_every_trial_as_adk_does():
    # Trial 1 gets both turns right, trial 2 only the first: ADK pools the 4 turn scores -> 0.75.
    calls = itertools.count()
    lock = threading.Lock()

    def flaky(prompt):
        with lock:
            n = next(calls)
        return careful_agent(prompt) if n < 3 else hasty_agent(prompt)

    verdicts = _judge(FIXTURE / "lights.test.json", flaky, {"tool_trajectory_avg_score": 0.75}, trials=2)
    metric = verdicts["lights"].metrics["tool_trajectory_avg_score"]
    assert sorted(metric.per_trial) == [0.5, 1.0]
    assert metric.score == 0.75
    assert verdicts["lights"].passed


def test_a_failed_run_fails_its_case_whatever_the_other_trials_scored():
    calls = itertools.count()
    lock = threading.Lock()

    def crashes_once(prompt):
        with lock:
            n = next(calls)
        if n == 0:
            raise RuntimeError("model overloaded")
        return careful_agent(prompt)

    verdicts = _judge(FIXTURE / "thermostat.test.json", crashes_once, None, trials=2)
    verdict = verdicts["thermostat"]
    assert verdict.metrics["tool_trajectory_avg_score"].score == 1.0
    assert not verdict.passed
    assert verdict.reasons[0].endswith("RuntimeError: model overloaded")


def test_a_criterion_that_cannot_be_scored_fails_the_case(tmp_path):
    path = tmp_path / "noref.test.json"
    path.write_text(json.dumps([{"query": "Hello, what can you do?", "expected_tool_use": []}]))
    verdict = _judge(path, careful_agent, None)["noref"]
    assert math.isnan(verdict.metrics["response_match_score"].score)
    assert not verdict.passed
    assert "response_match_score could not be computed" in verdict.reasons[0]


def test_judge_needs_the_criteria_metrics_in_the_result():
    result = lf.evaluate(EVALSET, careful_agent, ["trajectory_exact_match"], progress=False)
    with pytest.raises(lf.MetricError, match="no scores for tool_trajectory_avg_score"):
        apply_criteria(result, [Criterion("tool_trajectory_avg_score", 1.0)])


def test_table_shows_each_case_its_scores_and_the_verdict():
    crit = load_criteria(None)
    result = lf.evaluate(f"{EVALSET}:turn_off_device_2,kitchen_all_off", hasty_agent, criteria_metrics(crit),
                         progress=False)
    lines = format_verdicts(apply_criteria(result, crit), crit).splitlines()
    assert lines[0].split() == ["case", "tool_trajectory_avg_score", "(>=", "1)", "response_match_score", "(>=",
                                "0.8)", "failed", "runs", "result"]
    # Each criterion says whether the case met it, then the case's verdict.
    assert lines[1].split() == ["turn_off_device_2", "1.000", "pass", "1.000", "pass", "0/1", "PASS"]
    assert lines[2].split() == ["kitchen_all_off", "0.000", "FAIL", "0.444", "FAIL", "0/1", "FAIL"]
    assert lines[-1] == "1 of 2 cases passed"


def test_files_asking_the_same_metric_with_other_options_get_their_own_score_column(tmp_path):
    from levelfield._core.results.criteria import criteria_by_file

    for name, match_type in (("a", "EXACT"), ("b", "IN_ORDER")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "test_config.json").write_text(json.dumps(
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": match_type}}}))
        (folder / "x.test.json").write_text("[]")
    per_case = criteria_by_file({"a": tmp_path / "a" / "x.test.json", "b": tmp_path / "b" / "x.test.json"})
    assert [c.score_name for c in per_case["a"]] == ["tool_trajectory_avg_score"]
    assert [c.score_name for c in per_case["b"]] == ["tool_trajectory_avg_score[IN_ORDER]"]
    assert sorted(m.name for m in criteria_metrics(per_case)) == [
        "tool_trajectory_avg_score", "tool_trajectory_avg_score[IN_ORDER]"]
