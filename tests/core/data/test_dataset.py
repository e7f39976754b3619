"""Loading datasets: every accepted source and column alias, and errors that name file, row and field."""

import json

import pandas as pd
import pytest

import levelfield as lf

SAMPLE = "samples/home_automation/dataset.jsonl"


def test_sample_dataset_loads_with_reference_trajectories():
    ds = lf.load_dataset(SAMPLE)
    assert len(ds) >= 15
    first = ds[0]
    assert first.prompt == "Turn off device_2 in the Bedroom."
    assert first.reference_trajectory == [
        lf.ToolCall(tool_name="set_device_info", tool_input={"device_id": "device_2", "updates": {"status": "OFF"}})
    ]


def test_dataframe_list_and_jsonl_give_the_same_cases(tmp_path):
    rows = [{"prompt": "hi", "reference": "hello", "reference_trajectory": [{"tool_name": "a", "tool_input": {"k": 1}}]}]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    from_list, from_df, from_file = lf.load_dataset(rows), lf.load_dataset(pd.DataFrame(rows)), lf.load_dataset(path)
    for ds in (from_df, from_file):
        assert ds[0].model_dump() == from_list[0].model_dump() | {"location": ds[0].location, "file": ds[0].file}


def test_json_list_and_column_oriented_json(tmp_path):
    (tmp_path / "rows.json").write_text(json.dumps([{"prompt": "a"}, {"prompt": "b"}]))
    (tmp_path / "cols.json").write_text(json.dumps({"prompt": ["a", "b"], "reference": ["x", "y"]}))
    assert [c.prompt for c in lf.load_dataset(tmp_path / "rows.json")] == ["a", "b"]
    assert [c.reference for c in lf.load_dataset(tmp_path / "cols.json")] == ["x", "y"]


def test_csv_trajectory_cells_are_json(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame([{"prompt": "p", "reference_trajectory": json.dumps([{"tool_name": "a", "tool_input": {"k": 1}}])},
                  {"prompt": "q", "reference_trajectory": ""}]).to_csv(path, index=False)
    ds = lf.load_dataset(path)
    assert ds[0].reference_trajectory == [lf.ToolCall(tool_name="a", tool_input={"k": 1})]
    assert ds[1].reference_trajectory is None


def test_aliases_map_onto_vertex_columns():
    ds = lf.load_dataset([{"query": "q", "expected_response": "r",
                           "expected_tool_use": [{"name": "a", "args": {"k": 1}}], "eval_id": "e1"}])
    case = ds[0]
    assert (case.case_id, case.prompt, case.reference) == ("e1", "q", "r")
    assert case.reference_trajectory == [lf.ToolCall(tool_name="a", tool_input={"k": 1})]


def test_request_as_messages_becomes_prompt_and_history():
    ds = lf.load_dataset([{"request": {"messages": [
        {"role": "user", "content": "I am user_y"}, {"role": "assistant", "content": "Hi"},
        {"role": "user", "content": "Set my preferred temperature"}]}}])
    case = ds[0]
    assert case.prompt == "Set my preferred temperature"
    assert [(m.role, m.content) for m in case.history] == [("user", "I am user_y"), ("assistant", "Hi")]


def test_request_as_query_and_history():
    ds = lf.load_dataset([{"request": {"query": "and now?", "history": [{"role": "human", "content": "hi"}]},
                           "expected_response": "x"}])
    assert ds[0].prompt == "and now?" and ds[0].history[0].role == "user"


def test_request_as_json_string_of_messages(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame([{"request": json.dumps({"messages": [{"role": "user", "content": "hello"}]})}]).to_csv(path, index=False)
    assert lf.load_dataset(path)[0].prompt == "hello"


def test_other_columns_are_kept_as_metadata():
    ds = lf.load_dataset([{"prompt": "p", "category": "lights"}])
    assert ds[0].metadata == {"category": "lights"}


def test_trajectory_cell_that_is_not_a_list_names_file_row_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "a"}) + "\n" + json.dumps({"prompt": "b", "reference_trajectory": "oops"}) + "\n")
    with pytest.raises(lf.DatasetError, match=r"bad.jsonl line 2, field 'reference_trajectory': not valid JSON"):
        lf.load_dataset(path)


def test_trajectory_cell_of_wrong_type_names_row_and_field():
    with pytest.raises(lf.DatasetError, match=r"row 1, field 'reference_trajectory': expected a list of tool calls"):
        lf.load_dataset([{"prompt": "p", "reference_trajectory": {"tool_name": "a"}}])


def test_call_without_tool_name_names_the_call():
    with pytest.raises(lf.DatasetError, match=r"row 2, field 'expected_tool_use', call 1: expected an object with 'tool_name'"):
        lf.load_dataset([{"prompt": "p"}, {"prompt": "q", "expected_tool_use": [{"tool_name": "a"}, {"args": {}}]}])


def test_csv_error_names_row_and_line(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame([{"prompt": "p", "predicted_trajectory": "[1, 2]"}]).to_csv(path, index=False)
    with pytest.raises(lf.DatasetError, match=r"d.csv row 1 \(line 2\), field 'predicted_trajectory', call 0"):
        lf.load_dataset(path)


def test_unreadable_jsonl_names_the_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "ok"}\n{not json\n')
    with pytest.raises(lf.DatasetError, match=r"d.jsonl line 2: not valid JSON"):
        lf.load_dataset(path)


def test_missing_file_and_unsupported_type(tmp_path):
    with pytest.raises(lf.DatasetError, match="no such file"):
        lf.load_dataset(tmp_path / "nope.jsonl")
    (tmp_path / "d.txt").write_text("x")
    with pytest.raises(lf.DatasetError, match="unsupported file type"):
        lf.load_dataset(tmp_path / "d.txt")


def test_missing_prompt_column_fails_before_any_agent_runs():
    called = []
    with pytest.raises(lf.DatasetError, match=r"no 'prompt' column .*request, query.*Columns found: question"):
        lf.evaluate([{"question": "hi"}], lambda p: called.append(p) or "x", progress=False)
    assert called == []


def test_empty_prompt_in_one_row_names_that_row():
    with pytest.raises(lf.DatasetError, match=r"field 'prompt' is missing or empty at dataset row 2"):
        lf.evaluate([{"prompt": "a"}, {"prompt": None}], lambda p: "x", progress=False)


def test_duplicate_case_ids_are_an_error():
    with pytest.raises(lf.DatasetError, match="case ids must be unique; repeated: 'x' at dataset row 1, dataset row 2"):
        lf.load_dataset([{"case_id": "x", "prompt": "a"}, {"case_id": "x", "prompt": "b"}])


def test_empty_reference_trajectory_differs_from_missing():
    ds = lf.load_dataset([{"prompt": "a", "reference_trajectory": []}, {"prompt": "b"}])
    assert ds[0].reference_trajectory == [] and ds[1].reference_trajectory is None


def test_turns_column_makes_a_multi_turn_case():
    ds = lf.load_dataset([{"case_id": "conv", "turns": [
        {"prompt": "Check device_2", "reference_trajectory": [{"tool_name": "get_device_info", "tool_input": {"device_id": "device_2"}}]},
        {"query": "Turn it off", "expected_response": "Done",
         "expected_tool_use": [{"name": "set_device_info", "args": {"device_id": "device_2"}}]},
    ]}])
    case = ds[0]
    assert [t.prompt for t in case.turns] == ["Check device_2", "Turn it off"]
    assert case.prompt == "Check device_2" and case.reference == "Done"
    assert case.reference_trajectory[0].tool_name == "set_device_info"


def test_multi_turn_case_runs_turns_in_order_with_history():
    seen = []

    def agent(prompt, history):
        seen.append((prompt, [m.content for m in history]))
        return f"answer to {prompt}"

    result = lf.evaluate([{"turns": [{"prompt": "one"}, {"prompt": "two"}]}], agent, metrics=[], progress=False)
    assert seen == [("one", []), ("two", ["one", "answer to one"])]
    assert [t.response for t in result.runs[0].turns] == ["answer to one", "answer to two"]


def test_bad_turn_names_the_turn():
    with pytest.raises(lf.DatasetError, match=r"row 1, field 'turns', turn 2: 'prompt' is missing or empty"):
        lf.load_dataset([{"turns": [{"prompt": "a"}, {"reference": "b"}]}])
