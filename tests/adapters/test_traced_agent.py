"""TracedAgent: a real pydantic-ai agent on its offline TestModel, instrumented, evaluated from the
spans it emits; concurrent runs keep their own spans; failures stay recorded runs."""

from __future__ import annotations

import asyncio
import json
import random
import threading

import pytest

import levelfield as lf

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from levelfield.adapters import TracedAgent  # noqa: E402


@pytest.fixture
def provider():
    p = TracerProvider()
    yield p
    p.shutdown()


def _pydantic_agent(provider, called: list):
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    agent = Agent(
        TestModel(), name="hausmeister", capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider))]
    )

    @agent.tool_plain
    def list_devices(room: str) -> str:
        called.append(("list_devices", {"room": room}))
        return "device_1, device_2"

    @agent.tool_plain
    def get_temperature(location: str) -> int:
        called.append(("get_temperature", {"location": location}))
        return 21

    return agent


def test_pydantic_ai_agent_trajectory_is_what_its_tools_received(provider):
    called: list = []
    agent = _pydantic_agent(provider, called)

    async def run(prompt: str):
        return await agent.run(prompt)  # pydantic-ai's own result object; the answer comes from the spans

    result = lf.evaluate([{"prompt": "Wie warm ist es in der Küche?"}], TracedAgent(run, tracer_provider=provider), metrics=["exact_match"])
    output = result.runs[0].output
    assert not result.runs[0].failure
    # TestModel asks for both tools in one model turn and pydantic-ai runs them concurrently,
    # so their relative order is not fixed: compare the calls, not their order.
    assert sorted((c.tool_name, sorted(c.tool_input.items())) for c in output.trajectory) == sorted(
        (name, sorted(args.items())) for name, args in called
    )
    assert len(called) == 2
    assert {c.agent for c in output.trajectory} == {"hausmeister"}
    assert output.usage is not None and output.usage.total_tokens > 0


def test_pydantic_ai_answer_is_read_from_the_agent_span(provider):
    agent = _pydantic_agent(provider, [])

    async def run(prompt: str):
        return await agent.run(prompt)

    result = lf.evaluate([{"prompt": "x"}], TracedAgent(run, tracer_provider=provider), metrics=["exact_match"])
    expected = asyncio.run(agent.run("x")).output
    assert result.runs[0].output.response == expected


def _instrumented_function(provider):
    """A hand-instrumented sync function emitting GenAI tool spans, with jitter so runs interleave."""
    tracer = provider.get_tracer("home")

    def agent(prompt: str) -> str:
        room = prompt.split(":")[1]
        with tracer.start_as_current_span("invoke_agent home") as span:
            span.set_attribute("gen_ai.operation.name", "invoke_agent")
            span.set_attribute("gen_ai.agent.name", "home")
            for step in range(3):
                threading.Event().wait(random.uniform(0, 0.01))
                with tracer.start_as_current_span("execute_tool") as tool:
                    tool.set_attribute("gen_ai.operation.name", "execute_tool")
                    tool.set_attribute("gen_ai.tool.name", f"step_{step}")
                    tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"room": room}))
        return f"done {room}"

    return agent


def test_concurrent_runs_never_mix_their_spans(provider):
    rooms = [f"Zimmer {i}" for i in range(24)]
    dataset = [{"case_id": r, "prompt": f"room:{r}"} for r in rooms]
    result = lf.evaluate(dataset, TracedAgent(_instrumented_function(provider), tracer_provider=provider),
                         metrics=["exact_match"], concurrency=8)
    for room, run in zip(rooms, result.runs):
        assert [c.tool_input for c in run.output.trajectory] == [{"room": room}] * 3
        assert [c.tool_name for c in run.output.trajectory] == ["step_0", "step_1", "step_2"]


def test_spans_outside_any_run_are_not_kept(provider):
    agent = TracedAgent(_instrumented_function(provider), tracer_provider=provider)
    lf.evaluate([{"prompt": "room:a"}], agent, metrics=["exact_match"])
    _instrumented_function(provider)("room:outside")  # not under a run: nobody watches its trace
    from levelfield.adapters.traced import _router_for

    assert _router_for(provider)._traces == {}


def test_an_agent_that_raises_is_a_failed_run_and_its_spans_are_released(provider):
    tracer = provider.get_tracer("t")

    def broken(prompt: str) -> str:
        with tracer.start_as_current_span("execute_tool") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "explode")
        raise RuntimeError("kaputt")

    result = lf.evaluate([{"prompt": "p"}], TracedAgent(broken, tracer_provider=provider), metrics=["exact_match"])
    assert result.runs[0].failure and "kaputt" in result.runs[0].error
    from levelfield.adapters.traced import _router_for

    assert _router_for(provider)._traces == {}


def test_an_answer_neither_returned_nor_traced_is_a_failed_run_saying_what_to_do(provider):
    result = lf.evaluate([{"prompt": "p"}], TracedAgent(lambda prompt: object(), tracer_provider=provider, name="mute"),
                         metrics=["exact_match"])
    assert result.runs[0].failure and "no final answer" in result.runs[0].error and "mute" in result.runs[0].error


def test_the_root_span_of_each_run_links_scores_back(provider):
    seen = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    result = lf.evaluate([{"prompt": "room:x", "reference": "done x"}], TracedAgent(_instrumented_function(provider), tracer_provider=provider),
                         metrics=["exact_match"])
    root = next(s for s in seen.get_finished_spans() if s.name == "levelfield.run")
    sink = InMemorySpanExporter()
    lf.export_scores(result, sink)
    (span,) = sink.get_finished_spans()
    assert span.context.trace_id == root.context.trace_id and span.parent.span_id == root.context.span_id
    assert span.events[0].attributes["gen_ai.evaluation.score.value"] == 1.0


def test_a_global_provider_that_takes_no_span_processor_is_named_with_the_fix(monkeypatch):
    """Another library's global TracerProvider (one without ``add_span_processor``), which OpenTelemetry
    does not let us replace: the user reads what to pass, not a TypeError from building the error."""
    from opentelemetry import trace

    class ForeignProvider:  # a provider of another SDK: gives tracers, takes no span processor
        def get_tracer(self, *args, **kwargs):
            return trace.NoOpTracer()

    foreign = ForeignProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: foreign)
    monkeypatch.setattr(trace, "set_tracer_provider", lambda provider: None)  # already set: OTel ignores it
    agent = TracedAgent(lambda prompt: "ok", name="traced")
    with pytest.raises(lf.ConfigError, match=r"ForeignProvider\) cannot take a span processor.*tracer_provider="):
        agent.tracer_provider  # noqa: B018 (the property reads the global provider)
