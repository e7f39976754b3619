"""Every field of a test_config.json checked, beside google-adk's own reading of the same file.

Each bad file is refused with the file, the key path and the fix. The differential half runs ADK's
own validation on every file (``EvalConfig.model_validate_json``, ``get_eval_metrics_from_config``
and the registry's ``get_evaluator``, which checks each criterion against its evaluator's type):
where ADK refuses a file, levelfield refuses it too; where ADK lets a mistake through, the table says
why levelfield is stricter; and both accept every good file.
"""

from __future__ import annotations

import json
import warnings

import pytest

import levelfield as lf
import levelfield.judge  # noqa: F401  (registers ADK's judged criteria)
from levelfield._core.results.criteria import load_criteria
from levelfield.cli.main import main

RUBRIC = {"rubric_id": "cites", "rubric_content": {"text_property": "The answer names its source."}}


def _rubric_criterion(rubrics):
    return {"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.8, "rubrics": rubrics}}}


# (id, file content as JSON text, key path and words the error must hold)
REFUSED_BY_BOTH = [
    ("null threshold", '{"criteria": {"response_match_score": null}}', r"criteria\.response_match_score = null"),
    ("treshold typo alone", '{"criteria": {"tool_trajectory_avg_score": {"treshold": 1.0}}}',
     r"criteria\.tool_trajectory_avg_score\.treshold: unknown key\. Did you mean 'threshold'\?"),
    ("match_type unknown", '{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}}',
     r"criteria\.tool_trajectory_avg_score\.match_type = \"FUZZY\" is not one of EXACT, IN_ORDER, ANY_ORDER"),
    ("misspelt criterion", '{"criteria": {"tool_trajectory_avg_scor": 1.0}}',
     r"unknown criterion 'tool_trajectory_avg_scor'\. Did you mean 'tool_trajectory_avg_score'\?"),
    ("rubrics as a string", json.dumps(_rubric_criterion("The answer is polite.")),
     r"criteria\.rubric_based_final_response_quality_v1\.rubrics: rubrics must be a list of rubric objects, got str"),
    ("rubric without id", json.dumps(_rubric_criterion([{"rubric_content": {"text_property": "x"}}])),
     r"criteria\.rubric_based_final_response_quality_v1\.rubrics\[0\]\.rubric_id: every rubric needs a rubric_id"),
    ("rubric without content", json.dumps(_rubric_criterion([{"rubric_id": "a"}])),
     r"rubrics\[0\]\.rubric_content: give an object"),
    ("rubric with an unknown key", json.dumps(_rubric_criterion([{**RUBRIC, "wieght": 2}])),
     r"rubrics\[0\]\.wieght: unknown key\."),
    ("rubric content misspelt", json.dumps(_rubric_criterion([{"rubric_id": "a", "rubric_content": {"text_propery": "x"}}])),
     r"rubrics\[0\]\.rubric_content\.text_propery: unknown key\. Did you mean 'text_property'\?"),
    ("rubric entry a string", json.dumps(_rubric_criterion(["be polite"])), r"rubrics\[0\]: a rubric must be an object"),
    ("judge option misspelt", '{"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_sample": 3}}}}',
     r"criteria\.final_response_match_v2\.judge_model_options\.num_sample: unknown key\. Did you mean 'num_samples'\?"),
    ("num_samples 0", '{"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 0}}}}',
     r"judge_model_options\.num_samples: .* must be a positive integer, got 0"),
    ("efficiency threshold", '{"criteria": {"tool_call_count_v1": 3}}', r"`tool_call_count_v1` does not support a threshold"),
    ("criteria a list", '{"criteria": ["response_match_score"]}', r"expected \{\"criteria\": .*criteria is list"),
    ("include_intermediate not a flag", '{"criteria": {"response_match_score": {"threshold": 0.5, "include_intermediate_responses_in_final": "x"}}}',
     r"criteria\.response_match_score\.include_intermediate_responses_in_final = \"x\": give true or false"),
    ("custom metric", '{"criteria": {"my_metric": 0.5}, "custom_metrics": {"my_metric": {"code_config": {"name": "a.b"}}}}',
     r"custom_metrics: ADK's custom metric functions are not loaded"),
]

# ADK accepts these files; levelfield refuses them, and why.
STRICTER_THAN_ADK = [
    ("threshold 1.5", '{"criteria": {"response_match_score": 1.5}}',
     r"criteria\.response_match_score = 1\.5 is out of range: response_match_score is a score from 0 to 1",
     "every score lies in [0, 1] (ADK's own MetricInfo interval for it is 0 to 1): a case could never pass"),
    ("threshold -0.5", '{"criteria": {"response_match_score": -0.5}}',
     r"criteria\.response_match_score = -0\.5 is out of range", "a case would always pass"),
    ("threshold NaN", '{"criteria": {"tool_trajectory_avg_score": NaN}}',
     r"criteria\.tool_trajectory_avg_score = nan is out of range", "score >= NaN is never true: a silent fail"),
    ("threshold Infinity", '{"criteria": {"tool_trajectory_avg_score": {"threshold": Infinity}}}',
     r"criteria\.tool_trajectory_avg_score\.threshold = inf is out of range", "never passes"),
    ("threshold a string", '{"criteria": {"response_match_score": {"threshold": "0.8"}}}',
     r"criteria\.response_match_score\.threshold = \"0\.8\": a threshold must be a number",
     "pydantic's lax mode turns \"0.8\" into 0.8; a quoted number is a slip, and \"high\" would not be"),
    ("threshold true", '{"criteria": {"response_match_score": true}}', r"criteria\.response_match_score = true",
     "pydantic turns true into 1.0"),
    ("treshold beside threshold", '{"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "treshold": 0.5}}}',
     r"criteria\.tool_trajectory_avg_score\.treshold: unknown key\. Did you mean 'threshold'\?",
     "ADK's BaseCriterion allows extra keys and drops them"),
    ("ignore_args as a word", '{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "yes"}}}',
     r"criteria\.tool_trajectory_avg_score\.ignore_args = \"yes\": give true or false", "pydantic reads \"yes\" as true"),
    ("flag as a word", '{"criteria": {"hallucinations_v1": {"threshold": 0.5, "evaluate_intermediate_nl_responses": "yes"}}}',
     r"criteria\.hallucinations_v1\.evaluate_intermediate_nl_responses: .* must be true or false", "pydantic reads \"yes\" as true"),
    ("rubric without text", json.dumps(_rubric_criterion([{"rubric_id": "a", "rubric_content": {}}])),
     r"rubrics\[0\]\.rubric_content\.text_property: give the property",
     "ADK's text_property is optional, which leaves the judge nothing to judge"),
    ("top-level key misspelt", '{"criterias": {"response_match_score": 0.8}}',
     r"\(top level\)\.criterias: unknown key\. Did you mean 'criteria'\?",
     "ADK's EvalConfig ignores unknown keys and runs its defaults instead"),
    ("top-level key unknown", '{"criteria": {"response_match_score": 0.8}, "foo": 1}', r"\(top level\)\.foo: unknown key",
     "ignored by ADK"),
    ("rubrics on a criterion without them", '{"criteria": {"final_response_match_v2": {"threshold": 0.5, "rubrics": []}}}',
     r"criteria\.final_response_match_v2\.rubrics: unknown key", "ADK keeps the extra key and ignores it"),
    ("intermediate on a final-answer metric", '{"criteria": {"response_match_score": {"threshold": 0.5, "include_intermediate_responses_in_final": true}}}',
     r"include_intermediate_responses_in_final: response_match_score reads only the final answer",
     "ADK's response_match_score does not read the flag either, but keeps it silently"),
    ("num_samples on a once-sampled criterion", '{"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}}}}',
     r"criteria\.safety_v1\.judge_model_options\.num_samples = 3: safety_v1 asks its judge once", "ignored by ADK"),
    ("user simulator settings", '{"criteria": {"response_match_score": 0.8}, "user_simulator_config": {"model": "x"}}',
     r"user_simulator_config: levelfield does not read", "levelfield takes the simulator as simulator=..."),
    ("no criteria", '{"criteria": {}}', r"no criteria given", "ADK then reports efficiency only and passes every case"),
    ("retired ADK score", '{"criteria": {"response_evaluation_score": 4.0}}',
     r"'response_evaluation_score' is not computed by levelfield", "a Vertex coherence score, deprecated in ADK"),
]

GOOD = [
    '{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}',
    '{"criteria": {"tool_trajectory_avg_score": 0, "response_match_score": 1}}',
    '{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": "IN_ORDER", "ignoreArgs": true}}}',
    '{"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": 2}}}',
    json.dumps(_rubric_criterion([RUBRIC, {**RUBRIC, "rubric_id": "b", "type": "FINAL_RESPONSE_QUALITY", "description": "d"}])),
    '{"criteria": {"final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": {"judgeModel": "gemini-2.5-flash", "numSamples": 3, "parallelismLimit": 2}}}}',
    '{"criteria": {"hallucinations_v1": {"threshold": 0.5, "evaluate_intermediate_nl_responses": true}}}',
    '{"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.5, "include_intermediate_responses_in_final": true, "rubrics": []}}}',
    '{"criteria": {"safety_v1": 0.8, "multi_turn_task_success_v1": 0.5, "per_turn_user_simulator_quality_v1": {"threshold": 1.0, "stop_signal": "</done>"}}}',
]


def _adk_reads(text: str) -> None:
    """ADK's own reading of a test_config.json: raises where ADK refuses it, before or while building its evaluators."""
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ADK marks its judged evaluators experimental
        for metric in get_eval_metrics_from_config(EvalConfig.model_validate_json(text)):
            DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)


def _write(tmp_path, text):
    path = tmp_path / "test_config.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, message", [c[1:] for c in REFUSED_BY_BOTH], ids=[c[0] for c in REFUSED_BY_BOTH])
def test_a_file_adk_refuses_is_refused_naming_the_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, text)
    from google.adk.errors.not_found_error import NotFoundError

    with pytest.raises((ValueError, TypeError, KeyError, NotFoundError)):  # ADK's own refusal
        _adk_reads(text)
    with pytest.raises(lf.MetricError, match=message) as caught:
        load_criteria(path)
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize("text, message, why", [c[1:] for c in STRICTER_THAN_ADK], ids=[c[0] for c in STRICTER_THAN_ADK])
def test_a_mistake_adk_lets_through_is_refused_naming_the_file_and_key(tmp_path, text, message, why):
    path = _write(tmp_path, text)
    _adk_reads(text)  # accepted by ADK: levelfield is stricter, for the reason given as `why`
    with pytest.raises(lf.MetricError, match=message) as caught:
        load_criteria(path)
    assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize("text", GOOD)
def test_a_good_file_is_read_by_both(tmp_path, text):
    _adk_reads(text)
    criteria = load_criteria(_write(tmp_path, text))
    assert {c.metric for c in criteria} == set(json.loads(text)["criteria"])


def test_thresholds_read_are_the_files(tmp_path):
    criteria = load_criteria(_write(tmp_path, GOOD[1]))
    assert [(c.metric, c.threshold) for c in criteria] == [("tool_trajectory_avg_score", 0.0), ("response_match_score", 1.0)]


@pytest.mark.parametrize("threshold, ok", [(0, True), (12, True), (-1, False), (float("inf"), False)])
def test_a_count_metric_takes_a_threshold_of_zero_or_more(threshold, ok):
    if ok:
        (criterion,) = load_criteria({"tool_call_count": threshold})
        assert criterion.threshold == threshold
    else:
        with pytest.raises(lf.MetricError, match=r"tool_call_count is a count, 0 or more"):
            load_criteria({"tool_call_count": threshold})


def test_a_bad_file_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    path = _write(tmp_path, STRICTER_THAN_ADK[0][1])
    code = main(["eval", "tests/fixture/home.evalset.json", "--agent",
                 "samples.home_automation.agents.function_agents:careful_agent", "--config", str(path), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{path}: criteria.response_match_score = 1.5 is out of range" in err


@pytest.mark.parametrize("threshold", [1.5, -0.5, float("nan"), True])
def test_a_criterion_made_in_python_is_held_to_the_same_range(threshold):
    from levelfield._core.results.criteria import Criterion

    with pytest.raises(lf.MetricError, match=r"criteria\.response_match_score = "):
        Criterion("response_match_score", threshold)
