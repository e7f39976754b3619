"""Vertex AI's ``agent_data`` dataset rows (agents, turns, events) read as cases: rows built with the installed
vertexai types and dumped as Vertex writes them, so a change of their shape fails here."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import levelfield as lf

evals = pytest.importorskip("vertexai._genai.types.evals")
genai = pytest.importorskip("google.genai.types")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def _event(author: str, *, text: str | None = None, call: tuple | None = None, answer: tuple | None = None):
    role = "user" if author == "user" or answer is not None else "model"
    if text is not None:
        part = genai.Part(text=text)
    elif call is not None:
        name, args, cid = call
        part = genai.Part(function_call=genai.FunctionCall(name=name, args=args, id=cid))
    else:
        name, response, cid = answer
        part = genai.Part(function_response=genai.FunctionResponse(name=name, response=response, id=cid))
    return evals.AgentEvent(author=author, content=genai.Content(role=role, parts=[part]))


def _billing_conversation(*, last_user: bool = False):
    """Two turns in German: the root agent hands the user to billing, which looks the bill up; then thanks."""
    turns = [
        evals.ConversationTurn(turn_index=0, turn_id="t0", events=[
            _event("user", text="Wie hoch ist meine Rechnung für März?"),
            _event("root", call=("transfer_to_agent", {"agent_name": "billing"}, "c1")),
            _event("root", answer=("transfer_to_agent", {"result": None}, "c1")),
            _event("billing", call=("get_bill", {"monat": "März"}, "c2")),
            _event("billing", answer=("get_bill", {"result": {"betrag": 42}}, "c2")),
            _event("billing", text="Ihre Rechnung für März beträgt 42 €."),
        ]),
        evals.ConversationTurn(turn_index=1, turn_id="t1", events=[
            _event("user", text="Danke! Und bezahlt?"),
            _event("billing", call=("get_status", {"monat": "März"}, "c3")),
            _event("billing", answer=("get_status", {"error": "Dienst nicht erreichbar"}, "c3")),
            _event("root", text="Das kann ich gerade nicht prüfen."),
        ]),
    ]
    if last_user:
        turns.append(evals.ConversationTurn(turn_index=2, events=[_event("user", text="Bitte versuche es noch einmal.")]))
    agents = {"root": evals.AgentConfig(agent_id="root", agent_type="LlmAgent", sub_agents=["billing"]),
              "billing": evals.AgentConfig(agent_id="billing", description="Rechnungen")}
    return evals.AgentData(agents=agents, turns=turns)


def test_an_agent_data_row_becomes_a_multi_turn_case_with_tool_calls_by_agent_and_hand_offs():
    row = {"case_id": "rechnung", "agent_data": _billing_conversation().model_dump(mode="json"), "reference": "Bezahlt."}
    (case,) = lf.load_dataset([row])
    assert [t.prompt for t in case.turns] == ["Wie hoch ist meine Rechnung für März?", "Danke! Und bezahlt?"]
    assert [t.response for t in case.turns] == ["Ihre Rechnung für März beträgt 42 €.", "Das kann ich gerade nicht prüfen."]
    first = case.turns[0].predicted_trajectory
    assert [(c.tool_name, c.agent, c.tool_input, c.tool_output) for c in first] == [
        ("transfer_to_agent", "root", {"agent_name": "billing"}, None),
        ("get_bill", "billing", {"monat": "März"}, {"betrag": 42}),
    ]
    (status,) = case.turns[1].predicted_trajectory
    assert status.error == "Dienst nicht erreichbar"
    # The last turn's hand-off back to root, as the case's trajectory is the last turn's.
    assert case.predicted_handoffs == [lf.Handoff(from_agent="billing", to_agent="root")]
    assert case.metadata["agents"]["billing"]["description"] == "Rechnungen"
    assert "agent_data" not in case.metadata and case.reference == "Bezahlt."


def test_a_trace_ending_with_the_users_message_is_a_case_to_run_with_its_history():
    (case,) = lf.load_dataset(pd.DataFrame([{"agent_data": _billing_conversation(last_user=True)}]))
    assert case.prompt == "Bitte versuche es noch einmal." and not case.turns and case.response is None
    assert [(m.role, m.content) for m in case.history] == [
        ("user", "Wie hoch ist meine Rechnung für März?"), ("assistant", "Ihre Rechnung für März beträgt 42 €."),
        ("user", "Danke! Und bezahlt?"), ("assistant", "Das kann ich gerade nicht prüfen."),
    ]
    seen = []
    lf.evaluate([{"agent_data": _billing_conversation(last_user=True).model_dump(mode="json"), "reference": "Bezahlt."}],
                lambda request: seen.append(request) or "Bezahlt.", metrics=["exact_match"], progress=False)
    assert seen == ["Bitte versuche es noch einmal."]


def test_agent_data_rows_in_a_jsonl_file_score_without_an_agent_in_japanese(tmp_path):
    data = evals.AgentData(turns=[evals.ConversationTurn(events=[
        _event("user", text="東京の天気は？"),
        _event("weather_agent", call=("get_weather", {"city": "東京"}, None)),
        _event("weather_agent", answer=("get_weather", {"result": "晴れ"}, None)),
        _event("weather_agent", text="東京は晴れです。"),
    ])])
    path = tmp_path / "vertex.jsonl"
    path.write_text(json.dumps({"agent_data": data.model_dump(mode="json"), "reference": "東京は晴れです。",
                                "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "東京"}}]},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    result = lf.evaluate(str(path), metrics=["exact_match", "trajectory_exact_match", "tool_attribution"], progress=False)
    row = result.scores[0]
    assert row["exact_match/score"] == 1.0 and row["trajectory_exact_match/score"] == 1.0
    assert result.dataset[0].predicted_trajectory[0].tool_output == "晴れ"
    assert result.dataset[0].predicted_trajectory[0].agent == "weather_agent"


def test_the_multi_turn_judge_sees_which_agent_made_each_call():
    prompts = []

    def judge(prompt: str) -> str:
        prompts.append(prompt)
        rubrics = re.findall(r"\[id: ([^\]]+)\] (.*)", prompt)
        return "\n\n".join(f"ID: {i}\nProperty: {t}\nRationale: ok\nVerdict: yes" for i, t in rubrics)

    row = lf.evaluate([{"agent_data": _billing_conversation().model_dump(mode="json")}], metrics=["MULTI_TURN_TOOL_USE_QUALITY"],
                      judge=judge, progress=False).scores[0]
    assert row["multi_turn_tool_use_quality_v1/score"] == 1.0
    assert '[turn 1] agent (billing) calls get_bill({"monat": "März"})' in prompts[0]


def test_a_bad_agent_data_cell_is_an_error_naming_the_row_and_field(tmp_path):
    with pytest.raises(lf.DatasetError, match=r"dataset row 2, field 'agent_data.turns.0.events': Input should be a valid list"):
        lf.load_dataset([{"prompt": "ok"}, {"agent_data": {"turns": [{"events": "nope"}]}}])
    with pytest.raises(lf.DatasetError, match=r"dataset row 1, field 'agent_data': has no turns with events"):
        lf.load_dataset([{"agent_data": {"agents": {}, "turns": []}}])
    agent_only = evals.AgentData(turns=[evals.ConversationTurn(events=[_event("root", text="Hallo")]),
                                        evals.ConversationTurn(events=[_event("root", text="Tschüss")])])
    with pytest.raises(lf.DatasetError, match=r"dataset row 1, field 'agent_data', turn 1: has no user message"):
        lf.load_dataset([{"agent_data": agent_only.model_dump(mode="json")}])
    path = tmp_path / "bad.jsonl"
    path.write_text('{"agent_data": "{not json"}\n', encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"bad.jsonl line 1, field 'agent_data': not valid JSON"):
        lf.load_dataset(str(path))
