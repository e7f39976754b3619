"""levelfield.formats: file readers and ADK layouts (CSV errors, old named-case eval sets,
legacy files sharing a name, scenario cases beside scripted ones), and the layering."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.score.metrics.trajectory import adk_args
from levelfield.formats import adk

FIXTURE = Path(__file__).resolve().parents[1] / "fixture"


def _legacy(path: Path, query: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"query": query, "expected_tool_use": [], "reference": "ok"}]), encoding="utf-8")
    return path


# --- CSV errors: one line, the file and the line -----------------------------------------------


def test_csv_row_with_an_extra_cell_names_the_file_and_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,reference\nhi,hello\nbye,see you,later\n", encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"d.csv line 3: has 3 cells but the header has 2") as info:
        lf.load_dataset(path)
    assert "\n" not in str(info.value)


def test_csv_unclosed_quote_names_the_line_it_opens_on(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text('prompt,reference\nhi,hello\nbye,"see you\nmore,rows\n', encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"d.csv line 3: a quoted cell is never closed") as info:
        lf.load_dataset(path)
    assert "\n" not in str(info.value)


def test_empty_csv_file_says_a_header_is_needed(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("", encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"d.csv: the file is empty; a CSV dataset needs a header line"):
        lf.load_dataset(path)


# --- ADK layouts ---------------------------------------------------------------------------------


def test_old_named_case_eval_set_loads_each_case_with_its_turns_and_state(tmp_path):
    path = tmp_path / "old.evalset.json"
    path.write_text(json.dumps([
        {
            "name": "roll_twice",
            "data": [
                {"query": "What can you do?", "expected_tool_use": [], "reference": "I roll dice."},
                {"query": "Roll a 17 sided die twice",
                 "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 17}}] * 2,
                 "reference": "13 and 4."},
            ],
            "initial_session": {"state": {"lang": "de"}, "app_name": "dice", "user_id": "u"},
        },
        {"name": "hello", "data": [{"query": "Hi", "reference": "Hello"}]},
    ]), encoding="utf-8")
    first, second = lf.load_dataset(path)
    assert (first.case_id, first.prompt, [t.prompt for t in first.turns]) == (
        "roll_twice", "What can you do?", ["What can you do?", "Roll a 17 sided die twice"])
    assert first.turns[1].reference_trajectory == [lf.ToolCall(tool_name="roll_die", tool_input={"sides": 17})] * 2
    assert first.state == {"lang": "de"}
    assert (second.case_id, second.prompt, second.reference) == ("hello", "Hi", "Hello")


def test_legacy_files_sharing_a_base_name_are_qualified_by_their_path(tmp_path):
    _legacy(tmp_path / "kitchen" / "lights.test.json", "kitchen lights on")
    _legacy(tmp_path / "bedroom" / "lights.test.json", "bedroom lights on")
    _legacy(tmp_path / "thermostat.test.json", "warmer")
    ds = lf.load_dataset(tmp_path)
    assert {c.case_id: c.prompt for c in ds} == {
        "bedroom/lights": "bedroom lights on",
        "kitchen/lights": "kitchen lights on",
        "thermostat": "warmer",
    }


def _mixed_evalset(path: Path) -> Path:
    path.write_text(json.dumps({"eval_set_id": "mixed", "eval_cases": [
        {"eval_id": "simulated", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}},
        {"eval_id": "scripted", "conversation": [{
            "user_content": {"parts": [{"text": "hello"}], "role": "user"},
            "final_response": {"parts": [{"text": "hello there"}], "role": "model"},
        }]},
    ]}), encoding="utf-8")
    return path


def test_scenario_case_does_not_stop_a_selection_of_the_files_scripted_cases(tmp_path):
    path = _mixed_evalset(tmp_path / "mixed.evalset.json")
    assert [c.case_id for c in lf.load_dataset(f"{path}:scripted")] == ["scripted"]


def test_scenario_case_is_reported_skipped_with_the_reason_and_scripted_cases_run(tmp_path):
    path = _mixed_evalset(tmp_path / "mixed.evalset.json")
    with pytest.warns(UserWarning, match="skipped 1 conversation_scenario case"):
        result = lf.evaluate(path, lambda prompt: "hello there", ["response_match_score"], progress=False)
    assert result.metrics_table["case_id"].tolist() == ["scripted"]
    assert result.metrics_table["response_match_score/score"].tolist() == [1.0]
    assert "needs a user simulator" in result.skipped["simulated"]


def test_gate_report_lists_the_skipped_scenario_case(tmp_path):
    path = _mixed_evalset(tmp_path / "mixed.evalset.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = lf.testing.check_eval(path, lambda prompt: "hello there", criteria={"response_match_score": 0.8})
    assert report.passed
    assert "SKIPPED simulated: a conversation_scenario case" in report.table()


def test_expected_call_without_args_stays_apart_from_empty_args(tmp_path):
    data = {"eval_cases": [{"eval_id": "c", "conversation": [{
        "user_content": {"parts": [{"text": "time?"}]},
        "intermediate_data": {"tool_uses": [{"name": "now"}, {"name": "now", "args": {}}]},
    }]}]}
    (case,) = adk.cases_from_evalset(data, "x.evalset.json")
    assert [adk_args(c) for c in case.reference_trajectory] == [None, {}]




def test_thought_parts_are_kept_apart_from_the_expected_answer():
    data = {"eval_cases": [{"eval_id": "c", "conversation": [{
        "user_content": {"parts": [{"text": "q"}]},
        "final_response": {"parts": [{"text": "let me think", "thought": True}, {"text": "the answer"}]},
    }]}]}
    (case,) = adk.cases_from_evalset(data, "x.evalset.json")
    assert (case.reference, case.reference_thoughts) == ("the answer", "let me think")


# --- writing -------------------------------------------------------------------------------------


def test_to_adk_evalset_is_the_formats_writer_and_reads_back(tmp_path):
    assert lf.to_adk_evalset is adk.write_evalset
    result = lf.evaluate(f"{FIXTURE / 'home.evalset.json'}:greeting", lambda prompt: "Hi!", ["exact_match"],
                         progress=False)
    back = lf.load_dataset(lf.to_adk_evalset(result, tmp_path / "r.evalset.json"))
    assert [(c.case_id, c.reference) for c in back] == [("greeting", "Hi!")]


def test_eval_result_no_longer_carries_a_format_method():
    assert not hasattr(lf.EvalResult, "to_adk_evalset")
