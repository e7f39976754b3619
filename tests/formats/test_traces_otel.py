"""OpenTelemetry traces: GenAI semantic-convention spans from the real SDK, exported as OTLP JSON
by the real encoder; OpenInference's LangChain instrumentation over the sample LangGraph agent;
LangSmith run trees from LangChain's own tracer; scores sent back as ``gen_ai.evaluation.result``."""

from __future__ import annotations

import base64
import json

import pytest

import levelfield as lf

pytest.importorskip("opentelemetry.sdk")
from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402


@pytest.fixture
def exporter():
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    yield provider, exp
    provider.shutdown()


def genai_agent(tracer, prompt: str, calls: list[tuple[str, dict]], *, fail: str | None = None) -> str:
    """An agent instrumented by hand with the GenAI conventions: one agent span, tools, one model call."""
    answer = f"完了: {prompt}"
    with tracer.start_as_current_span("invoke_agent planner") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "planner")
        agent.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]))
        for i, (name, args) in enumerate(calls):
            with tracer.start_as_current_span(f"execute_tool {name}") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", name)
                tool.set_attribute("gen_ai.tool.call.id", f"call_{i}")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps(args, ensure_ascii=False))
                if name == fail:
                    tool.set_status(Status(StatusCode.ERROR, "device offline"))
                else:
                    tool.set_attribute("gen_ai.tool.call.result", json.dumps({"ok": True}))
        with tracer.start_as_current_span("chat model") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 30)
            chat.set_attribute("gen_ai.usage.output_tokens", 7)
            chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]))
        agent.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]))
    return answer


CALLS = [("list_devices", {"room": "Küche"}), ("set_device_info", {"device_id": "d1", "updates": {"status": "OFF"}})]


def _otlp_json(spans) -> dict:
    return MessageToDict(encode_spans(spans))


def test_otlp_json_file_gives_the_tool_calls_the_agent_made(exporter, tmp_path):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "Licht aus in der Küche", CALLS)
    path = tmp_path / "otel_export.json"
    path.write_text(json.dumps(_otlp_json(exp.get_finished_spans())), encoding="utf-8")
    case = lf.load_traces(path)[0]
    assert [(c.tool_name, c.tool_input) for c in case.predicted_trajectory] == CALLS
    assert [c.id for c in case.predicted_trajectory] == ["call_0", "call_1"]
    assert {c.agent for c in case.predicted_trajectory} == {"planner"}


def test_otlp_trace_gives_request_response_usage_and_the_trace_id(exporter):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "Licht aus", CALLS)
    spans = exp.get_finished_spans()
    case = lf.load_traces(_otlp_json(spans))[0]
    assert case.case_id == f"{spans[0].context.trace_id:032x}"
    assert (case.prompt, case.response) == ("Licht aus", "完了: Licht aus")
    assert case.metadata["usage"] == {"input_tokens": 30, "output_tokens": 7, "total_tokens": 37}


def test_a_tool_span_with_error_status_records_the_error(exporter):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "x", CALLS, fail="set_device_info")
    calls = lf.load_traces(exp.get_finished_spans())[0].predicted_trajectory
    assert calls[0].error is None and calls[1].error == "device offline"


def test_sdk_spans_of_several_traces_become_one_case_each(exporter):
    provider, exp = exporter
    tracer = provider.get_tracer("t")
    genai_agent(tracer, "one", CALLS[:1])
    genai_agent(tracer, "two", CALLS)
    ds = lf.load_traces(exp.get_finished_spans())
    assert [len(c.predicted_trajectory) for c in ds] == [1, 2]


def test_otlp_span_without_an_end_time_fails_its_trace_only(exporter):
    provider, exp = exporter
    tracer = provider.get_tracer("t")
    genai_agent(tracer, "one", CALLS)
    genai_agent(tracer, "two", CALLS)
    data = _otlp_json(exp.get_finished_spans())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    del spans[0]["endTimeUnixNano"]
    ds = lf.load_traces(data)
    failed = [c for c in ds if c.metadata.get("failure")]
    assert len(failed) == 1 and len(ds) == 2
    assert spans[0]["name"] in failed[0].metadata["error"] and "never ended" in failed[0].metadata["error"]


def test_otlp_span_without_a_trace_id_is_a_failed_row_not_a_crash(exporter):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "one", CALLS)
    data = _otlp_json(exp.get_finished_spans())
    del data["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"]
    ds = lf.load_traces(data)
    errors = [c.metadata["error"] for c in ds if c.metadata.get("failure")]
    assert errors and "no traceId" in errors[0]


def test_otlp_json_lines_file_loads_every_export(exporter, tmp_path):
    provider, exp = exporter
    tracer = provider.get_tracer("t")
    genai_agent(tracer, "one", CALLS)
    first = _otlp_json(exp.get_finished_spans())
    exp.clear()
    genai_agent(tracer, "two", CALLS)
    second = _otlp_json(exp.get_finished_spans())
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    assert [c.prompt for c in lf.load_traces(path)] == ["one", "two"]


def test_scores_go_back_as_evaluation_events_linked_to_the_source_spans(exporter):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "Licht aus", CALLS)
    source = exp.get_finished_spans()
    root = next(s for s in source if s.parent is None)
    rows = [dict(c.model_dump(), reference_trajectory=[{"tool_name": n, "tool_input": a} for n, a in CALLS])
            for c in lf.load_traces(source)]
    ds = lf.load_dataset([{**r.pop("metadata"), **{k: v for k, v in r.items() if k not in ("location", "turns")}} for r in rows])
    result = lf.evaluate(ds, metrics=["trajectory_exact_match", "rouge_l_sum"])
    sink = InMemorySpanExporter()
    assert lf.export_scores(result, sink) == 2
    (span,) = sink.get_finished_spans()
    assert span.context.trace_id == root.context.trace_id
    assert span.parent.span_id == root.context.span_id
    events = {e.attributes["gen_ai.evaluation.name"]: e.attributes for e in span.events}
    assert all(e.name == "gen_ai.evaluation.result" for e in span.events)
    assert events["trajectory_exact_match"]["gen_ai.evaluation.score.value"] == 1.0
    assert events["rouge_l_sum"]["error.type"] == "not_computable"  # no reference: sent as NaN, not dropped


# --- OpenInference over the sample LangGraph agent ---------------------------------------------


@pytest.fixture
def instrumented_graph(exporter):
    pytest.importorskip("openinference.instrumentation.langchain")
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider, exp = exporter
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    from samples.home_automation.agents.langgraph_agent import agent

    yield agent, exp
    instrumentor.uninstrument()


def _called(messages) -> list[tuple[str, dict]]:
    """The tool calls the graph's model really made, read from its final state."""
    return [(c["name"], c["args"]) for m in messages for c in getattr(m, "tool_calls", None) or []]


def _sample_rows(n: int = 4) -> list[dict]:
    with open("samples/home_automation/dataset.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f][:n]


def test_openinference_spans_of_the_langgraph_sample_give_its_tool_calls(instrumented_graph):
    graph, exp = instrumented_graph
    expected = []
    for row in _sample_rows():
        state = graph.invoke({"messages": [("user", row["prompt"])]})
        expected.append((row["prompt"], _called(state["messages"]), state["messages"][-1].content))
    ds = lf.load_traces(exp.get_finished_spans())
    got = [(c.prompt, [(t.tool_name, t.tool_input) for t in c.predicted_trajectory], c.response) for c in ds]
    assert got == expected
    assert any(got_calls for _, got_calls, _ in got)


def test_openinference_tool_spans_carry_output_call_id_and_usage(instrumented_graph):
    graph, exp = instrumented_graph
    state = graph.invoke({"messages": [("user", _sample_rows(1)[0]["prompt"])]})
    ids = [c["id"] for m in state["messages"] for c in getattr(m, "tool_calls", None) or []]
    case = lf.load_traces(exp.get_finished_spans())[0]
    assert [c.id for c in case.predicted_trajectory] == ids
    assert "updated" in str(case.predicted_trajectory[0].tool_output)
    assert case.metadata["usage"]["total_tokens"] > 0


def test_openinference_retriever_spans_give_retrieved_context(exporter):
    provider, exp = exporter
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "Wie setze ich das Gerät zurück?")
        for step, uris in enumerate((["kb://a"], ["kb://b", "kb://c"])):
            with tracer.start_as_current_span(f"retrieve {step}") as r:
                r.set_attribute("openinference.span.kind", "RETRIEVER")
                for i, uri in enumerate(uris):
                    r.set_attribute(f"retrieval.documents.{i}.document.content", f"Text {uri}")
                    r.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps({"doc_uri": uri}))
        root.set_attribute("output.value", "Halten Sie die Taste gedrückt.")
    case = lf.load_traces(exp.get_finished_spans())[0]
    assert case.retrieved_context == [{"content": "Text kb://b", "doc_uri": "kb://b"}, {"content": "Text kb://c", "doc_uri": "kb://c"}]
    assert case.response == "Halten Sie die Taste gedrückt."


# --- LangSmith run trees --------------------------------------------------------------------------


def test_langsmith_run_trees_of_the_langgraph_sample_give_its_tool_calls():
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    from samples.home_automation.agents.langgraph_agent import agent as graph

    collector = RunCollectorCallbackHandler()
    expected = []
    for row in _sample_rows(3):
        state = graph.invoke({"messages": [("user", row["prompt"])]}, config={"callbacks": [collector]})
        expected.append((_called(state["messages"]), state["messages"][-1].content))
    ds = lf.load_traces(collector.traced_runs)
    got = [([(t.tool_name, t.tool_input) for t in c.predicted_trajectory], c.response) for c in ds]
    assert got == expected
    assert [c.prompt for c in ds] == [r["prompt"] for r in _sample_rows(3)]


def test_langsmith_run_dicts_with_a_broken_time_fail_their_row_only():
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    from samples.home_automation.agents.langgraph_agent import agent as graph

    collector = RunCollectorCallbackHandler()
    for row in _sample_rows(2):
        graph.invoke({"messages": [("user", row["prompt"])]}, config={"callbacks": [collector]})
    def tree(run):  # a run tree as plain dicts, children included (RunTree.model_dump leaves them out)
        return {**run.model_dump(), "child_runs": [tree(c) for c in run.child_runs]}

    runs = [tree(r) for r in collector.traced_runs]
    runs[0]["child_runs"][0]["end_time"] = "yesterday"
    ds = lf.load_traces(runs)
    assert ds[0].metadata["failure"] is True and "end_time" in ds[0].metadata["error"]
    assert str(runs[0]["trace_id"]) in ds[0].metadata["error"]
    assert not ds[1].metadata.get("failure")


def test_langsmith_flat_run_lists_are_grouped_by_trace():
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    from samples.home_automation.agents.langgraph_agent import agent as graph

    collector = RunCollectorCallbackHandler()
    expected = []
    for row in _sample_rows(2):
        state = graph.invoke({"messages": [("user", row["prompt"])]}, config={"callbacks": [collector]})
        expected.append(_called(state["messages"]))

    def flat(run):  # as LangSmith's list_runs returns them: one record per run, linked by parent_run_id
        yield {**run.model_dump(), "child_runs": []}
        for child in run.child_runs:
            yield from flat(child)

    runs = [r for tree in collector.traced_runs for r in flat(tree)]
    random_order = runs[1:] + runs[:1]
    ds = lf.load_traces(random_order)
    by_prompt = {c.prompt: [(t.tool_name, t.tool_input) for t in c.predicted_trajectory] for c in ds}
    assert [by_prompt[r["prompt"]] for r in _sample_rows(2)] == expected


def test_an_item_that_is_no_trace_among_traces_is_a_failed_row(exporter):
    provider, exp = exporter
    genai_agent(provider.get_tracer("t"), "one", CALLS)
    ds = lf.load_traces([_otlp_json(exp.get_finished_spans()), 42])
    assert [bool(c.metadata.get("failure")) for c in ds] == [False, True]
    assert "trace 2: cannot tell what kind of trace" in ds[1].metadata["error"]


def test_something_that_is_not_traces_at_all_says_what_is_expected():
    with pytest.raises(lf.DatasetError, match="expected an MLflow Trace"):
        lf.load_traces([1, 2, 3])


@pytest.mark.parametrize("raw", [bytes.fromhex("d314eebc33d12a4b9692536388a6c26c"), bytes.fromhex("d31f") + bytes(14)], ids=["ci-seen", "zeros"])
def test_a_base64_id_that_starts_with_0x_is_decoded_not_stripped(raw):
    from levelfield.formats.spans import hex_id
    text = base64.b64encode(raw).decode()
    assert text.startswith("0x")
    assert hex_id(text, 32) == raw.hex()
    assert hex_id("0x" + raw.hex(), 32) == raw.hex() == hex_id(raw.hex().upper(), 32)


def test_a_model_span_holds_its_tokens_as_a_usage_not_a_second_set_of_fields():
    """One idea, one type: a span's token counts are a ``Usage`` (made by ``counted_usage``, as a run's
    are), so the two never drift apart (a part capped at its total, the model named)."""
    import dataclasses

    from levelfield._core.data.types import Usage
    from levelfield.formats.otel import spans_from_otlp

    assert {f.name for f in dataclasses.fields(lf.formats.spans.Span)} & set(Usage.model_fields) == set()
    raw = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat",
           "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                          {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "30"}},
                          {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "7"}},
                          {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "45"}},
                          {"key": "gen_ai.response.model", "value": {"stringValue": "gpt-x"}}]}
    (span,) = spans_from_otlp({"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}]})
    assert span.usage == Usage(input_tokens=30, output_tokens=7, total_tokens=37, cache_read_tokens=30, model="gpt-x")
