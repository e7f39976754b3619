"""Reading ADK eval files: eval sets (old and new tool-call layouts, both spellings), legacy
.test.json files, folders of them, and selecting cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.formats.adk import cases_from_evalset

FIXTURE = Path(__file__).resolve().parents[1] / "fixture"
EVALSET = FIXTURE / "home.evalset.json"


def _camel(value):
    """The same JSON with every key camelCased, as ADK's web UI writes it."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            head, *rest = key.split("_")
            out[head + "".join(p.title() for p in rest)] = _camel(item)
        return out
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def test_evalset_loads_every_case_in_file_order():
    ds = lf.load_dataset(EVALSET)
    assert [c.case_id for c in ds] == [
        "turn_off_device_2",
        "warmer_room",
        "kitchen_all_off",
        "device_3_follow_up",
        "greeting",
    ]


def test_single_invocation_case_is_a_plain_row():
    case = lf.load_dataset(EVALSET)[0]
    assert case.turns == []
    assert case.prompt == "Turn off device_2 in the Bedroom."
    assert case.reference == "device_2 in the Bedroom is now off."
    assert [(c.tool_name, c.tool_input) for c in case.reference_trajectory] == [
        ("set_device_info", {"device_id": "device_2", "updates": {"status": "OFF"}})
    ]


def test_multi_invocation_case_becomes_turns_in_order():
    case = {c.case_id: c for c in lf.load_dataset(EVALSET)}["device_3_follow_up"]
    assert [t.prompt for t in case.turns] == [
        "What is the status of device_3?",
        "Please turn on that device.",
        "Schedule that device to turn off at 23:00.",
    ]
    assert [t.reference for t in case.turns] == [
        "device_3 (Kitchen light) is OFF.",
        "device_3 is now on.",
        "device_3 will turn off at 23:00.",
    ]
    assert [[c.tool_name for c in t.reference_trajectory] for t in case.turns] == [
        ["get_device_info"],
        ["set_device_info"],
        ["set_schedule"],
    ]


def test_multi_turn_case_level_fields_describe_the_last_turn():
    case = {c.case_id: c for c in lf.load_dataset(EVALSET)}["device_3_follow_up"]
    assert case.prompt == case.turns[0].prompt
    assert case.reference == case.turns[-1].reference
    assert case.reference_trajectory == case.turns[-1].reference_trajectory


def test_invocation_events_function_call_parts_are_the_tool_calls():
    case = {c.case_id: c for c in lf.load_dataset(EVALSET)}["warmer_room"]
    calls = case.reference_trajectory
    # function_response parts are results, not calls: only the two calls count.
    assert [(c.tool_name, c.tool_input, c.id, c.agent) for c in calls] == [
        ("get_temperature", {"location": "Living Room"}, "call-2", "home_agent"),
        ("get_temperature", {"location": "Bedroom"}, "call-3", "home_agent"),
    ]


def test_old_and_new_layouts_mix_within_one_case():
    case = {c.case_id: c for c in lf.load_dataset(EVALSET)}["device_3_follow_up"]
    assert case.turns[1].reference_trajectory[0].tool_input == {"device_id": "device_3", "updates": {"status": "ON"}}


def test_no_tool_calls_expected_is_an_empty_trajectory_not_a_missing_one():
    case = {c.case_id: c for c in lf.load_dataset(EVALSET)}["greeting"]
    assert case.reference_trajectory == []


def test_camel_case_eval_set_reads_like_snake_case(tmp_path):
    data = json.loads(EVALSET.read_text())
    camel = tmp_path / "home_camel.evalset.json"
    camel.write_text(json.dumps(_camel(data)))
    assert "evalCases" in json.loads(camel.read_text())
    snake_cases = [c.model_dump(exclude={"location"}) for c in lf.load_dataset(EVALSET)]
    camel_cases = [c.model_dump(exclude={"location"}) for c in lf.load_dataset(camel)]
    # camelCasing also renames keys inside tool args and session state, so compare the structure.
    assert [c["case_id"] for c in camel_cases] == [c["case_id"] for c in snake_cases]
    assert [len(c["turns"]) for c in camel_cases] == [len(c["turns"]) for c in snake_cases]
    assert [c["reference"] for c in camel_cases] == [c["reference"] for c in snake_cases]
    assert [[t["tool_name"] for t in c["reference_trajectory"]] for c in camel_cases] == [
        [t["tool_name"] for t in c["reference_trajectory"]] for c in snake_cases
    ]


def test_session_input_is_kept_in_the_case_metadata():
    case = lf.load_dataset(EVALSET)[0]
    assert case.metadata["session_input"] == {"app_name": "home_automation", "user_id": "user_y", "state": {}}
    assert case.metadata["eval_set_id"] == "home_automation"


def test_fixture_is_an_eval_set_adk_itself_reads():
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_set import EvalSet

    adk = EvalSet.model_validate_json(EVALSET.read_text())
    ours = lf.load_dataset(EVALSET)
    assert [c.eval_id for c in adk.eval_cases] == [c.case_id for c in ours]
    first = adk.eval_cases[0].conversation[0]
    assert [(f.name, f.args) for f in first.intermediate_data.tool_uses] == [
        (c.tool_name, c.tool_input) for c in ours[0].reference_trajectory
    ]


def test_legacy_test_file_is_one_multi_turn_case_named_after_the_file():
    ds = lf.load_dataset(FIXTURE / "lights.test.json")
    assert [c.case_id for c in ds] == ["lights"]
    case = ds[0]
    assert [t.prompt for t in case.turns] == ["Turn on device_1 in the Living Room.", "Set device_5 brightness to 40."]
    assert case.turns[1].reference_trajectory[0].tool_input == {"device_id": "device_5", "updates": {"brightness": 40}}


def test_legacy_mock_tool_output_is_not_part_of_the_expected_call():
    case = lf.load_dataset(FIXTURE / "thermostat.test.json")[0]
    call = case.reference_trajectory[0]
    assert (call.tool_name, call.tool_input, call.tool_output) == (
        "set_temperature",
        {"location": "Bedroom", "temperature": 19},
        None,
    )


def test_legacy_file_reads_as_adk_converts_it():
    pytest.importorskip("google.adk")
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema

    data = json.loads((FIXTURE / "lights.test.json").read_text())
    adk = convert_eval_set_to_pydantic_schema("x", [{"name": "lights", "data": data}]).eval_cases[0]
    ours = lf.load_dataset(FIXTURE / "lights.test.json")[0]
    assert len(adk.conversation) == len(ours.turns)
    for inv, turn in zip(adk.conversation, ours.turns):
        assert inv.user_content.parts[0].text == turn.prompt
        assert inv.final_response.parts[0].text == turn.reference
        assert [(f.name, f.args) for f in inv.intermediate_data.tool_uses] == [
            (c.tool_name, c.tool_input) for c in turn.reference_trajectory
        ]


def test_plain_json_list_of_queries_stays_one_row_per_query(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"query": "a", "reference": "x"}, {"query": "b", "reference": "y"}]))
    ds = lf.load_dataset(path)
    assert [(c.prompt, c.reference, c.turns) for c in ds] == [("a", "x", []), ("b", "y", [])]


def test_folder_loads_its_test_and_evalset_files():
    ds = lf.load_dataset(FIXTURE)
    assert [c.case_id for c in ds] == [
        "turn_off_device_2",
        "warmer_room",
        "kitchen_all_off",
        "device_3_follow_up",
        "greeting",
        "lights",
        "thermostat",
    ]


def test_folder_with_one_case_id_in_two_files_names_both(tmp_path):
    for name in ("a.test.json", "b.test.json"):
        (tmp_path / "x").mkdir(exist_ok=True)
        (tmp_path / "x" / "same.test.json").write_text('[{"query": "hi"}]')
        (tmp_path / name).write_text(json.dumps({"eval_set_id": "s", "eval_cases": [
            {"eval_id": "same", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}]}))
    with pytest.raises(lf.DatasetError, match=r"'same' appears in both .*a\.test\.json and .*"):
        lf.load_dataset(tmp_path)


def test_folder_without_adk_files_is_an_error(tmp_path):
    (tmp_path / "notes.json").write_text("[]")
    with pytest.raises(lf.DatasetError, match="without any .test.json or .evalset.json"):
        lf.load_dataset(tmp_path)


def test_selection_picks_the_named_cases_in_the_order_given():
    ds = lf.load_dataset(f"{EVALSET}:greeting,warmer_room")
    assert [c.case_id for c in ds] == ["greeting", "warmer_room"]


def test_selection_of_an_unknown_case_lists_the_known_ones():
    with pytest.raises(lf.DatasetError, match=r"no case named 'nope'; cases: turn_off_device_2, warmer_room"):
        lf.load_dataset(f"{EVALSET}:nope")


def test_selection_works_on_jsonl_datasets_too():
    from samples.home_automation import DATASET

    ds = lf.load_dataset(f"{DATASET}:greeting")
    assert [c.case_id for c in ds] == ["greeting"]


def test_case_without_user_content_names_file_case_and_field():
    data = {"eval_set_id": "s", "eval_cases": [{"eval_id": "broken", "conversation": [{"final_response": {}}]}]}
    with pytest.raises(lf.DatasetError, match=r"x.evalset.json case 1 \('broken'\): field 'conversation.0.user_content'"):
        cases_from_evalset(data, "x.evalset.json")


def test_conversation_scenario_case_is_kept_as_a_scenario_beside_scripted_cases():
    data = {"eval_cases": [
        {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi"}},
        {"eval_id": "scripted", "conversation": [{"user_content": {"parts": [{"text": "hello"}]}}]},
    ]}
    sim, scripted = cases_from_evalset(data, "x.evalset.json")
    assert (sim.conversation_scenario, sim.prompt) == ({"starting_prompt": "hi"}, None)
    assert (scripted.conversation_scenario, scripted.prompt) == (None, "hello")


def test_legacy_entry_without_query_text_names_file_and_entry(tmp_path):
    path = tmp_path / "bad.test.json"
    path.write_text(json.dumps([{"query": "ok"}, {"query": 3}]))
    with pytest.raises(lf.DatasetError, match=r"bad.test.json entry 2, field 'query'"):
        lf.load_dataset(path)
