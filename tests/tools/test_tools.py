"""Levelled tools (issue #43): cassettes recorded once and replayed to every agent, a comparison's
shared record, seeded faults; intercepted in real LangGraph graphs, real ADK agents, the Agent
Engine local templates and function agents."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import levelfield as lf
from levelfield.testing import ScriptedChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _levelled_agents import (  # noqa: E402
    EchoLlm,
    _lc_policy,
    adk_agent,
    adk_get_time,
    dataset,
    function_agent,
    langgraph_agent,
)

FAST = {"progress": False, "retries": 0}
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def three_agents() -> dict[str, Any]:
    return {"lg": langgraph_agent(), "adk": adk_agent(), "fn": function_agent}


def write_cassette(path: Path, entries: list[dict[str, Any]], header: Any = None) -> Path:
    lines = [json.dumps(header if header is not None else {"levelfield_cassette": 1})]
    lines += [json.dumps(e) for e in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def seen(result: Any) -> dict[tuple[str, int], str]:
    """What each run got back: the response (the tool output it saw) or the error, by case and trial."""
    return {(r.case_id, r.trial): (r.output.response if r.output is not None else "FAILED") for r in result.runs}


def compare(agents: dict[str, Any], **kwargs: Any) -> lf.Comparison:
    return lf.compare(dataset(), agents, ["trajectory_exact_match"], **FAST, **kwargs)


# -- across frameworks -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, lf.Comparison]:
    path = tmp_path_factory.mktemp("cassette") / "tools.jsonl"
    cmp = compare(three_agents(), tools=lf.ToolCassette(path, mode="record"))
    return path, cmp


def cassette_outputs(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return {e["case"]: e.get("output", "FAILED") for e in map(json.loads, lines)}


def test_recording_a_comparison_shares_one_answer_per_call_across_three_frameworks(recorded):
    path, cmp = recorded
    outputs = cassette_outputs(path)
    assert len(outputs) == 20  # one entry per distinct call, whichever agent made it first
    for agent in ("lg", "adk", "fn"):
        assert seen(cmp.results[agent]) == {(case, 0): out for case, out in outputs.items()}, agent
    counts = {a: note["counts"] for a, note in cmp.tool_levelling.items()}
    assert sum(c["recorded"] for c in counts.values()) == 20
    assert all(c["calls"] == 20 and c["recorded"] + c["replayed"] == 20 for c in counts.values())
    # The live tools fail at random: some calls were recorded as errors, and every agent failed on those.
    failed = {case for case, out in outputs.items() if out == "FAILED"}
    assert {r.case_id for r in cmp.results["adk"].runs if r.failure} == failed


def test_replay_gives_every_agent_byte_identical_tool_outputs_and_a_second_run_identical_scores(recorded):
    path, _ = recorded
    outputs = cassette_outputs(path)
    first = compare(three_agents(), tools=lf.ToolCassette(path, mode="replay"))
    second = compare(three_agents(), tools=lf.ToolCassette(path, mode="replay"))
    for agent in ("lg", "adk", "fn"):
        assert seen(first.results[agent]) == {(case, 0): out for case, out in outputs.items()}, agent
        assert seen(second.results[agent]) == seen(first.results[agent])
        assert first.tool_levelling[agent]["counts"]["replayed"] == 20
    ok = [r for r in first.results["lg"].runs if not r.failure]
    assert ok and all(r.output.trajectory[0].tool_output in (outputs[r.case_id], json.dumps(outputs[r.case_id])) or
                      getattr(r.output.trajectory[0].tool_output, "content", None) == outputs[r.case_id] for r in ok)
    scores = [c for c in first.summary.columns if c.startswith("trajectory_exact_match/")]
    assert first.summary[scores].equals(second.summary[scores])
    table = [c for c in first.metrics_table.columns if c.endswith("/score") or c in ("agent", "case_id", "failure")]
    assert first.metrics_table[table].equals(second.metrics_table[table])
    assert path.read_text(encoding="utf-8").count("\n") == 21  # replay writes nothing


def test_faults_hit_the_same_calls_of_every_agent_and_again_on_a_rerun(recorded):
    path, _ = recorded
    faults = lf.Faults(rate=0.5, kinds=("error", "empty", "malformed", "timeout"), seed=7)
    runs = [compare(three_agents(), tools=lf.ToolCassette(path, mode="replay"), faults=faults) for _ in range(2)]
    runs = [cmp.faulted for cmp in runs]  # compare(faults=) runs clean and under faults: these are the faulted runs
    schedules = {(i, a): [(r.case_id, [e["fault"] for e in r.tool_events]) for r in cmp.results[a].runs]
                 for i, cmp in enumerate(runs) for a in ("lg", "adk", "fn")}
    assert len({json.dumps(s) for s in schedules.values()}) == 1
    kinds = {f for _, fs in schedules[(0, "lg")] for f in fs if f}
    assert len(kinds) >= 3  # 20 calls at rate 0.5: several kinds were met
    outputs = cassette_outputs(path)
    for case, (fault,) in schedules[(0, "fn")]:
        got = {a: seen(runs[0].results[a])[(case, 0)] for a in ("lg", "adk", "fn")}
        if fault in ("error", "timeout") or outputs[case] == "FAILED":
            assert set(got.values()) == {"FAILED"}, (case, fault, got)
        elif fault == "empty":
            assert got["fn"] == "" and got["adk"] == "", (case, got)
        elif fault == "malformed":
            assert got["fn"] == outputs[case][: len(outputs[case]) // 2] == got["adk"], (case, got)
        else:
            assert set(got.values()) == {outputs[case]}
    for agent in ("lg", "adk", "fn"):
        assert seen(runs[0].results[agent]) == seen(runs[1].results[agent])


def test_faults_apply_to_live_tools_on_the_same_calls_twice():
    faults = lf.Faults(rate=0.4, kinds=("error",), seed=3)
    calls = []

    def lookup(key: str) -> str:
        calls.append(key)
        return f"v-{key}"

    def agent(prompt: str, tools: Any = [lookup]) -> str:  # noqa: B006 (levelfield passes tools=)
        try:
            return tools[0](key=prompt)
        except lf.tools.InjectedToolError:
            return "fault"

    first = lf.evaluate(dataset(), agent, ["exact_match"], faults=faults, **FAST)
    second = lf.evaluate(dataset(), agent, ["exact_match"], faults=faults, **FAST)
    assert seen(first) == seen(second)
    faulted = {r.case_id for r in first.runs if r.tool_events[0]["fault"] == "error"}
    assert faulted and {c for (c, _), v in seen(first).items() if v == "fault"} == faulted
    assert all(e["source"] == "live" for r in first.runs for e in r.tool_events)
    assert first.tool_levelling["counts"]["faults"] == len(faulted)


# -- LangChain / LangGraph interception -------------------------------------------------------


def _never_live(key: str) -> str:
    raise AssertionError("a replayed tool must not run")


@tool("get_time")
def get_time_never(city: str) -> str:
    """The time in a city."""
    return _never_live(city)


def replay_entries(n: int = 3, tool_name: str = "get_time") -> list[dict[str, Any]]:
    return [{"case": f"c{i}", "tool": tool_name, "args": {"city": f"city{i}"}, "output": f"recorded-{i}"}
            for i in range(n)]


def hand_built_graph() -> Any:
    model = ScriptedChatModel(_lc_policy).bind_tools([get_time_never])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([get_time_never]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def agent_executor() -> Any:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages([("human", "{input}"), ("placeholder", "{agent_scratchpad}")])
    model = ScriptedChatModel(_lc_policy)
    return AgentExecutor(agent=create_tool_calling_agent(model, [get_time_never], prompt), tools=[get_time_never],
                         return_intermediate_steps=True)


@pytest.mark.parametrize("make", [
    lambda: create_agent(ScriptedChatModel(_lc_policy), tools=[get_time_never]),
    hand_built_graph,
    agent_executor,
], ids=["create_agent", "prebuilt_ToolNode_hand_built_graph", "AgentExecutor"])
def test_langchain_agents_answer_from_the_cassette_without_running_the_tool(tmp_path, make):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries())
    result = lf.evaluate(dataset(3), make(), ["trajectory_exact_match"], tools=lf.ToolCassette(path), **FAST)
    assert seen(result) == {(f"c{i}", 0): f"recorded-{i}" for i in range(3)}
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0  # the trajectory is still read
    assert [r.tool_events for r in result.runs] == [[{"tool": "get_time", "index": 0, "source": "replayed",
                                                      "fault": None}]] * 3


def test_concurrent_runs_of_one_graph_each_get_their_own_cases_answer(tmp_path):
    entries = replay_entries(20)
    path = write_cassette(tmp_path / "t.jsonl", entries)
    graph = create_agent(ScriptedChatModel(_lc_policy), tools=[get_time_never])
    result = lf.evaluate(dataset(20), graph, ["exact_match"], tools=lf.ToolCassette(path), concurrency=20,
                         trials=2, **FAST)
    assert seen(result) == {(f"c{i}", t): f"recorded-{i}" for i in range(20) for t in range(2)}


def test_a_missing_call_under_replay_is_a_tool_error_the_agent_sees(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(1))
    result = lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=lf.ToolCassette(path), **FAST)
    missed = result.runs[1]
    assert missed.failure and "ToolNotRecordedError" in missed.error and "not in cassette" in missed.error
    assert str(path) in missed.error and missed.tool_events[0]["source"] == "missed"
    assert result.tool_levelling["counts"]["missed"] == 1


def test_a_missing_call_can_be_answered_live_or_by_a_simulator(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(1))
    cassette = lf.ToolCassette(path, on_missing=lambda tool, args, case: f"sim {tool} {args['city']}")
    simulated = lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=cassette, **FAST)
    assert seen(simulated) == {("c0", 0): "recorded-0", ("c1", 0): "sim get_time city1"}
    live = lf.evaluate(dataset(2), function_agent, ["exact_match"], **FAST,
                       tools=lf.ToolCassette(path, on_missing="live"))
    assert seen(live)[("c0", 0)] == "recorded-0"
    assert seen(live)[("c1", 0)] in ("FAILED",) or seen(live)[("c1", 0)].startswith("fn:city1:")
    assert len(path.read_text().splitlines()) == 2  # replay with a live fallback writes nothing


def test_record_missing_keeps_the_entries_and_records_the_rest(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))
    cassette = lf.ToolCassette(path, mode="record_missing")
    result = lf.evaluate(dataset(4), function_agent, ["exact_match"], tools=cassette, **FAST)
    assert [e["source"] for r in result.runs for e in r.tool_events] == ["replayed", "replayed", "recorded", "recorded"]
    assert set(cassette_outputs(path)) == {"c0", "c1", "c2", "c3"}


# -- ADK -----------------------------------------------------------------------------------


def test_adk_agent_tool_inner_calls_are_answered_from_the_cassette(tmp_path):
    from google.adk.agents import LlmAgent
    from google.adk.tools.agent_tool import AgentTool

    def get_time(city: str) -> str:
        """The time in a city."""
        return _never_live(city)

    inner = LlmAgent(name="clock", model=EchoLlm(), tools=[get_time], description="tells the time")

    class OuterLlm(EchoLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False):
            from google.adk.models.llm_response import LlmResponse
            from google.genai import types

            last = llm_request.contents[-1]
            response = next((p.function_response for p in last.parts or [] if p.function_response), None)
            if response is None:
                city = next(p.text for c in llm_request.contents if c.role == "user" for p in c.parts if p.text)
                parts = [types.Part(function_call=types.FunctionCall(name="clock", args={"request": city}))]
            else:
                parts = [types.Part(text=f"outer: {(response.response or {}).get('result')}")]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    outer = LlmAgent(name="desk", model=OuterLlm(), tools=[AgentTool(inner)])
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))
    result = lf.evaluate(dataset(2), outer, ["exact_match"], **FAST,
                         tools=lf.ToolCassette(path, on_missing="live"))
    assert seen(result) == {("c0", 0): "outer: recorded-0", ("c1", 0): "outer: recorded-1"}
    sources = [(e["tool"], e["source"]) for e in result.runs[0].tool_events]
    assert sources == [("clock", "missed"), ("get_time", "replayed")]  # the AgentTool is a levelled call too


def test_adk_live_call_is_recorded_through_the_plugin(tmp_path):
    path = tmp_path / "rec.jsonl"
    calls: list[str] = []

    def get_time(city: str) -> dict[str, Any]:
        """The time in a city."""
        calls.append(city)
        return {"time": f"12:00 in {city}"}

    from google.adk.agents import LlmAgent

    agent = LlmAgent(name="adk", model=EchoLlm(), tools=[get_time])
    first = lf.evaluate(dataset(2), agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), **FAST)
    again = lf.evaluate(dataset(2), agent, ["exact_match"], tools=lf.ToolCassette(path, mode="replay"), **FAST)
    assert calls == ["city0", "city1"] or sorted(calls) == ["city0", "city1"]
    assert cassette_outputs(path) == {"c0": {"time": "12:00 in city0"}, "c1": {"time": "12:00 in city1"}}
    assert seen(again) == seen(first)


# -- Agent Engine local templates -------------------------------------------------------------


def _lc_model_builder(**_: Any) -> Any:
    return ScriptedChatModel(_lc_policy)


def never_get_time(city: str) -> str:
    """The time in a city."""
    return _never_live(city)


never_get_time.__name__ = "get_time"


@pytest.mark.parametrize("template", ["AdkApp", "LangchainAgent", "LanggraphAgent"])
def test_agent_engine_local_templates_answer_from_the_cassette(tmp_path, template):
    from google.adk.agents import LlmAgent
    from vertexai import agent_engines

    from samples.home_automation.agents.agent_engine_agent import init_vertex

    init_vertex()
    if template == "AdkApp":
        agent = agent_engines.AdkApp(agent=LlmAgent(name="clock", model=EchoLlm(), tools=[never_get_time]))
    elif template == "LangchainAgent":
        agent = agent_engines.LangchainAgent(model="scripted", tools=[never_get_time], model_builder=_lc_model_builder,
                                             agent_executor_kwargs={"return_intermediate_steps": True})
    else:
        agent = agent_engines.LanggraphAgent(model="scripted", tools=[never_get_time], model_builder=_lc_model_builder)
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))
    result = lf.evaluate(dataset(2), agent, ["trajectory_exact_match"], tools=lf.ToolCassette(path), **FAST)
    assert seen(result) == {("c0", 0): "recorded-0", ("c1", 0): "recorded-1"}, [r.error for r in result.runs]
    assert result.tool_levelling["levelled"] and result.tool_levelling["counts"]["replayed"] == 2


# -- the shared record under concurrency --------------------------------------------------------


def test_agents_making_the_same_call_at_once_share_one_live_call(tmp_path):
    live_calls: list[str] = []
    lock = threading.Lock()

    def slow_lookup(city: str) -> str:
        with lock:
            live_calls.append(city)
        time.sleep(0.05)
        return f"{city}@{time.time_ns()}"

    def make(name: str) -> Any:
        def agent(prompt: str, tools: Any = [slow_lookup]) -> str:  # noqa: B006 (levelfield passes tools=)
            return tools[0](city=prompt)
        agent.__name__ = name
        return agent

    agents = {f"a{i}": make(f"a{i}") for i in range(4)}
    cmp = lf.compare(dataset(10), agents, ["exact_match"], tools=lf.ToolCassette(tmp_path / "s.jsonl", mode="record"),
                     concurrency=40, **FAST)
    assert sorted(live_calls) == sorted(f"city{i}" for i in range(10))  # each call ran live once
    answers = [seen(r) for r in cmp.results.values()]
    assert all(a == answers[0] for a in answers)
    counts = [note["counts"] for note in cmp.tool_levelling.values()]
    assert sum(c["recorded"] for c in counts) == 10 and sum(c["replayed"] for c in counts) == 30


# -- the run record ------------------------------------------------------------------------------


def test_tool_events_and_the_levelling_are_journaled_and_read_back(tmp_path, recorded):
    path, _ = recorded
    out = tmp_path / "out"
    cmp = compare({"fn": function_agent}, tools=lf.ToolCassette(path), faults=lf.Faults(rate=0.3, seed=1),
                  out=out).faulted
    out = out / "faulted"  # the runs under faults have their own record beside the clean ones
    header = json.loads((out / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    cassette = lf.ToolCassette(path)
    assert header["tools"]["cassette"] == {"path": str(path), "mode": "replay", "fingerprint": cassette.fingerprint()}
    assert header["tools"]["faults"]["seed"] == 1 and header["tools"]["faults"]["schedule_version"] == 1
    loaded = lf.Comparison.load(out)
    assert [r.tool_events for r in loaded.results["fn"].runs] == [r.tool_events for r in cmp.results["fn"].runs]
    assert loaded.tool_levelling["fn"]["counts"] == cmp.tool_levelling["fn"]["counts"]


def test_resume_with_a_changed_cassette_or_fault_schedule_is_refused_naming_it(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(3))
    out = tmp_path / "out"
    lf.evaluate(dataset(3), function_agent, ["exact_match"], tools=lf.ToolCassette(path), out=out, **FAST)
    with path.open("a") as f:
        f.write(json.dumps({"case": "c9", "tool": "get_time", "args": {"city": "x"}, "output": "new"}) + "\n")
    with pytest.raises(lf.RecordError, match=r"cassette .*t\.jsonl.* changed.*fingerprint"):
        lf.evaluate(dataset(3), function_agent, ["exact_match"], tools=lf.ToolCassette(path), out=out, resume=True,
                    **FAST)
    out2 = tmp_path / "out2"
    lf.evaluate(dataset(3), function_agent, ["exact_match"], faults=lf.Faults(seed=1), out=out2, **FAST)
    with pytest.raises(lf.RecordError, match=r"fault schedule differs \(seed=1 then, 2 now\)"):
        lf.evaluate(dataset(3), function_agent, ["exact_match"], faults=lf.Faults(seed=2), out=out2, resume=True,
                    **FAST)
    with pytest.raises(lf.RecordError, match="without a cassette"):
        lf.evaluate(dataset(3), function_agent, ["exact_match"], tools=lf.ToolCassette(path), faults=lf.Faults(seed=1),
                    out=out2, resume=True, **FAST)


def test_journal_runs_without_tool_events_still_load():
    run = lf.AgentRun.model_validate({"case_id": "c", "agent_name": "a"})
    assert run.tool_events is None
    assert "tool_events" not in run.model_dump_json(exclude_none=True)


# -- bad cassettes --------------------------------------------------------------------------------


def test_a_truncated_cassette_is_refused_naming_the_file_and_line(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))
    path.write_text(path.read_text()[:-12], encoding="utf-8")
    with pytest.raises(lf.tools.CassetteError, match=r"t\.jsonl, line 3: the file ends in the middle of an entry"):
        lf.ToolCassette(path)


def test_a_cassette_of_another_version_is_refused(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(1), header={"levelfield_cassette": 99})
    with pytest.raises(lf.tools.CassetteError, match=r"t\.jsonl, line 1: version 99; this levelfield reads cassette "
                                                     "version 1"):
        lf.ToolCassette(path)


@pytest.mark.parametrize("entry, message", [
    ({"case": "c0", "tool": "get_time", "args": "city0", "output": 1}, "line 2: field 'args' must be a dict"),
    ({"case": "c0", "tool": "get_time", "args": {}}, "line 2: an entry holds either 'output' or 'error', not neither"),
])
def test_a_malformed_entry_is_refused_naming_the_line_and_field(tmp_path, entry, message):
    path = write_cassette(tmp_path / "t.jsonl", [entry])
    with pytest.raises(lf.tools.CassetteError, match=message):
        lf.ToolCassette(path)


def test_a_tool_output_a_cassette_cannot_store_fails_the_run_naming_file_and_entry(tmp_path):
    def odd(city: str) -> object:
        return object()

    def agent(prompt: str, tools: Any = [odd]) -> str:  # noqa: B006 (levelfield passes tools=)
        try:
            return str(tools[0](city=prompt))
        except Exception:  # noqa: BLE001 - an agent that swallows tool errors must not hide this one
            return "swallowed"

    path = tmp_path / "t.jsonl"
    result = lf.evaluate(dataset(1), agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), **FAST)
    run = result.runs[0]
    assert run.failure and f"cassette {path}: cannot store the answer of tool 'odd' in case 'c0'" in run.error
    assert "object output is not JSON data" in run.error


# -- what cannot be levelled, and bad options -----------------------------------------------------


def test_a_remote_a2a_agent_is_reported_as_not_levelled():
    from levelfield.adapters import A2AAgent
    from levelfield.tools.agents import level_agent
    from levelfield.tools.level import Leveller

    agent, note = level_agent(A2AAgent("http://127.0.0.1:9/", name="remote"), Leveller(None, lf.Faults()))
    assert note == {"levelled": False, "why": "a remote A2A agent: its tools run on its server"}
    assert type(agent).__name__ == "A2AAgent"


def test_an_agent_that_cannot_be_levelled_is_warned_about_and_reported(tmp_path):
    class Custom:
        name = "custom"

        async def arun(self, request):
            return lf.AgentOutput(response="x")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cmp = lf.compare(dataset(2), {"custom": Custom(), "fn": function_agent}, ["exact_match"],
                         faults=lf.Faults(seed=1), **FAST).faulted
    assert any("agent 'custom': its tools are not levelled" in str(w.message) for w in caught)
    assert cmp.tool_levelling["custom"]["levelled"] is False and cmp.tool_levelling["custom"]["counts"] is None
    assert cmp.tool_levelling["fn"]["counts"]["calls"] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"tools": "t.jsonl"}, "pass lf.ToolCassette"),
    ({"faults": 0.1}, "pass lf.Faults"),
    ({"faults": lf.Faults(), "isolation": "process"}, "do not combine with isolation='process'"),
])
def test_bad_levelling_options_are_refused(kwargs, message):
    with pytest.raises(lf.LevelfieldError, match=message):
        lf.evaluate(dataset(1), function_agent, ["exact_match"], **FAST, **kwargs)


@pytest.mark.parametrize("make, message", [
    (lambda: lf.Faults(rate=2), r"rate=2.*\[0, 1\]"),
    (lambda: lf.Faults(kinds=("boom",)), "unknown 'boom'"),
    (lambda: lf.ToolCassette("nowhere.jsonl"), "no such file"),
    (lambda: lf.ToolCassette("x.jsonl", mode="tape"), "mode='tape'"),
])
def test_bad_cassette_and_fault_settings_are_refused(make, message):
    with pytest.raises(lf.LevelfieldError, match=message):
        make()


def test_the_fault_schedule_is_a_pure_function_of_its_inputs():
    faults = lf.Faults(rate=0.3, seed=5)
    draws = [faults.fault_for(f"c{i}", t, "tool", k) for i in range(50) for t in range(2) for k in range(3)]
    assert draws == [lf.Faults(rate=0.3, seed=5).fault_for(f"c{i}", t, "tool", k)
                     for i in range(50) for t in range(2) for k in range(3)]
    hit = sum(d is not None for d in draws)
    assert 0.2 * len(draws) < hit < 0.4 * len(draws)
    assert draws != [lf.Faults(rate=0.3, seed=6).fault_for(f"c{i}", t, "tool", k)
                     for i in range(50) for t in range(2) for k in range(3)]
    assert lf.Faults(rate=1, tools=["other"]).fault_for("c0", 0, "tool", 0) is None


def test_async_function_tools_are_levelled(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))

    async def get_time(city: str) -> str:
        raise AssertionError("replayed")

    async def agent(prompt: str, tools: Any = {"get_time": get_time}) -> str:  # noqa: B006 (levelfield passes tools=)
        await asyncio.sleep(0)
        return await tools["get_time"](prompt)

    result = lf.evaluate(dataset(2), agent, ["exact_match"], tools=lf.ToolCassette(path), **FAST)
    assert seen(result) == {("c0", 0): "recorded-0", ("c1", 0): "recorded-1"}


# -- report, command line, baselines ----------------------------------------------------------------


def test_the_report_and_the_printed_comparison_say_how_each_agent_was_levelled(tmp_path, recorded):
    path, _ = recorded

    class Remote:
        name = "remote"

        async def arun(self, request):
            return lf.AgentOutput(response="x")

    cmp = compare({"fn": function_agent, "remote": Remote()}, tools=lf.ToolCassette(path),
                  faults=lf.Faults(rate=1.0, kinds=("empty",), seed=2))
    from levelfield.comparison._text import format_comparison

    text = format_comparison(cmp)
    assert f"Tools levelled: cassette {path} (replay, fingerprint {lf.ToolCassette(path).fingerprint()})" in text
    assert "fn: 20 tool calls: 20 replayed, 0 recorded, 0 live, 0 missed; 20 faulted (empty 20)" in text
    assert "remote: not levelled (Remote: no interception for this kind of agent" in text
    html_path = lf.report.write(cmp, tmp_path / "report.html")
    html = Path(html_path).read_text(encoding="utf-8")
    assert '<section id="tools"><h2>Tools</h2>' in html and "20 faulted (empty 20)" in html


def test_the_command_line_records_and_replays_a_cassette_with_faults(tmp_path, capsys):
    from levelfield.cli.main import main

    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in dataset(4)) + "\n", encoding="utf-8")
    cassette = tmp_path / "tools.jsonl"
    agent = "_levelled_agents:function_agent"
    common = ["compare", str(data), "--agent", f"a={agent}", "--agent", f"b={agent}", "-m", "exact_match", "-q",
              "--retries", "0"]
    assert main([*common, "--tools", str(cassette), "--tools-mode", "record"]) in (0, 1)
    recorded_out = capsys.readouterr().out
    assert "Tools levelled: cassette" in recorded_out and "(record," in recorded_out
    assert len(cassette.read_text().splitlines()) == 5
    faulted = ["--tools", str(cassette), "--faults", "1", "--fault-kinds", "empty", "--fault-seed", "4"]
    assert main([*common, *faulted]) in (0, 1)
    out = capsys.readouterr().out
    assert "a: 4 tool calls: 4 replayed, 0 recorded, 0 live, 0 missed; 4 faulted (empty 4)" in out
    assert "faults at rate 1, seed 4, kinds empty (schedule v1)" in out
    assert main([*common, "--fault-seed", "4"]) == 2
    assert "--fault-seed: only with --faults RATE" in capsys.readouterr().err


def test_a_baseline_run_with_another_cassette_is_refused(tmp_path):
    first = write_cassette(tmp_path / "a.jsonl", replay_entries(2))
    other = write_cassette(tmp_path / "b.jsonl", replay_entries(2))
    out = tmp_path / "base"
    lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=lf.ToolCassette(first), out=out, **FAST)
    with pytest.raises(lf.ConfigError, match=r"baseline 'base' .*ran with cassette .*a\.jsonl.*, not .*b\.jsonl"):
        lf.compare(dataset(2), {"fn": function_agent}, ["exact_match"], baseline=str(out),
                   tools=lf.ToolCassette(other), **FAST)
    same = lf.compare(dataset(2), {"fn": function_agent}, ["exact_match"], baseline=str(out),
                      tools=lf.ToolCassette(first), **FAST)
    assert set(same.agents) == {"fn", "base"}


@tool("get_time")
def live_sync_time(city: str, config: RunnableConfig) -> str:
    """The time in a city (takes the run's config, as LangChain tools may)."""
    return f"sync {city} {bool(config)}"


@tool("get_time")
async def live_async_time(city: str) -> str:
    """The time in a city."""
    await asyncio.sleep(0)
    return f"async {city}"


@pytest.mark.parametrize("live_tool, expected", [(live_sync_time, "sync city{i} True"),
                                                (live_async_time, "async city{i}")], ids=["sync_with_config", "async"])
def test_langgraph_live_tools_are_recorded_with_what_langchain_passes_them(tmp_path, live_tool, expected):
    path = tmp_path / "rec.jsonl"
    graph = create_agent(ScriptedChatModel(_lc_policy), tools=[live_tool])
    recorded = lf.evaluate(dataset(2), graph, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), **FAST)
    assert seen(recorded) == {(f"c{i}", 0): expected.format(i=i) for i in range(2)}, [r.error for r in recorded.runs]
    assert cassette_outputs(path) == {f"c{i}": expected.format(i=i) for i in range(2)}
    replay_graph = create_agent(ScriptedChatModel(_lc_policy), tools=[get_time_never])
    replayed = lf.evaluate(dataset(2), replay_graph, ["exact_match"], tools=lf.ToolCassette(path), **FAST)
    assert seen(replayed) == seen(recorded)


def test_an_injected_rate_limit_reaches_the_agent_and_is_not_waited_out_by_the_runner():
    from levelfield._core.run.failures import rate_limit_of

    def agent(prompt: str, tools: Any = [lambda city: city]) -> str:  # noqa: B006 (levelfield passes tools=)
        return tools[0](city=prompt)

    result = lf.evaluate(dataset(1), agent, ["exact_match"], faults=lf.Faults(rate=1, kinds=("rate_limit",)), **FAST)
    run = result.runs[0]
    assert run.failure and "too many calls" in run.error and run.rate_limited == 0 and run.attempts == 1
    assert rate_limit_of(lf.tools.InjectedToolRefusal("x")) is None


def test_one_recording_cassette_used_by_two_evaluations_keeps_both_recordings(tmp_path):
    path = tmp_path / "rec.jsonl"
    cassette = lf.ToolCassette(path, mode="record")
    lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=cassette, **FAST)
    lf.evaluate(dataset(3)[2:], function_agent, ["exact_match"], tools=cassette, **FAST)
    assert set(cassette_outputs(path)) == {"c0", "c1", "c2"}
    assert len(lf.ToolCassette(path)) == 3


def test_a_slow_fault_answers_as_the_tool_would_and_is_recorded_on_the_run(tmp_path):
    path = write_cassette(tmp_path / "t.jsonl", replay_entries(2))
    faults = lf.Faults(rate=1, kinds=("slow",), slow_seconds=0)
    result = lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=lf.ToolCassette(path), faults=faults,
                         **FAST)
    assert seen(result) == {("c0", 0): "recorded-0", ("c1", 0): "recorded-1"}
    assert [e["fault"] for r in result.runs for e in r.tool_events] == ["slow", "slow"]


def test_a_sync_tool_called_on_the_event_loop_does_not_wait_for_an_answer_being_recorded_there(tmp_path):
    # Events, not sleeps, order the two: the recorder's call is claimed and in progress when the sync call
    # comes, and it ends only after the sync call has returned.
    claimed, answered = asyncio.Event(), asyncio.Event()

    async def slow_async(city: str) -> str:
        claimed.set()
        await answered.wait()
        return f"async {city}"

    def quick_sync(city: str) -> str:
        return f"sync {city}"

    quick_sync.__name__ = slow_async.__name__ = "get_time"

    async def recorder(prompt: str, tools: Any = [slow_async]) -> str:  # noqa: B006 (levelfield passes tools=)
        return await tools[0](city=prompt)

    async def blocking(prompt: str, tools: Any = [quick_sync]) -> str:  # noqa: B006 (levelfield passes tools=)
        await claimed.wait()  # the recorder has claimed the call and awaits its tool on the loop
        try:
            return tools[0](city=prompt)  # a sync call on the loop's thread
        finally:
            answered.set()

    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("cmp", lf.compare(
        dataset(1), {"recorder": recorder, "blocking": blocking}, ["exact_match"],
        tools=lf.ToolCassette(tmp_path / "r.jsonl", mode="record"), **FAST)), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the comparison hung: a sync wait blocked the loop the recorder needed"
    cmp = box["cmp"]
    assert seen(cmp.results["recorder"]) == {("c0", 0): "async city0"}
    assert seen(cmp.results["blocking"]) == {("c0", 0): "sync city0"}
    assert cmp.results["blocking"].runs[0].tool_events[0]["source"] == "live"


def test_the_levelling_names_load_without_pandas_or_any_framework():
    import subprocess

    code = ("import sys, levelfield as lf; lf.ToolCassette; lf.Faults; lf.tools.CassetteError; "
            "print(sorted(m for m in ('pandas', 'pydantic', 'langchain_core', 'google.adk') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert out == "[]"
    assert {"ToolCassette", "Faults", "tools"} <= set(lf.__all__)


# -- recording never loses a recording ------------------------------------------------------------


def test_record_refuses_a_cassette_that_holds_answers_naming_the_file_and_the_options(tmp_path):
    path = tmp_path / "kept.jsonl"
    lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), **FAST)
    before = path.read_text(encoding="utf-8")
    with pytest.raises(lf.tools.CassetteError) as refused:
        lf.ToolCassette(path, mode="record")
    said = str(refused.value)
    assert str(path) in said and "holds 2 recorded answer(s)" in said
    assert "overwrite=True" in said and "--tools-overwrite" in said and "record_missing" in said
    assert path.read_text(encoding="utf-8") == before
    with pytest.raises(lf.ConfigError, match="overwrite=True"):
        lf.ToolCassette(path, mode="replay", overwrite=True)


def test_record_with_overwrite_replaces_it_and_an_empty_file_needs_no_overwrite(tmp_path):
    path = tmp_path / "kept.jsonl"
    lf.evaluate(dataset(2), function_agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), **FAST)
    lf.evaluate(dataset(3)[2:], function_agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record", overwrite=True),
                **FAST)
    assert set(cassette_outputs(path)) == {"c2"}
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert lf.ToolCassette(empty, mode="record").mode == "record"


def test_the_command_line_refuses_to_record_over_a_cassette_unless_told(tmp_path, capsys):
    from levelfield.cli.main import main

    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in dataset(2)) + "\n", encoding="utf-8")
    cassette = tmp_path / "tools.jsonl"
    common = ["eval", str(data), "--agent", "_levelled_agents:function_agent", "-m", "exact_match", "-q",
              "--retries", "0", "--tools", str(cassette), "--tools-mode", "record"]
    assert main(common) in (0, 1)
    before = cassette.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(common) == 2
    err = capsys.readouterr().err
    assert str(cassette) in err and "--tools-overwrite" in err
    assert cassette.read_text(encoding="utf-8") == before
    assert main([*common, "--tools-overwrite"]) in (0, 1)
    assert main(["eval", str(data), "--agent", "_levelled_agents:function_agent", "-m", "exact_match", "-q",
                 "--tools", str(cassette), "--tools-overwrite"]) == 2
    assert "only with --tools-mode record" in capsys.readouterr().err


def test_the_record_header_fingerprints_what_was_recorded(tmp_path):
    path = tmp_path / "rec.jsonl"
    out = tmp_path / "out"
    lf.evaluate(dataset(3), function_agent, ["exact_match"], tools=lf.ToolCassette(path, mode="record"), out=out, **FAST)
    header = json.loads((out / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    written = lf.ToolCassette(path).fingerprint()
    assert header["tools"]["cassette"]["fingerprint"] == written
    assert header["tools"]["cassette"]["start_fingerprint"] != written  # the empty start
    assert lf.EvalResult.load(out).tools_header["cassette"]["fingerprint"] == written


# -- one fault, one record, in every framework --------------------------------------------------------


@pytest.mark.parametrize("kind", ["error", "timeout"])
def test_one_injected_fault_is_one_error_type_in_adk_langgraph_and_function_agents(kind, caplog):
    import logging

    agents = {"lg": langgraph_agent(), "adk": adk_agent(), "fn": function_agent}
    with caplog.at_level(logging.ERROR):
        cmp = lf.compare(dataset(2), agents, ["exact_match"], faults=lf.Faults(rate=1, seed=1, kinds=(kind,)), **FAST)
    said = {"error": "InjectedToolError: tool 'get_time' failed (injected fault 'error')",
            "timeout": "InjectedToolTimeout: tool 'get_time' timed out (injected fault 'timeout')"}[kind]
    for name in agents:
        for run in cmp.faulted.results[name].runs:
            assert run.failure and run.error_type == "tool_error", (name, run.error_type, run.error)
            assert run.error == f"agent {name!r} on case {run.case_id!r}: a tool raised and the agent did not handle it: {said}"
            assert run.traceback is not None and said in run.traceback
    # ADK's own frames (the framework's wrapper of the fault) are kept in the record, not printed.
    adk_trace = cmp.faulted.results["adk"].runs[0].traceback
    assert "google/adk" in adk_trace.replace("\\", "/") and "Error in plugin 'levelfield_tools'" in adk_trace
    assert not [r for r in caplog.records if r.name.startswith("google_adk") and r.exc_info]


def test_an_adk_agent_that_blocks_the_loop_under_tools_gets_no_advice_it_cannot_follow(tmp_path, monkeypatch):
    from google.adk.agents import LlmAgent

    from levelfield._core.run.watchdog import BlockingAgentWarning
    from levelfield.adapters.adk import AdkAgent

    session = AdkAgent._session

    async def slow_session(self: Any, request: Any) -> str:
        time.sleep(1.1)  # blocking code of the framework's, in the run's own step (as a first import is)
        return await session(self, request)

    monkeypatch.setattr(AdkAgent, "_session", slow_session)
    agent = LlmAgent(name="adk", model=EchoLlm(), tools=[adk_get_time])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = lf.evaluate(dataset(1), agent, ["exact_match"], tools=lf.ToolCassette(tmp_path / "c.jsonl", mode="record"),
                             concurrency=1, **FAST)
    assert len(result.runs) == 1  # (its live tool fails at random: either way, no warning)
    assert not [w for w in seen if issubclass(w.category, BlockingAgentWarning)]
    blocking = [w for w in seen if "blocked the event loop" in str(w.message)]
    assert not blocking
