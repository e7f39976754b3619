"""Multi-turn ADK cases run turn by turn against one agent session, and runs export back to ADK."""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.testing import check_eval

FIXTURE = Path(__file__).resolve().parents[1] / "fixture"
EVALSET = FIXTURE / "home.evalset.json"
FOLLOW_UP = f"{EVALSET}:device_3_follow_up"
sys.path.insert(0, str(FIXTURE.parent))
from fixture.agents import careful_follow_up  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent  # noqa: E402

METRICS = ["tool_trajectory_avg_score", "response_match_score"]


def test_every_turn_gets_the_same_session_id():
    seen: list[str | None] = []
    lock = threading.Lock()

    def agent(prompt, session_id):
        with lock:
            seen.append(session_id)
        return "ok"

    lf.evaluate(FOLLOW_UP, agent, METRICS, progress=False)
    assert len(seen) == 3 and len(set(seen)) == 1 and seen[0]


def test_each_turn_sees_the_earlier_turns_as_history():
    histories = []

    def agent(prompt, history):
        histories.append([(m.role, m.content) for m in history])
        return careful_follow_up(prompt, history)

    lf.evaluate(FOLLOW_UP, agent, METRICS, progress=False)
    assert histories[2] == [
        ("user", "What is the status of device_3?"),
        ("assistant", "device_3 (Kitchen light) is OFF."),
        ("user", "Please turn on that device."),
        ("assistant", "device_3 is now on."),
    ]


def test_each_turns_response_and_trajectory_are_recorded():
    run = lf.evaluate(FOLLOW_UP, careful_follow_up, METRICS, progress=False).runs[0]
    assert [o.response for o in run.turns] == [
        "device_3 (Kitchen light) is OFF.",
        "device_3 is now on.",
        "device_3 will turn off at 23:00.",
    ]
    assert [[c.tool_name for c in o.trajectory] for o in run.turns] == [
        ["get_device_info"],
        ["set_device_info"],
        ["set_schedule"],
    ]


def test_an_agent_that_ignores_history_loses_the_follow_up_turns():
    # Without history "that device" names nothing: only turn 1 of 3 gets its tool call right.
    result = lf.evaluate(FOLLOW_UP, lambda prompt: careful_agent(prompt), METRICS, progress=False)
    assert result.metrics_table["tool_trajectory_avg_score/score"].iloc[0] == pytest.approx(1 / 3)
    assert result.scores[0]["tool_trajectory_avg_score/per_turn"] == [1.0, 0.0, 0.0]


def test_a_failed_turn_fails_the_run_and_keeps_the_turns_before_it():
    def agent(prompt, history):
        if history:
            raise RuntimeError("lost the session")
        return careful_follow_up(prompt, history)

    result = lf.evaluate(FOLLOW_UP, agent, METRICS, progress=False, retries=0)
    run = result.runs[0]
    assert run.failure and "turn 2 of 3" in run.error
    assert [o.response for o in run.turns] == ["device_3 (Kitchen light) is OFF."]
    assert math.isnan(result.metrics_table["tool_trajectory_avg_score/score"].iloc[0])


def test_a_failed_turns_report_keeps_one_entry_per_turn():
    def agent(prompt, history):
        if history:
            raise RuntimeError("lost the session")
        return careful_follow_up(prompt, history)

    report = check_eval(FOLLOW_UP, agent, retries=0)
    text = report.describe(report.verdicts[0])
    assert "trial 1 failed (RuntimeError)" in text
    assert [line.split(":")[0].strip() for line in text.splitlines() if line.startswith("  turn ")] == [
        "turn 1 of 3",
        "turn 2 of 3",
        "turn 3 of 3",
    ]
    assert text.count("actual response:     (none)") == 2


def test_export_writes_what_the_agent_did_as_the_expectation(tmp_path):
    result = lf.evaluate(EVALSET, careful_follow_up, METRICS, progress=False)
    path = lf.to_adk_evalset(result, tmp_path / "recorded.evalset.json")
    data = json.loads(path.read_text())
    assert data["eval_set_id"] == "recorded"
    case = {c["eval_id"]: c for c in data["eval_cases"]}["device_3_follow_up"]
    assert [inv["final_response"]["parts"][0]["text"] for inv in case["conversation"]] == [
        "device_3 (Kitchen light) is OFF.",
        "device_3 is now on.",
        "device_3 will turn off at 23:00.",
    ]
    assert case["conversation"][2]["intermediate_data"]["tool_uses"] == [
        {"name": "set_schedule", "args": {"device_id": "device_3", "time": "23:00", "action": "OFF"}}
    ]
    assert case["session_input"]["user_id"] == "user_x"


def test_exported_set_loads_back_as_the_same_cases(tmp_path):
    result = lf.evaluate(EVALSET, careful_follow_up, METRICS, progress=False)
    back = lf.load_dataset(lf.to_adk_evalset(result, tmp_path / "r.evalset.json"))
    original = lf.load_dataset(EVALSET)
    assert [c.case_id for c in back] == [c.case_id for c in original]
    for a, b in zip(back, original):
        assert [t.prompt for t in a.turns] == [t.prompt for t in b.turns]
        assert a.reference == b.reference
        assert [(c.tool_name, c.tool_input) for c in a.reference_trajectory] == [
            (c.tool_name, c.tool_input) for c in b.reference_trajectory
        ]


def test_exported_set_is_an_eval_set_adk_reads(tmp_path):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.eval_set import EvalSet

    result = lf.evaluate(EVALSET, careful_follow_up, METRICS, progress=False)
    adk = EvalSet.model_validate_json(lf.to_adk_evalset(result, tmp_path / "r.evalset.json").read_text())
    assert [len(c.conversation) for c in adk.eval_cases] == [1, 1, 1, 3, 1]


def test_export_leaves_out_failed_runs(tmp_path):
    def agent(prompt):
        if "warmer" in prompt:
            raise RuntimeError("boom")
        return careful_agent(prompt)

    result = lf.evaluate(EVALSET, agent, METRICS, progress=False, retries=0)
    data = json.loads(lf.to_adk_evalset(result, tmp_path / "r.evalset.json").read_text())
    assert "warmer_room" not in [c["eval_id"] for c in data["eval_cases"]]
    assert len(data["eval_cases"]) == 4


def test_export_of_several_trials_names_each_trial(tmp_path):
    result = lf.evaluate(f"{EVALSET}:greeting", careful_agent, METRICS, progress=False, trials=2)
    data = json.loads(lf.to_adk_evalset(result, tmp_path / "r.evalset.json").read_text())
    assert [c["eval_id"] for c in data["eval_cases"]] == ["greeting_trial1", "greeting_trial2"]


def test_a_recorded_session_gates_the_same_agent(tmp_path):
    result = lf.evaluate(EVALSET, careful_follow_up, METRICS, progress=False)
    path = lf.to_adk_evalset(result, tmp_path / "r.evalset.json")
    assert check_eval(path, careful_follow_up).passed
