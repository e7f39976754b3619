"""Whole ADK files, scored end to end: levelfield's numbers on saved per-turn predictions equal
ADK's evaluators on the same files read by ADK's own loaders; criteria resolve per file as
ADK's AgentEvaluator resolves them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from adk_oracle import adk_response_scores, adk_trajectory_scores, invocation

import levelfield as lf

FILES = Path(__file__).parent / "files" / "nested"
EVALSET = FILES / "home.evalset.json"
METRICS = ["tool_trajectory_avg_score", "response_match_score"]


def _adk_evalset():
    from google.adk.evaluation.eval_set import EvalSet

    return EvalSet.model_validate_json(EVALSET.read_text(encoding="utf-8"))


def _answer_every_turn_with_its_reference(ds: lf.EvalDataset) -> None:
    for case in ds:
        turns = case.turns or []
        for turn in turns:
            turn.response = turn.reference
            turn.predicted_trajectory = [lf.ToolCall(tool_name=c.tool_name, tool_input=c.tool_input)
                                         for c in turn.reference_trajectory or []]
        if not turns:
            case.response = case.reference
            case.predicted_trajectory = [lf.ToolCall(tool_name=c.tool_name, tool_input=c.tool_input)
                                         for c in case.reference_trajectory or []]


def test_saved_per_turn_predictions_of_a_multi_turn_legacy_file_score_1(tmp_path):
    path = tmp_path / "lights.test.json"
    path.write_text(json.dumps([
        {"query": "Turn on the lights.", "expected_tool_use": [{"tool_name": "lights", "tool_input": {"on": True}}],
         "reference": "The lights are on."},
        {"query": "Dim them to 40.", "expected_tool_use": [{"tool_name": "dim", "tool_input": {"level": 40}}],
         "reference": "The lights are at 40."},
    ]), encoding="utf-8")
    ds = lf.load_dataset(path)
    _answer_every_turn_with_its_reference(ds)
    table = lf.evaluate(ds, metrics=METRICS, progress=False).metrics_table
    assert table[["tool_trajectory_avg_score/score", "response_match_score/score"]].values.tolist() == [[1.0, 1.0]]


def test_saved_per_turn_predictions_in_a_turns_column_score_turn_by_turn():
    rows = [{"case_id": "c", "turns": [
        {"prompt": "a", "reference": "one two", "reference_trajectory": [{"tool_name": "t", "tool_input": {}}],
         "response": "one two", "predicted_trajectory": [{"tool_name": "t", "tool_input": {}}]},
        {"prompt": "b", "reference": "three four", "reference_trajectory": [],
         "response": "three", "predicted_trajectory": [{"tool_name": "x", "tool_input": {}}]},
    ]}]
    import pandas as pd

    for source in (rows, pd.DataFrame(rows)):
        result = lf.evaluate(source, metrics=METRICS, progress=False)
        row = result.metrics_table.iloc[0]
        assert row["tool_trajectory_avg_score/per_turn"] == [1.0, 0.0]
        assert row["response_match_score/per_turn"] == pytest.approx([1.0, 2 / 3])
        assert [t.response for t in result.runs[0].turns] == ["one two", "three"]


@pytest.mark.parametrize("answer", ["reference", "off_by_one"])
def test_every_case_of_an_adk_eval_set_scores_as_adks_evaluators(answer):
    ds = lf.load_dataset(EVALSET)
    _answer_every_turn_with_its_reference(ds)
    if answer == "off_by_one":
        for case in ds:  # each turn answers the next turn's expectation: partial credit everywhere
            turns = case.turns or [case]
            shifted = [(t.response, t.predicted_trajectory) for t in turns[1:] + turns[:1]]
            for t, (resp, calls) in zip(turns, shifted):
                t.response, t.predicted_trajectory = resp, calls
    table = lf.evaluate(ds, metrics=METRICS, progress=False).metrics_table.set_index("case_id")
    ours_by_case = {c.case_id: c for c in ds}
    for adk_case in _adk_evalset().eval_cases:
        case = ours_by_case[adk_case.eval_id]
        turns = case.turns or [case]
        actual = [invocation("p", t.response, t.predicted_trajectory or [], expected=False) for t in turns]
        expected = adk_case.conversation
        trajectory, _ = adk_trajectory_scores(actual, expected)
        response, _ = adk_response_scores(actual, expected)
        assert table.loc[case.case_id, "tool_trajectory_avg_score/score"] == pytest.approx(trajectory), case.case_id
        assert table.loc[case.case_id, "response_match_score/score"] == pytest.approx(response), case.case_id


def test_each_legacy_file_gets_the_criteria_adks_agent_evaluator_finds_for_it():
    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    from levelfield._core.results.criteria import criteria_by_file

    ds = lf.load_dataset(FILES)
    ours = criteria_by_file({c.case_id: c.file for c in ds})
    for case in ds:
        if not case.file.endswith(".test.json"):
            continue
        adk = AgentEvaluator.find_config_for_test_file(case.file).criteria
        adk_thresholds = {name: (c if isinstance(c, float) else c.threshold) for name, c in adk.items()}
        assert {c.metric: c.threshold for c in ours[case.case_id]} == adk_thresholds, case.case_id


def _greeter(prompt: str) -> str:
    # Close to every reference, never identical: passes 0.5 and 0.8, fails 1.0.
    name = prompt.rstrip(".").split()[-1]
    return f"Hello {name}, welcome back home."


def test_folder_gating_holds_each_file_to_its_own_test_config(tmp_path):
    folder = tmp_path / "nested"
    shutil.copytree(FILES, folder)
    (folder / "home.evalset.json").unlink()
    report = lf.testing.check_eval(folder, _greeter)
    verdicts = {v.case_id: v.passed for v in report.verdicts}
    # strict/ asks response_match_score >= 1.0 beside its file; plain/ has no config: ADK's defaults.
    assert verdicts == {"strict/greet": False, "plain/greet": True}
    assert "response_match_score 0.889 < 1" in "\n".join(report.verdict("strict/greet").reasons)


def test_legacy_entry_without_a_reference_scores_as_adks_own_conversion(tmp_path):
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema

    entries = [
        {"query": "Turn on the lights.", "expected_tool_use": [{"tool_name": "lights", "tool_input": {"on": True}}],
         "reference": "The lights are on."},
        {"query": "Thanks!", "expected_tool_use": []},
    ]
    path = tmp_path / "thanks.test.json"
    path.write_text(json.dumps(entries), encoding="utf-8")

    def agent(prompt: str) -> dict:
        if prompt.startswith("Turn"):
            return {"response": "The lights are on.", "predicted_trajectory": [{"tool_name": "lights",
                                                                                 "tool_input": {"on": 1}}]}
        return "You're welcome!"

    result = lf.evaluate(path, agent, METRICS, progress=False)
    row = result.metrics_table.iloc[0]
    (adk_case,) = convert_eval_set_to_pydantic_schema("s", [{"name": "thanks", "data": entries}]).eval_cases
    actual = [invocation(t.prompt, o.response, o.trajectory, expected=False)
              for t, o in zip(result.dataset[0].turns, result.runs[0].turns)]
    assert row["response_match_score/score"] == pytest.approx(adk_response_scores(actual, adk_case.conversation)[0])
    assert row["response_match_score/score"] == 0.5  # the second turn is scored against "", as ADK does
    assert row["tool_trajectory_avg_score/score"] == adk_trajectory_scores(actual, adk_case.conversation)[0] == 1.0
