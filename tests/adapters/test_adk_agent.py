"""ADK agents passed as they are (no AdkApp, no vertexai.init): run by ADK's own Runner, offline.

The models are a scripted ADK ``BaseLlm`` and ADK's real ``Gemini`` class talking to a local
stand-in of the generateContent API on 127.0.0.1."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

import levelfield as lf
from levelfield._core.data.protocol import AgentRequest
from levelfield.adapters.adk import AdkAgent
from levelfield.testing import ScriptedUser

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _gemini_standin import GeminiStandIn  # noqa: E402

FAST = {"progress": False, "retries": 0}
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class StepLlm(BaseLlm):
    """An ADK model playing a script: step i of a turn is its i-th answer since the user's last message."""

    model: str = "scripted"
    steps: list[Any] = []

    async def generate_content_async(self, llm_request, stream: bool = False):
        contents = llm_request.contents
        start = max(
            (i for i, c in enumerate(contents)
             if c.role == "user" and any(p.text and not p.text.startswith("For context:") for p in c.parts or [])),
            default=-1,
        )
        spec = self.steps[min(sum(1 for c in contents[start + 1:] if c.role == "model"), len(self.steps) - 1)]
        if callable(spec):
            spec = spec(contents[start].parts[0].text)
        parts = ([types.Part(text=spec)] if isinstance(spec, str)
                 else [types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in spec])
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=10, candidates_token_count=3, total_token_count=13)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage, model_version=self.model)


def get_weather(city: str) -> str:
    """The weather in a city."""
    return {"Oslo": "Schnee", "東京": "晴れ"}.get(city, "unbekannt")


def refund(invoice: int, tool_context: ToolContext) -> str:
    """Refund an invoice."""
    tool_context.state["refunded"] = invoice
    tool_context.state["temp:scratch"] = "gone after the turn"
    return f"Rechnung {invoice} erstattet"


def flaky_lookup(query: str) -> str:
    """Look something up (always raises)."""
    raise ConnectionError(f"Datenbank nicht erreichbar für {query}")


def run(agent: Any, prompt: str = "Hallo", **kwargs: Any) -> lf.AgentOutput:
    request = AgentRequest(prompt=prompt, case_id="c", session_id="s", **kwargs)
    return asyncio.run(lf.as_agent(agent).arun(request))


def desk() -> LlmAgent:
    billing = LlmAgent(name="billing", description="Refunds invoices.",
                       model=StepLlm(model="billing-model", steps=[[("refund", {"invoice": 7})], "Rechnung 7 erstattet."]),
                       tools=[refund])
    return LlmAgent(name="desk", model=StepLlm(model="desk-model", steps=[[("transfer_to_agent", {"agent_name": "billing"})], "-"]),
                    sub_agents=[billing])


# -- as_agent ----------------------------------------------------------------------------------


def test_as_agent_takes_an_llm_agent_a_workflow_agent_and_an_app():
    weather = LlmAgent(name="weather", model=StepLlm(steps=["ok"]))
    assert isinstance(lf.as_agent(weather), AdkAgent) and lf.as_agent(weather).name == "weather"
    pipeline = SequentialAgent(name="pipeline", sub_agents=[LlmAgent(name="a", model=StepLlm(steps=["ok"]))])
    assert isinstance(lf.as_agent(pipeline), AdkAgent)
    loop = LoopAgent(name="loop", max_iterations=1, sub_agents=[LlmAgent(name="b", model=StepLlm(steps=["ok"]))])
    assert isinstance(lf.as_agent(loop), AdkAgent)
    app = App(name="wetter_app", root_agent=LlmAgent(name="c", model=StepLlm(steps=["ok"])))
    assert lf.as_agent(app).name == "wetter_app"
    assert lf.as_agent(weather, name="mein_agent").name == "mein_agent"


def test_detecting_agents_does_not_import_adk_for_other_objects():
    code = (
        "import sys, levelfield as lf\n"
        "lf.as_agent(lambda prompt: 'ok')\n"
        "class Thing:\n    def __call__(self, prompt): return 'ok'\n"
        "lf.as_agent(Thing())\n"
        "print('google.adk' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


# -- what one run records ---------------------------------------------------------------------


def test_a_tool_call_through_adks_real_gemini_class_is_recorded_with_usage_and_model():
    with GeminiStandIn({"gemini-test": [[("get_weather", {"city": "東京"})], "東京は晴れです。"]}) as server:
        agent = LlmAgent(name="weather", model=server.model("gemini-test"), tools=[get_weather])
        output = run(agent, "東京の天気は?")
        assert len(server.requests) == 2
    assert output.response == "東京は晴れです。"
    assert [(c.tool_name, c.tool_input, c.tool_output, c.agent) for c in output.trajectory] == [
        ("get_weather", {"city": "東京"}, "晴れ", "weather")
    ]
    # The stand-in reports the request's content count as prompt tokens: 1, then 3 (user, call, result).
    assert (output.usage.input_tokens, output.usage.output_tokens, output.usage.total_tokens) == (4, 8, 12)
    assert output.usage.model == "gemini-test-001"
    assert output.model_calls == 2


def test_a_transfer_to_a_sub_agent_is_a_handoff_and_its_calls_are_attributed_to_it():
    output = run(desk(), "Geld zurück für Rechnung 7")
    assert [(c.tool_name, c.agent) for c in output.trajectory] == [("transfer_to_agent", "desk"), ("refund", "billing")]
    assert [(h.from_agent, h.to_agent) for h in output.handoffs] == [("desk", "billing")]
    assert output.response == "Rechnung 7 erstattet."
    assert output.model_calls == 3


def test_calls_inside_an_agent_tool_are_recovered_and_attributed():
    researcher = LlmAgent(name="researcher", model=StepLlm(steps=[[("get_weather", {"city": "Oslo"})], "Schnee"]),
                          tools=[get_weather])
    front = LlmAgent(name="front", model=StepLlm(steps=[[("researcher", {"request": "Oslo"})], "In Oslo schneit es."]),
                     tools=[AgentTool(researcher)])
    output = run(front, "Wetter in Oslo?")
    assert [(c.tool_name, c.agent) for c in output.trajectory] == [("researcher", "front"), ("get_weather", "researcher")]
    assert output.trajectory[1].tool_output == "Schnee"


def test_a_sequential_agent_hands_control_from_step_to_step():
    fetch = LlmAgent(name="fetch", model=StepLlm(steps=[[("get_weather", {"city": "Oslo"})], "Schnee"]), tools=[get_weather],
                     output_key="wetter")
    write = LlmAgent(name="write", model=StepLlm(steps=["Bericht: Schnee in Oslo."]))
    output = run(SequentialAgent(name="pipeline", sub_agents=[fetch, write]))
    assert [(c.tool_name, c.agent) for c in output.trajectory] == [("get_weather", "fetch")]
    assert [(h.from_agent, h.to_agent) for h in output.handoffs] == [("fetch", "write")]
    assert output.response == "Bericht: Schnee in Oslo."
    assert output.state == {"wetter": "Schnee"}


def test_parallel_sub_agents_both_run():
    a = LlmAgent(name="oslo", model=StepLlm(steps=[[("get_weather", {"city": "Oslo"})], "ok"]), tools=[get_weather])
    b = LlmAgent(name="tokyo", model=StepLlm(steps=[[("get_weather", {"city": "東京"})], "ok"]), tools=[get_weather])
    output = run(ParallelAgent(name="both", sub_agents=[a, b]))
    assert sorted((c.tool_input["city"], c.agent) for c in output.trajectory) == [("Oslo", "oslo"), ("東京", "tokyo")]


def test_the_initial_state_reaches_the_session_and_the_final_state_comes_back_without_temp_keys():
    seen = {}

    def greet(tool_context: ToolContext) -> str:
        """Greet the customer."""
        seen.update(tool_context.state.to_dict())
        return f"Hallo {tool_context.state['kunde']}"

    agent = LlmAgent(name="desk", model=StepLlm(steps=[[("greet", {})], [("refund", {"invoice": 7})], "fertig"]),
                     tools=[greet, refund])
    output = run(agent, state={"kunde": "Müller", "stufe": 2})
    assert seen == {"kunde": "Müller", "stufe": 2}
    assert output.state == {"kunde": "Müller", "stufe": 2, "refunded": 7}


def test_an_app_keeps_its_plugins():
    class Prefix(BasePlugin):
        async def after_model_callback(self, *, callback_context, llm_response):
            if llm_response.content and llm_response.content.parts and llm_response.content.parts[0].text:
                llm_response.content.parts[0].text = "[geprüft] " + llm_response.content.parts[0].text
            return llm_response

    app = App(name="geprueft", root_agent=LlmAgent(name="a", model=StepLlm(steps=["Antwort"])), plugins=[Prefix(name="prefix")])
    assert run(app).response == "[geprüft] Antwort"


# -- failures -----------------------------------------------------------------------------------


def test_a_tool_that_raises_fails_the_run_and_its_call_keeps_the_error():
    agent = LlmAgent(name="searcher", model=StepLlm(steps=[[("flaky_lookup", {"query": "Rechnung"})], "?"]), tools=[flaky_lookup])
    result = lf.evaluate([{"prompt": "Suche"}], agent, ["trajectory_recall"], **FAST)
    run_ = result.runs[0]
    assert run_.failure and run_.error_type == "ConnectionError"
    assert "Datenbank nicht erreichbar für Rechnung" in run_.error
    [call] = run_.partial_output.trajectory
    assert call.tool_name == "flaky_lookup" and call.error == "ConnectionError: Datenbank nicht erreichbar für Rechnung"


def test_a_tool_error_the_agent_answers_for_is_recorded_and_the_run_goes_on():
    def answer_error(tool, args, tool_context, error):
        return {"error": f"{type(error).__name__}: {error}"}

    agent = LlmAgent(name="searcher", model=StepLlm(steps=[[("flaky_lookup", {"query": "Rechnung"})], "Später nochmal."]),
                     tools=[flaky_lookup], on_tool_error_callback=answer_error)
    output = run(agent)
    assert output.response == "Später nochmal."
    assert output.trajectory[0].error == "ConnectionError: Datenbank nicht erreichbar für Rechnung"


def test_an_agent_that_raises_is_a_failed_run_and_the_other_cases_go_on():
    class Moody(StepLlm):
        async def generate_content_async(self, llm_request, stream: bool = False):
            if "kaputt" in llm_request.contents[-1].parts[0].text:
                raise RuntimeError("model backend down")
            async for response in super().generate_content_async(llm_request, stream):
                yield response

    agent = LlmAgent(name="moody", model=Moody(steps=["ok"]))
    rows = [{"case_id": "a", "prompt": "eins", "reference": "ok"}, {"case_id": "b", "prompt": "kaputt", "reference": "ok"},
            {"case_id": "c", "prompt": "drei", "reference": "ok"}]
    result = lf.evaluate(rows, agent, ["exact_match"], **FAST)
    assert [r.failure for r in result.runs] == [False, True, False]
    assert "model backend down" in result.runs[1].error
    assert list(result.metrics_table["exact_match/score"].fillna(-1)) == [1.0, -1, 1.0]


# -- cases of several turns, simulated users, comparisons -------------------------------------


def test_a_multi_turn_case_keeps_one_session_across_its_turns():
    def remember(tool_context: ToolContext, item: str = "") -> str:
        """Remember an item, or list what was remembered."""
        items = list(tool_context.state.get("items", []))
        if item:
            items.append(item)
            tool_context.state["items"] = items
        return ", ".join(items)

    agent = LlmAgent(name="notes", model=StepLlm(steps=[
        lambda said: [("remember", {"item": said.split()[-1]} if "merke" in said else {})], "notiert"]), tools=[remember])
    rows = [{"case_id": "m", "turns": [{"prompt": "merke Milch"}, {"prompt": "merke Brot"}, {"prompt": "was noch?"}]},
            {"case_id": "n", "turns": [{"prompt": "merke Käse"}, {"prompt": "was noch?"}]}]
    result = lf.evaluate(rows, agent, [], **FAST)
    first, second = result.runs
    assert [t.trajectory[0].tool_output for t in first.turns] == ["Milch", "Milch, Brot", "Milch, Brot"]
    assert [t.trajectory[0].tool_output for t in second.turns] == ["Käse", "Käse"]  # its own session
    assert first.turns[-1].state == {"items": ["Milch", "Brot"]}


def test_a_simulated_user_talks_to_an_adk_agent_in_one_session():
    agent = LlmAgent(name="travel", model=StepLlm(steps=[
        lambda said: "Which city?" if "flight" in said else [("get_weather", {"city": "Oslo"})], "Booked Oslo."]),
        tools=[get_weather])
    rows = [{"case_id": "s", "scenario": {"starting_prompt": "I need a flight.", "conversation_plan": "Fly to Oslo."}}]
    user = ScriptedUser([("which city", "Oslo, please."), ("booked", None)])
    result = lf.evaluate(rows, agent, ["turns_used"], simulator=user, **FAST)
    run_ = result.runs[0]
    assert not run_.failure, run_.error
    assert [t.response for t in run_.turns] == ["Which city?", "Booked Oslo."]
    assert [c.tool_name for t in run_.turns for c in t.trajectory] == ["get_weather"]


def test_compare_an_adk_agent_beside_a_function_agent():
    def function_agent(prompt: str) -> dict:
        return {"response": "Schnee", "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Berlin"}}]}

    adk = LlmAgent(name="weather", model=StepLlm(steps=[[("get_weather", {"city": "Oslo"})], "Schnee"]), tools=[get_weather])
    rows = [{"case_id": f"c{i}", "prompt": "Wetter in Oslo?", "reference": "Schnee",
             "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}]} for i in range(3)]
    cmp = lf.compare(rows, {"adk": adk, "function": function_agent}, ["trajectory_exact_match", "exact_match"], **FAST)
    means = cmp.summary
    assert means.loc["adk", "trajectory_exact_match/mean"] == 1.0
    assert means.loc["function", "trajectory_exact_match/mean"] == 0.0
    assert means.loc["adk", "exact_match/mean"] == means.loc["function", "exact_match/mean"] == 1.0


def test_without_google_adk_the_error_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_adk(name, *args, **kwargs):
        if name.startswith("google.adk"):
            raise ImportError("No module named 'google.adk'")
        return real_import(name, *args, **kwargs)

    agent = LlmAgent(name="x", model=StepLlm(steps=["ok"]))
    monkeypatch.setattr(builtins, "__import__", no_adk)
    with pytest.raises(lf.MissingExtraError, match=r"levelfield\[adk\]"):
        AdkAgent(agent)


# -- ADK's efficiency criteria, computed by ADK on the same invocations ------------------------


def test_efficiency_criteria_equal_adks_own_evaluators_on_the_same_live_run(capsys):
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    from levelfield._core.results.criteria import efficiency_criteria

    # Two turns: a tool call then an answer (2 model calls); an answer without a call (1 model call).
    agent = AdkAgent(LlmAgent(name="weather", model=StepLlm(steps=[
        lambda said: [("get_weather", {"city": "Oslo"})] if "Wetter" in said else "Gern.", "Schnee in Oslo."]),
        tools=[get_weather]))
    rows = [{"case_id": "c", "turns": [{"prompt": "Wetter in Oslo?"}, {"prompt": "Danke!"}]}]
    names = [c.metric for c in efficiency_criteria()]
    result = lf.evaluate(rows, agent, names, **FAST)
    run_ = result.runs[0]
    assert not run_.failure, run_.error

    # ADK's own reading of the session's events into invocations, timed with the turns' recorded seconds.
    [session_id] = agent._sessions.values()
    session = asyncio.run(agent.runner.session_service.get_session(
        app_name=agent.runner.app_name, user_id=agent.user_id, session_id=session_id))
    invocation_ids = list(dict.fromkeys(e.invocation_id for e in session.events))
    durations = {i: round(t.duration_seconds, 3) for i, t in zip(invocation_ids, run_.turns)}
    invocations = EvaluationGenerator.convert_events_to_eval_invocations(session.events, durations_per_invocation=durations)
    assert len(invocations) == 2

    scores = result.scores[0]
    report = {}
    for name in names:
        adk = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name=name)).evaluate_invocations(invocations, None)
        ours = scores[f"{name}/score"]
        report[name] = (adk.overall_score, ours)
        assert ours == pytest.approx(adk.overall_score), name
        assert scores[f"{name}/per_turn"] == pytest.approx([r.score for r in adk.per_invocation_results]), name
    assert report["tool_call_count_v1"] == (0.5, 0.5)
    assert report["inference_call_count_v1"] == (1.5, 1.5)
    assert report["token_usage_v1"] == (19.5, 19.5)  # 13 tokens a model call
    with capsys.disabled():
        print("\nADK vs levelfield (overall, per invocation):", report)


@pytest.mark.parametrize("name", ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"])
def test_a_threshold_for_an_efficiency_criterion_is_refused_in_adks_own_words(name):
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY

    from levelfield._core.results.criteria import load_criteria

    with pytest.raises(ValueError) as adk:
        DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(EvalMetric(metric_name=name, threshold=1.0))
    with pytest.raises(lf.MetricError) as ours:
        load_criteria({name: 1.0})
    assert str(adk.value) in str(ours.value)
