"""LangChainAgent on real LangChain / LangGraph agents driven by the scripted chat model."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import levelfield as lf
from levelfield import as_agent
from levelfield._core.data.dataset import EvalCase, EvalDataset, Turn
from levelfield.adapters import LangChainAgent
from levelfield.adapters.langchain_recorder import TrajectoryRecorder
from levelfield.testing import ScriptedChatModel, last_human_text, tool_outputs_by_turn
from samples.home_automation.agents.function_agents import careful_agent
from samples.home_automation.agents.langgraph_agent import make_graph, make_model
from samples.home_automation.tools import TOOLS, ToolError

DATASET = "samples/home_automation/dataset.jsonl"
EXACT = ["trajectory_exact_match"]


def evaluate(agent, dataset=DATASET, **kwargs):
    kwargs.setdefault("progress", False)
    kwargs.setdefault("retries", 0)
    return lf.evaluate(dataset, agent, metrics=kwargs.pop("metrics", EXACT), **kwargs)


def run_one(agent, prompt: str, **kwargs) -> lf.AgentOutput:
    return asyncio.run(as_agent(agent).arun(lf.AgentRequest(prompt=prompt, case_id="c", **kwargs)))


def usage_of(messages) -> tuple[int, int, int]:
    metas = [m.usage_metadata for m in messages if isinstance(m, AIMessage) and m.usage_metadata]
    return tuple(sum(u[k] for u in metas) for k in ("input_tokens", "output_tokens", "total_tokens"))


class ErrorsAsText(AgentMiddleware):
    """create_agent middleware that hands a failing tool's error back to the model, as ToolNode can."""

    def _error(self, request, exc):
        return ToolMessage(f"Error: {exc}", tool_call_id=request.tool_call["id"], name=request.tool_call["name"], status="error")

    def wrap_tool_call(self, request, handler):
        try:
            return handler(request)
        except ToolError as exc:
            return self._error(request, exc)

    async def awrap_tool_call(self, request, handler):
        try:
            return await handler(request)
        except ToolError as exc:
            return self._error(request, exc)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
async def slow_lookup(key: str) -> str:
    """Look a key up, slowly for the first keys."""
    # Later calls finish first, so completion order is the reverse of the model's order.
    await asyncio.sleep({"a": 0.03, "b": 0.02, "c": 0.01}.get(key, 0))
    return f"value of {key}"


# -- every kind of agent on the sample tools -------------------------------------------------


def test_sample_langgraph_agent_auto_wrapped_matches_every_reference_trajectory():
    from samples.home_automation.agents.langgraph_agent import agent

    result = evaluate(agent)
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert result.summary_metrics["row_count"] == 18


def test_sample_langgraph_agent_answers_like_the_function_agent():
    result = evaluate(make_graph("careful"), metrics=["exact_match"])
    ours = {r.case_id: r.output.response for r in result.runs}
    theirs = {r.case_id: r.output.response for r in evaluate(careful_agent, metrics=["exact_match"]).runs}
    assert ours == theirs


def test_create_agent_matches_every_reference_trajectory():
    graph = create_agent(make_model(), tools=TOOLS, middleware=[ErrorsAsText()], name="lc-react")
    result = evaluate(graph)
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert {r.agent_name for r in result.runs} == {"lc-react"}


def test_deprecated_create_react_agent_matches_every_reference_trajectory():
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(make_model(), ToolNode(TOOLS, handle_tool_errors=lambda e: f"Error: {e}"))
    assert evaluate(graph).summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_sync_only_graph_matches_every_reference_trajectory():
    model = make_model().bind_tools(TOOLS)
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(TOOLS, handle_tool_errors=lambda e: f"Error: {e}"))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    assert evaluate(builder.compile()).summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_agent_executor_matches_every_reference_trajectory():
    agents = pytest.importorskip("langchain_classic.agents")
    from langchain_core.prompts import MessagesPlaceholder
    from langchain_core.tools import StructuredTool, ToolException

    def with_errors_as_observations(fn):
        # AgentExecutor hands a ToolException's text to the model when handle_tool_error is set.
        def run(**kwargs):
            try:
                return fn(**kwargs)
            except ToolError as exc:
                raise ToolException(f"Error: {exc}") from exc

        schema = StructuredTool.from_function(fn).args_schema
        return StructuredTool(name=fn.__name__, description=fn.__doc__, func=run, args_schema=schema, handle_tool_error=True)

    tools = [with_errors_as_observations(fn) for fn in TOOLS]
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You control a home."), ("human", "{input}"), MessagesPlaceholder("agent_scratchpad")]
    )
    executor = agents.AgentExecutor(agent=agents.create_tool_calling_agent(make_model(), tools, prompt), tools=tools)
    result = evaluate(executor)
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    garage = next(r for r in result.runs if r.case_id == "unknown_room")
    assert garage.output.trajectory[0].tool_output == "Error: unknown location 'Garage'"
    assert garage.output.response.startswith("I could not read the temperature in the Garage")


def test_chain_returning_a_string_gives_the_response_and_no_trajectory():
    output = run_one(RunnableLambda(lambda text: text.upper()), "hello")
    assert output.response == "HELLO" and output.trajectory == []


def test_prompt_model_chain_fills_the_prompt_variable_and_returns_the_message_text():
    chain = ChatPromptTemplate.from_messages([("human", "Q: {question}")]) | ScriptedChatModel(
        lambda messages: f"you asked {last_human_text(messages)}"
    )
    assert run_one(chain, "why").response == "you asked Q: why"


def test_chain_returning_a_dict_uses_its_answer():
    chain = RunnableLambda(lambda text: {"answer": f"about {text}", "sources": []})
    assert run_one(chain, "cats").response == "about cats"


def test_input_key_names_where_the_prompt_goes():
    chain = RunnableLambda(lambda d: d["topic"] + "!")
    assert run_one(LangChainAgent(chain, input_key="topic"), "cats").response == "cats!"


def test_chain_returning_an_unreadable_value_is_a_failed_run_saying_what_was_expected():
    result = evaluate(RunnableLambda(lambda text: 42), [{"case_id": "c", "prompt": "x"}], metrics=[])
    run = result.runs[0]
    assert run.failure and run.error_type == "bad_output" and "expected a str" in run.error


# -- trajectory details ----------------------------------------------------------------------


def test_parallel_tool_calls_keep_the_models_order_not_completion_order():
    def policy(messages):
        if not tool_outputs_by_turn(messages):
            return [("slow_lookup", {"key": k}) for k in "abc"]
        return "done"

    output = run_one(create_agent(ScriptedChatModel(policy), tools=[slow_lookup]), "go")
    assert [c.tool_input["key"] for c in output.trajectory] == ["a", "b", "c"]
    assert [c.tool_output for c in output.trajectory] == ["value of a", "value of b", "value of c"]


def test_recorder_orders_calls_by_model_call_and_position_whatever_the_start_order():
    import uuid

    from langchain_core.outputs import ChatGeneration, LLMResult

    recorder = TrajectoryRecorder()
    calls = [{"name": "t", "args": {"i": i}, "id": f"id{i}"} for i in range(3)]
    recorder.on_llm_end(LLMResult(generations=[[ChatGeneration(message=AIMessage("", tool_calls=calls))]]), run_id=uuid.uuid4())
    for i in (2, 0, 1):  # the tools start in another order
        recorder.on_tool_start({"name": "t"}, "", run_id=uuid.uuid4(), inputs={"i": i}, tool_call_id=f"id{i}")
    assert [c.tool_input["i"] for c in recorder.trajectory()] == [0, 1, 2]


def test_tool_error_handled_by_the_graph_is_recorded_on_the_call_not_a_failed_run():
    result = evaluate(make_graph(), [{"case_id": "garage", "prompt": "What is the temperature in the Garage?"}], metrics=[])
    run = result.runs[0]
    assert not run.failure
    call = run.output.trajectory[0]
    assert "unknown location 'Garage'" in call.error
    assert call.tool_output == "Error: unknown location 'Garage'"


def test_tool_error_the_graph_does_not_handle_fails_the_run_as_tool_error_with_the_call_kept():
    graph = create_agent(make_model(), tools=TOOLS)  # create_agent re-raises tool errors by default
    result = evaluate(graph, [{"case_id": "garage", "prompt": "What is the temperature in the Garage?"}], metrics=[])
    run = result.runs[0]
    assert run.failure and run.error_type == "tool_error"
    assert [c.tool_name for c in run.partial_output.trajectory] == ["get_temperature"]


def _sub_agent_graph():
    def inner_policy(messages):
        if not tool_outputs_by_turn(messages):
            return [("lookup", {"key": "inner"})]
        return "inner says " + tool_outputs_by_turn(messages)[0][0]

    inner = create_agent(ScriptedChatModel(inner_policy, model_name="inner"), tools=[lookup], name="researcher")

    @tool
    async def ask_researcher(question: str) -> str:
        """Ask the research sub-agent."""
        result = await inner.ainvoke({"messages": [HumanMessage(question)]})
        return result["messages"][-1].content

    def outer_policy(messages):
        if not tool_outputs_by_turn(messages):
            return [("ask_researcher", {"question": "what?"}), ("lookup", {"key": "outer"})]
        return "all done"

    outer = create_agent(ScriptedChatModel(outer_policy, model_name="outer"), tools=[ask_researcher, lookup], name="boss")
    return outer, inner


def test_calls_of_a_sub_agent_inside_a_tool_are_attributed_to_it_and_follow_that_tool():
    outer, _ = _sub_agent_graph()
    output = run_one(outer, "go")
    # The top-level agent's calls name it too (the graph's name).
    assert [(c.tool_name, c.tool_input, c.agent) for c in output.trajectory] == [
        ("ask_researcher", {"question": "what?"}, "boss"),
        ("lookup", {"key": "inner"}, "researcher"),
        ("lookup", {"key": "outer"}, "boss"),
    ]
    assert [(h.from_agent, h.to_agent) for h in output.handoffs] == [("boss", "researcher"), ("researcher", "boss")]
    assert output.model_calls == 4  # two of the boss, two of the researcher


def test_calls_inside_a_subgraph_node_are_attributed_to_the_subgraph():
    _, inner = _sub_agent_graph()
    builder = StateGraph(MessagesState)
    builder.add_node("researcher", inner)
    builder.add_edge(START, "researcher")
    output = run_one(builder.compile(), "go")
    assert [(c.tool_name, c.agent) for c in output.trajectory] == [("lookup", "researcher")]


def test_usage_sums_every_model_call_including_the_sub_agents():
    outer, inner = _sub_agent_graph()
    output = run_one(outer, "go")
    inner_usage = usage_of(inner.invoke({"messages": [HumanMessage("what?")]})["messages"])
    outer_usage = usage_of(output.raw["messages"])
    expected = tuple(a + b for a, b in zip(outer_usage, inner_usage))
    assert (output.usage.input_tokens, output.usage.output_tokens, output.usage.total_tokens) == expected
    assert inner_usage[2] > 0


# -- failures --------------------------------------------------------------------------------


def _looping_graph():
    return create_agent(ScriptedChatModel(lambda messages: [("lookup", {"key": "again"})]), tools=[lookup])


def test_recursion_limit_fails_the_run_as_recursion_limit_with_the_partial_trajectory():
    agent = LangChainAgent(_looping_graph(), name="looper", recursion_limit=6)
    run = evaluate(agent, [{"case_id": "loop", "prompt": "go"}], metrics=[]).runs[0]
    assert run.failure and run.error_type == "recursion_limit"
    assert "recursion limit of 6" in run.error
    assert run.partial_output.trajectory and {c.tool_name for c in run.partial_output.trajectory} == {"lookup"}


def test_timeout_cancels_the_run_and_keeps_the_calls_made_before_it():
    @tool
    async def wait_forever(key: str) -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "unreachable"

    def policy(messages):
        steps = tool_outputs_by_turn(messages)
        return [("lookup", {"key": "first"})] if not steps else [("wait_forever", {"key": "second"})]

    graph = create_agent(ScriptedChatModel(policy), tools=[lookup, wait_forever])
    # Both calls are made before the timeout: 3 s for two model turns and a tool on a loaded machine.
    run = evaluate(graph, [{"case_id": "hang", "prompt": "go"}], metrics=[], timeout=3).runs[0]
    assert run.failure and run.error_type == "timeout"
    assert [c.tool_name for c in run.partial_output.trajectory] == ["lookup", "wait_forever"]
    assert run.partial_output.trajectory[0].tool_output == "value of first"


def test_model_error_fails_the_run_as_model_error_with_the_partial_trajectory():
    def policy(messages):
        if not tool_outputs_by_turn(messages):
            return [("lookup", {"key": "k"})]
        raise RuntimeError("quota exceeded")

    graph = create_agent(ScriptedChatModel(policy), tools=[lookup])
    run = evaluate(graph, [{"case_id": "boom", "prompt": "go"}], metrics=[]).runs[0]
    assert run.failure and run.error_type == "model_error" and "quota exceeded" in run.error
    assert [c.tool_input for c in run.partial_output.trajectory] == [{"key": "k"}]


# -- concurrency -----------------------------------------------------------------------------


def test_fifty_concurrent_runs_give_the_same_trajectories_as_serial_runs():
    graph = create_agent(make_model(), tools=TOOLS, middleware=[ErrorsAsText()])

    def trajectories(concurrency):
        result = evaluate(graph, trials=3, concurrency=concurrency, metrics=[])
        return [(r.case_id, r.trial, [c.to_vertex() for c in r.output.trajectory], r.output.usage) for r in result.runs]

    concurrent = trajectories(50)
    assert len(concurrent) == 54
    assert concurrent == trajectories(1)


# -- multi-turn ------------------------------------------------------------------------------


def _counting_graph(checkpointer=None):
    def policy(messages):
        said = [m.content for m in messages if isinstance(m, HumanMessage)]
        return f"I have heard {len(said)}: {' / '.join(said)}"

    return create_agent(ScriptedChatModel(policy), tools=[], checkpointer=checkpointer)


TWO_TURNS = EvalDataset([EvalCase(case_id="chat", prompt="hello", turns=[Turn(prompt="hello"), Turn(prompt="again")])])


def test_multi_turn_without_checkpointer_sends_prior_turns_as_history():
    run = evaluate(_counting_graph(), TWO_TURNS, metrics=[]).runs[0]
    assert [t.response for t in run.turns][-1] == "I have heard 2: hello / again"


def test_multi_turn_with_checkpointer_continues_the_thread_without_resending_history():
    run = evaluate(_counting_graph(InMemorySaver()), TWO_TURNS, metrics=[]).runs[0]
    assert run.turns[-1].response == "I have heard 2: hello / again"


def test_each_trial_gets_a_fresh_thread_of_the_checkpointer():
    runs = evaluate(_counting_graph(InMemorySaver()), TWO_TURNS, metrics=[], trials=2).runs
    assert [r.turns[0].response for r in runs] == ["I have heard 1: hello", "I have heard 1: hello"]


def test_case_history_becomes_prior_messages():
    case = [{"case_id": "h", "prompt": "now", "history": [{"role": "user", "content": "before"}, {"role": "assistant", "content": "ok"}]}]
    run = evaluate(_counting_graph(), case, metrics=[]).runs[0]
    assert run.output.response == "I have heard 2: before / now"


# -- wrapping ---------------------------------------------------------------------------------


def test_as_agent_wraps_compiled_graphs_and_runnables_in_langchain_agent():
    graph = make_graph(name="home")
    assert isinstance(as_agent(graph), LangChainAgent) and as_agent(graph).name == "home"
    assert isinstance(as_agent(RunnableLambda(lambda x: x)), LangChainAgent)


def test_langchain_agent_refuses_what_is_not_a_runnable():
    with pytest.raises(TypeError, match="Runnable"):
        LangChainAgent(lambda prompt: prompt)


def test_missing_langchain_core_names_the_extra_to_install():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "from levelfield._core.errors import MissingExtraError\n"
        "try:\n"
        "    from levelfield.adapters import LangChainAgent\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'levelfield[langchain]'" in out and "LangChainAgent" in out
