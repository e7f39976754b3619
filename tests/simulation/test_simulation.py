"""Conversation scenarios with simulated users: the scripted and model-driven users, the loop on
every adapter (function, LangGraph, A2A, Agent Engine), replay across a comparison, simulator
faults counted apart, max_turns, scenario sources and the conversation metrics."""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

import pytest

import levelfield as lf
from levelfield._core.data.dataset import Scenario
from levelfield._core.data.types import AgentOutput
from levelfield._core.run.conversation import Exchange, ReplayedUser, UserTurn
from levelfield.testing import ScriptedUser

FAST = {"progress": False, "retries": 0}
BOOKING = {"starting_prompt": "I need a flight.", "conversation_plan": "Book a flight to Paris for Monday."}


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def travel_agent(prompt: str, history: list) -> dict[str, Any]:
    """Asks for the city, then books it: two turns when the user answers."""
    text = prompt.lower()
    if "flight" in text:
        return {"response": "Which city do you want to fly to?", "predicted_trajectory": []}
    if "paris" in text:
        return {
            "response": f"Booked your flight to Paris (after {len(history)} messages).",
            "predicted_trajectory": [{"tool_name": "book_flight", "tool_input": {"city": "Paris"}}],
        }
    return "Sorry, I did not understand."


TRAVELLER = ScriptedUser([("which city", "Paris, please."), ("booked", None)], default="What?")


def scenario_rows(n: int = 1, **scenario: Any) -> list[dict[str, Any]]:
    return [{"case_id": f"s{i}", "scenario": {**BOOKING, **scenario}} for i in range(n)]


def transcript(run: lf.AgentRun) -> list[tuple[str, str]]:
    return list(zip(run.conversation.user_turns, [t.response for t in run.turns]))


# -- the scripted user ---------------------------------------------------------------------------


def _next(user: Any, agent_says: str) -> UserTurn:
    exchange = Exchange("hi", AgentOutput(response=agent_says))
    return asyncio.run(user.next_turn(Scenario(starting_prompt="hi"), [exchange]))


def test_scripted_user_answers_by_the_first_rule_that_matches_the_agents_last_message():
    user = ScriptedUser([("city", "Paris."), (re.compile(r"\bdate\b"), "Monday."), (lambda m: m.endswith("?"), "Yes.")])
    assert [_next(user, m).text for m in ("Which CITY and date?", "Which date?", "Shall I?")] == ["Paris.", "Monday.", "Yes."]


def test_scripted_user_without_a_matching_rule_gives_the_default_and_none_ends():
    assert _next(ScriptedUser([("city", "Paris.")], default="Go on."), "Hello").text == "Go on."
    assert _next(ScriptedUser([("city", "Paris.")]), "Hello").text is None


def test_scripted_user_rule_that_is_not_a_pair_is_refused_naming_its_index():
    with pytest.raises(lf.ConfigTypeError, match="ScriptedUser rule 1"):
        ScriptedUser([("city", "Paris."), "bad"])


def test_max_turns_below_one_is_refused():
    with pytest.raises(lf.ConfigError, match="max_turns=0"):
        ScriptedUser([], max_turns=0)


# -- the loop on a function agent --------------------------------------------------------------


def test_scenario_is_played_turn_by_turn_and_every_user_and_agent_turn_is_recorded():
    result = lf.evaluate(scenario_rows(), travel_agent, ["trajectory_recall"], simulator=TRAVELLER, **FAST)
    run = result.runs[0]

    assert transcript(run) == [
        ("I need a flight.", "Which city do you want to fly to?"),
        ("Paris, please.", "Booked your flight to Paris (after 2 messages)."),
    ]
    assert [[c.tool_name for c in t.trajectory] for t in run.turns] == [[], ["book_flight"]]
    assert (run.failure, run.conversation.status, run.conversation.simulator_failure) == (False, "finished", False)


def test_every_turn_of_one_conversation_shares_a_session_and_trials_get_their_own():
    seen: list[str | None] = []

    def agent(prompt: str, session_id: str | None) -> str:
        seen.append(session_id)
        return "Which city?" if "flight" in prompt else "Booked."

    lf.evaluate(scenario_rows(), agent, [], simulator=TRAVELLER, trials=2, concurrency=1, **FAST)
    assert len(seen) == 4 and seen[0] == seen[1] and seen[2] == seen[3] and seen[0] != seen[2]


def test_max_turns_stops_a_conversation_that_never_ends():
    calls = []

    def stalling(prompt: str) -> str:
        calls.append(prompt)
        return "Could you say that again?"

    user = ScriptedUser([], default="I said: book a flight.", max_turns=3)
    run = lf.evaluate(scenario_rows(), stalling, [], simulator=user, **FAST).runs[0]

    assert len(calls) == 3 and len(run.turns) == 3
    assert run.conversation.status == "max_turns" and not run.failure


def test_a_scenario_column_with_a_plan_as_text_takes_the_rows_prompt_as_starting_prompt(tmp_path):
    path = tmp_path / "scenarios.jsonl"
    path.write_text(json.dumps({"case_id": "a", "prompt": "I need a flight.", "scenario": "Fly to Paris."}) + "\n", encoding="utf-8")
    case = lf.load_dataset(path)[0]

    assert case.scenario == Scenario(starting_prompt="I need a flight.", conversation_plan="Fly to Paris.")
    assert case.prompt is None


def test_a_scenario_without_a_starting_prompt_names_the_row_and_field():
    with pytest.raises(lf.DatasetError, match=r"dataset row 1, field 'scenario': the scenario has no 'starting_prompt'"):
        lf.load_dataset([{"scenario": {"conversation_plan": "Fly to Paris."}}])


def test_a_row_with_both_turns_and_a_scenario_is_refused():
    with pytest.raises(lf.DatasetError, match="either 'turns'"):
        lf.load_dataset([{"turns": [{"prompt": "hi"}], "scenario": BOOKING}])


def test_scenario_cases_are_skipped_with_the_reason_without_a_simulator():
    rows = scenario_rows() + [{"case_id": "fixed", "prompt": "I need a flight."}]
    with pytest.warns(UserWarning, match="skipped 1 conversation_scenario case"):
        result = lf.evaluate(rows, travel_agent, [], **FAST)
    assert [r.case_id for r in result.runs] == ["fixed"] and list(result.skipped) == ["s0"]


def test_a_simulator_without_an_agent_is_refused():
    with pytest.raises(lf.ConfigError, match="pass agent=... too"):
        lf.evaluate(scenario_rows(), None, [], simulator=TRAVELLER, **FAST)


def test_non_latin_conversation_is_recorded_verbatim():
    def agent(prompt: str) -> str:
        return "どの都市ですか？" if "航班" in prompt else "Gebucht: Zürich → São Paulo."

    user = ScriptedUser([("都市", "去圣保罗，谢谢。"), ("Gebucht", None)])
    rows = [{"case_id": "zh", "scenario": {"starting_prompt": "我需要一个航班。", "conversation_plan": "Flug nach São Paulo buchen."}}]
    run = lf.evaluate(rows, agent, [], simulator=user, **FAST).runs[0]

    assert transcript(run) == [("我需要一个航班。", "どの都市ですか？"), ("去圣保罗，谢谢。", "Gebucht: Zürich → São Paulo.")]


# -- the model-driven simulator --------------------------------------------------------------


def _model_user(policy) -> lf.UserSimulator:
    from levelfield.testing import ScriptedChatModel

    return lf.UserSimulator(ScriptedChatModel(policy, model_name="user-model"), persona="A terse commuter.", max_turns=5)


def test_user_simulator_follows_the_plan_it_is_shown_and_ends_with_the_stop_phrase():
    prompts: list[str] = []

    def policy(messages):
        prompts.append("\n".join(m.content for m in messages))
        return "</finished>" if "Booked" in messages[-1].content else "Paris, please."

    run = lf.evaluate(scenario_rows(), travel_agent, [], simulator=_model_user(policy), **FAST).runs[0]

    assert run.conversation.user_turns == ["I need a flight.", "Paris, please."]
    assert run.conversation.status == "finished"
    assert "Book a flight to Paris for Monday." in prompts[0] and "A terse commuter." in prompts[0]
    assert "agent: Which city do you want to fly to?" in prompts[0]


def test_simulator_tokens_are_kept_apart_from_the_agents():
    def agent(prompt: str) -> AgentOutput:
        return AgentOutput(response="Booked." if "Paris" in prompt else "Which city?", usage=lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15))

    user = _model_user(lambda m: "</finished>" if "Booked" in m[-1].content else "Paris, please.")
    result = lf.evaluate(scenario_rows(), agent, [], simulator=user, **FAST)
    conv = result.runs[0].conversation

    assert conv.agent_usage.total_tokens == 30  # two agent turns of 15
    assert conv.simulator_usage.total_tokens > 0  # two model calls of the simulated user
    row = result.metrics_table.iloc[0]
    assert row["total_tokens"] == 30 and row["simulator_total_tokens"] == conv.simulator_usage.total_tokens
    assert result.summary_metrics["simulator_total_tokens/sum"] == conv.simulator_usage.total_tokens


def test_a_provider_model_string_becomes_a_user_simulator_and_a_bad_one_is_a_config_error():
    with pytest.raises(lf.ConfigError, match="UserSimulator"):
        lf.UserSimulator("no-such-provider:model")


# -- simulator faults ----------------------------------------------------------------------------


class Broken:
    """A simulator whose second turn goes wrong in the given way."""

    max_turns = 5

    def __init__(self, fault: str) -> None:
        self.fault = fault

    async def next_turn(self, scenario, transcript):
        if self.fault == "raises":
            raise RuntimeError("simulator model unreachable")
        if self.fault == "empty":
            return UserTurn("   ")
        return UserTurn(None, plan_complete=False)


@pytest.mark.parametrize(
    ("fault", "says"),
    [("raises", "the simulated user failed: RuntimeError: simulator model unreachable"), ("empty", "empty message"),
     ("early", "before its plan was complete")],
)
def test_a_simulator_fault_is_not_an_agent_failure_and_is_left_out_of_the_score(fault, says):
    result = lf.evaluate(scenario_rows(), travel_agent, ["trajectory_recall", "turns_used"], simulator=Broken(fault), **FAST)
    run = result.runs[0]

    assert run.conversation.simulator_failure and not run.failure
    assert says in run.conversation.error
    assert math.isnan(result.scores[0]["trajectory_recall/score"]) and math.isnan(result.scores[0]["turns_used/score"])
    assert result.summary_metrics["simulator_failure/count"] == 1 and result.summary_metrics["failure/count"] == 0


def test_simulator_faults_are_counted_apart_from_agent_failures_in_a_comparison():
    def crashing(prompt: str) -> str:
        raise RuntimeError("agent bug")

    rows = scenario_rows(2)
    cmp = lf.compare(rows, {"ok": travel_agent, "crash": crashing}, ["turns_used"], simulator=Broken("raises"), **FAST)
    summary = cmp.summary

    # The crashing agent's first turn fails before the simulator is asked: an agent failure.
    assert summary.loc["crash", "failures"] == 2 and summary.loc["crash", "simulator_failure/count"] == 0
    assert summary.loc["ok", "failures"] == 0 and summary.loc["ok", "simulator_failure/count"] == 2
    assert summary.loc["ok", "turns_used/n"] == 0  # not zeroed as failures are: left out


def test_a_hanging_simulator_times_out_as_a_simulator_failure():
    class Hanging:
        max_turns = 5

        async def next_turn(self, scenario, transcript):
            await asyncio.sleep(30)

    # 1 s: the agent's first turn (a function, on a thread) answers within it on a loaded machine too.
    run = lf.evaluate(scenario_rows(), travel_agent, [], simulator=Hanging(), timeout=1.0, **FAST).runs[0]
    assert run.conversation.simulator_failure and "timed out" in run.conversation.error and not run.failure


def test_a_rate_limited_simulator_is_retried():
    class RateLimitError(Exception):
        status_code = 429

    class Flaky:
        max_turns = 5
        calls = 0

        async def next_turn(self, scenario, transcript):
            self.calls += 1
            if self.calls == 1:
                raise RateLimitError("slow down")
            return UserTurn("Paris, please." if len(transcript) == 1 else None)

    user = Flaky()
    run = lf.evaluate(scenario_rows(), travel_agent, [], simulator=user, progress=False, retries=1, backoff=0).runs[0]
    assert run.conversation.user_turns == ["I need a flight.", "Paris, please."] and user.calls == 3


# -- replay across a comparison -----------------------------------------------------------------


def test_every_agent_of_a_comparison_gets_byte_identical_user_turns():
    asked: list[str] = []

    def policy(agent_message, scenario, transcript):
        asked.append(agent_message)
        # A user that reacts to what it is told: the second agent's words would change its turns.
        return f"Paris — {len(agent_message)} chars heard, 谢谢." if len(transcript) < 3 else None

    def verbose(prompt: str) -> str:
        return "Hello! Which city would you like to fly to today, dear traveller?"

    result = lf.compare(scenario_rows(2), {"terse": travel_agent, "verbose": verbose}, [],
                        simulator=ScriptedUser(policy), trials=2, **FAST)
    for case_index in range(2):
        for trial in range(2):
            first, second = (
                next(r for r in result.results[a].runs if r.case_id == f"s{case_index}" and r.trial == trial)
                for a in ("terse", "verbose")
            )
            one, two = first.conversation, second.conversation
            assert json.dumps(one.user_turns, ensure_ascii=False).encode() == json.dumps(two.user_turns, ensure_ascii=False).encode()
            assert {one.replayed_from, two.replayed_from} == {None, "terse"} or {one.replayed_from, two.replayed_from} == {None, "verbose"}
    # The live user spoke only in one conversation per (case, trial): 4 conversations of 3 user turns
    # after the starting prompt (live for both agents, it would have been 8).
    assert len(asked) == 4 * 3


def test_replayed_user_says_the_recorded_turns_in_order_then_ends():
    user = ReplayedUser(["a", "b"])
    said = []
    for n in range(1, 3):
        transcript = [Exchange("x", AgentOutput(response="y"))] * n
        said.append(asyncio.run(user.next_turn(Scenario(starting_prompt="a"), transcript)).text)
    assert said == ["b", None]


def test_when_the_first_agent_fails_the_next_one_meets_the_live_user():
    def crashing(prompt: str) -> str:
        raise RuntimeError("agent bug")

    cmp = lf.compare(scenario_rows(), {"crash": crashing, "ok": travel_agent}, [], simulator=TRAVELLER, concurrency=1, **FAST)
    ok = cmp.results["ok"].runs[0].conversation
    assert ok.replayed_from is None and ok.user_turns == ["I need a flight.", "Paris, please."]


def test_a_conversation_survives_saving_and_loading_the_result(tmp_path):
    result = lf.evaluate(scenario_rows(), travel_agent, ["turns_used"], simulator=TRAVELLER, out=tmp_path / "out", **FAST)
    loaded = lf.EvalResult.load(tmp_path / "out")
    assert loaded.runs[0].conversation == result.runs[0].conversation
    assert loaded.summary_metrics["turns_used/mean"] == 2.0


# -- conversation metrics -------------------------------------------------------------------------


def test_task_success_judge_sees_the_plan_and_the_transcript_and_fixed_cases_are_nan():
    from levelfield.testing import ScriptedChatModel

    seen: list[str] = []

    def judge(messages):
        seen.append("\n".join(m.content for m in messages))
        return '{"score": "1", "explanation": "booked as planned"}'

    metric = lf.TaskSuccess(judge=ScriptedChatModel(judge, model_name="judge"), judge_config=lf.JudgeConfig(cache=False))
    rows = scenario_rows() + [{"case_id": "fixed", "prompt": "I need a flight."}]
    result = lf.evaluate(rows, travel_agent, [metric], simulator=TRAVELLER, **FAST)

    assert result.scores[0]["task_success/score"] == 1.0 and math.isnan(result.scores[1]["task_success/score"])
    assert len(seen) == 1
    assert "Book a flight to Paris for Monday." in seen[0]
    assert "user: Paris, please." in seen[0] and "agent called tool book_flight" in seen[0]


def test_task_success_judge_reads_a_non_latin_conversation_verbatim():
    from levelfield.testing import ScriptedChatModel

    seen: list[str] = []

    def judge(messages):
        seen.append("\n".join(m.content for m in messages))
        return "score: 0"

    def agent(prompt: str) -> str:
        return "Welche Stadt? どの都市ですか？" if "航班" in prompt else "Reserviert nach São Paulo."

    rows = [{"case_id": "zh", "scenario": {"starting_prompt": "我需要一个航班。", "conversation_plan": "Einen Flug nach São Paulo buchen."}}]
    user = ScriptedUser([("Stadt", "去圣保罗，谢谢。"), ("Reserviert", None)])
    metric = lf.TaskSuccess(judge=ScriptedChatModel(judge, model_name="judge"), judge_config=lf.JudgeConfig(cache=False))
    result = lf.evaluate(rows, agent, [metric], simulator=user, **FAST)

    assert result.scores[0]["task_success/score"] == 0.0
    assert "Einen Flug nach São Paulo buchen." in seen[0]
    assert "user: 去圣保罗，谢谢。" in seen[0] and "agent: Welche Stadt? どの都市ですか？" in seen[0]


def test_task_success_as_a_bare_name_says_how_to_give_a_judge():
    with pytest.raises(lf.MetricError, match=r"TaskSuccess\(judge=...\)"):
        lf.evaluate(scenario_rows(), travel_agent, ["task_success"], simulator=TRAVELLER, **FAST)


def test_trajectory_metrics_of_a_scenario_count_every_call_of_the_conversation():
    rows = scenario_rows(reference_trajectory=None)
    rows[0]["reference_trajectory"] = [{"tool_name": "book_flight", "tool_input": {"city": "Paris"}}]
    result = lf.evaluate(rows, travel_agent, ["trajectory_exact_match", "turns_used"], simulator=TRAVELLER, **FAST)
    assert result.scores[0]["trajectory_exact_match/score"] == 1.0 and result.scores[0]["turns_used/score"] == 2.0


# -- ADK eval sets: scenario and fixed cases together ---------------------------------------------


def test_adk_evalset_with_scenario_and_fixed_cases_runs_both_with_a_simulator(tmp_path):
    from samples.home_automation.agents.function_agents import careful_agent

    path = tmp_path / "mixed.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "mixed", "eval_cases": [
        {"eval_id": "fixed", "conversation": [{
            "user_content": {"parts": [{"text": "Turn on device_1."}], "role": "user"},
            "final_response": {"parts": [{"text": "device_1 is now on."}], "role": "model"},
            "intermediate_data": {"tool_uses": [{"name": "set_device_info", "args": {"device_id": "device_1", "updates": {"status": "ON"}}}]},
        }]},
        {"eval_id": "simulated", "conversation_scenario": {
            "startingPrompt": "What is the status of device_3?",
            "conversationPlan": "Check device_3, then turn on device_1.",
            "userPersona": {"id": "novice", "description": "A new user.", "behaviors": []},
        }},
    ]}), encoding="utf-8")
    user = ScriptedUser([("device_3", "Turn on device_1."), ("now on", None)])
    result = lf.evaluate(path, careful_agent, ["tool_trajectory_avg_score", "turns_used"], simulator=user, **FAST)

    assert [r.case_id for r in result.runs] == ["fixed", "simulated"] and not result.skipped
    assert result.scores[0]["tool_trajectory_avg_score/score"] == 1.0
    sim = result.runs[1]
    assert sim.conversation.user_turns == ["What is the status of device_3?", "Turn on device_1."]
    assert [c.tool_name for t in sim.turns for c in t.trajectory] == ["get_device_info", "set_device_info"]
    assert result.scores[1]["turns_used/score"] == 2.0


# -- every adapter ------------------------------------------------------------------------------


def test_langgraph_graph_keeps_one_thread_per_conversation():
    pytest.importorskip("langgraph")
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph

    from levelfield.testing import ScriptedChatModel

    def policy(messages):
        humans = [m.content for m in messages if isinstance(m, HumanMessage)]
        return f"Which city? ({len(humans)} seen)" if len(humans) == 1 else f"Booked Paris. ({len(humans)} seen)"

    model = ScriptedChatModel(policy)
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "model")
    graph = builder.compile(checkpointer=InMemorySaver())

    result = lf.evaluate(scenario_rows(), graph, [], simulator=TRAVELLER, trials=2, **FAST)
    for run in result.runs:
        # The second turn sees the first one through the thread's checkpoint, and each trial starts afresh.
        assert [t.response for t in run.turns] == ["Which city? (1 seen)", "Booked Paris. (2 seen)"]
    threads = {c.config["configurable"]["thread_id"] for c in graph.checkpointer.list(None)}
    assert len(threads) == 2


def test_a2a_agent_keeps_one_context_per_conversation():
    pytest.importorskip("a2a.server.request_handlers")
    from levelfield.adapters import A2AAgent
    from levelfield.adapters.a2a.server import start_server

    seen: list[tuple[str | None, int]] = []

    def served(prompt: str, history: list, session_id: str | None) -> dict[str, Any]:
        seen.append((session_id, len(history)))
        return travel_agent(prompt, history)

    with start_server(served) as server:
        # a2a_preflight=False: the server's calls are counted below, and the preflight's probes would count too.
        result = lf.evaluate(scenario_rows(), A2AAgent(server.url), ["turns_used"], simulator=TRAVELLER,
                             trials=2, concurrency=1, a2a_preflight=False, **FAST)
    assert [transcript(r)[-1][0] for r in result.runs] == ["Paris, please.", "Paris, please."]
    assert [n for _, n in seen] == [0, 2, 0, 2]  # the server kept each conversation's history
    contexts = [s for s, _ in seen]
    assert contexts[0] == contexts[1] and contexts[2] == contexts[3] and contexts[0] != contexts[2]
    assert [[c.tool_name for c in t.trajectory] for t in result.runs[0].turns] == [[], ["book_flight"]]


def test_agent_engine_adk_template_keeps_one_session_per_conversation():
    pytest.importorskip("vertexai")
    from samples.home_automation.agents import agent_engine_agent as sample

    app = sample.make_adk_app()
    rows = [{"case_id": "home", "scenario": {"starting_prompt": "What is the status of device_3?",
                                               "conversation_plan": "Check device_3, then turn on device_1."}}]
    user = ScriptedUser([("device_3", "Turn on device_1."), ("now on", None)])
    result = lf.evaluate(rows, app, ["turns_used"], simulator=user, **FAST)
    run = result.runs[0]

    assert not run.failure, run.error
    assert [c.tool_name for t in run.turns for c in t.trajectory] == ["get_device_info", "set_device_info"]
    sessions = asyncio.run(app.async_list_sessions(user_id="levelfield")).sessions
    assert len(sessions) == 1
    full = asyncio.run(app.async_get_session(user_id="levelfield", session_id=sessions[0].id))
    said = [e.content.parts[0].text for e in full.events if e.author == "user" and e.content.parts[0].text]
    assert said == ["What is the status of device_3?", "Turn on device_1."]


def test_resuming_a_comparison_replays_the_recorded_user_without_asking_the_simulator(tmp_path):
    out = tmp_path / "out"
    lf.compare(scenario_rows(), {"a": travel_agent, "b": travel_agent}, [], simulator=TRAVELLER, out=out, **FAST)
    journal = out / "runs.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line).get("kind") != "run" or json.loads(line)["run"]["conversation"].get("replayed_from") is None]
    assert len(kept) == len(lines) - 1  # the replayed run is gone, as if interrupted before it finished
    journal.write_text("\n".join(kept) + "\n", encoding="utf-8")

    asked = []
    counting = ScriptedUser(lambda message, scenario, transcript: asked.append(message))
    cmp = lf.compare(scenario_rows(), {"a": travel_agent, "b": travel_agent}, [], simulator=counting, out=out, resume=True, **FAST)

    assert asked == []
    users = [cmp.results[name].runs[0].conversation.user_turns for name in ("a", "b")]
    assert users[0] == users[1] == ["I need a flight.", "Paris, please."]


def test_cli_max_turns_without_a_simulator_is_a_usage_error(capsys):
    from levelfield.cli.main import main

    code = main(["eval", "data.jsonl", "--agent", "x:y", "--max-turns", "3"])
    assert code == 2 and "--max-turns needs --simulator" in capsys.readouterr().err


def test_export_to_an_adk_evalset_writes_a_simulated_conversation_as_the_turns_it_had(tmp_path):
    result = lf.evaluate(scenario_rows(), travel_agent, [], simulator=TRAVELLER, **FAST)
    path = lf.to_adk_evalset(result, tmp_path / "recorded.evalset.json")
    case = lf.load_dataset(path)[0]

    assert [t.prompt for t in case.turns] == ["I need a flight.", "Paris, please."]
    assert [t.reference_trajectory[0].tool_name if t.reference_trajectory else None for t in case.turns] == [None, "book_flight"]
