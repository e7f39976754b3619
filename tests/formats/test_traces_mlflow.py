"""MLflow traces recorded by the real mlflow tracing API, read back as cases and scored; the
Databricks agent-evaluation schema with its ``trace`` column; malformed traces as failed rows."""

from __future__ import annotations

import json
import math

import pytest

import levelfield as lf
from tests.conftest import mlflow_store

mlflow = pytest.importorskip("mlflow")
from mlflow.entities import Document, SpanType  # noqa: E402


@pytest.fixture(scope="module")
def tracing(tmp_path_factory):
    """mlflow tracing into a throwaway SQLite store, written synchronously; the old URI restored after."""
    with mlflow_store(tmp_path_factory.mktemp("mlflow") / "traces.db"):
        yield


class HomeAgent:
    """A small agent traced with @mlflow.trace / mlflow.start_span; it records what it really called."""

    def __init__(self) -> None:
        self.called: list[tuple[str, dict]] = []

    def retrieve(self, query: str, uris: list[str]) -> list[Document]:
        with mlflow.start_span("search_docs", span_type=SpanType.RETRIEVER) as span:
            span.set_inputs({"query": query})
            docs = [Document(page_content=f"Inhalt von {u}", metadata={"doc_uri": u}) for u in uris]
            span.set_outputs(docs)
            return docs

    def tools(self):
        called = self.called

        @mlflow.trace(span_type=SpanType.TOOL)
        def get_device_info(device_id: str) -> dict:
            called.append(("get_device_info", {"device_id": device_id}))
            return {"ok": True, "device_id": device_id}

        @mlflow.trace(span_type=SpanType.TOOL)
        def set_device_info(device_id: str, updates: dict) -> dict:
            called.append(("set_device_info", {"device_id": device_id, "updates": updates}))
            raise KeyError(f"no device {device_id!r}")

        return get_device_info, set_device_info

    def run(self, question: str) -> str:
        @mlflow.trace(name="home_agent", span_type=SpanType.AGENT)
        def agent(request: str) -> str:
            get_device_info, set_device_info = self.tools()
            self.retrieve(request, ["docs://first"])
            get_device_info("device_2")
            try:
                set_device_info("missing", {"status": "OFF"})
            except KeyError:
                pass  # the agent handles the tool error and goes on
            self.retrieve(request, ["docs://manual", "docs://faq"])
            return "Gerät device_2 ist jetzt aus. 设备已关闭。"

        return agent(question)


def _trace(agent: HomeAgent, question: str):
    agent.run(question)
    return mlflow.get_trace(mlflow.get_last_active_trace_id(), flush=True)


@pytest.fixture(scope="module")
def recorded(tracing):
    agent = HomeAgent()
    trace = _trace(agent, "Schalte device_2 aus, bitte.")
    return agent, trace


def test_mlflow_trace_objects_give_the_tools_the_agent_really_called_in_order(recorded):
    agent, trace = recorded
    case = lf.load_traces([trace])[0]
    assert [(c.tool_name, c.tool_input) for c in case.predicted_trajectory] == agent.called


def test_mlflow_trace_keeps_tool_outputs_errors_and_the_owning_agent(recorded):
    _, trace = recorded
    calls = lf.load_traces([trace])[0].predicted_trajectory
    assert calls[0].tool_output == {"ok": True, "device_id": "device_2"}
    assert calls[1].error is not None and "missing" in calls[1].error
    assert {c.agent for c in calls} == {"home_agent"}


def test_mlflow_trace_gives_request_response_latency_and_trace_id(recorded):
    _, trace = recorded
    case = lf.load_traces([trace])[0]
    assert case.case_id == trace.info.trace_id
    assert case.prompt == "Schalte device_2 aus, bitte."
    assert case.response == "Gerät device_2 ist jetzt aus. 设备已关闭。"
    assert case.metadata["latency_in_seconds"] > 0


def test_retrieved_context_is_the_last_retrieval_step_in_time(recorded):
    _, trace = recorded
    case = lf.load_traces([trace])[0]
    assert [d["doc_uri"] for d in case.retrieved_context] == ["docs://manual", "docs://faq"]
    assert case.retrieved_context[0]["content"] == "Inhalt von docs://manual"


def test_mlflow_trace_json_reads_like_the_trace_object(recorded):
    _, trace = recorded
    from_object = lf.load_traces([trace])[0]
    from_json = lf.load_traces([trace.to_json()])[0]
    assert from_json.model_dump() == from_object.model_dump()


def test_databricks_parquet_with_trace_column_is_scored_without_running_an_agent(recorded, tmp_path):
    pd = pytest.importorskip("pandas")
    _, trace = recorded
    frame = pd.DataFrame(
        [
            {
                "request_id": "req-1",
                "request": "Schalte device_2 aus, bitte.",
                "expected_response": "Gerät device_2 ist jetzt aus.",
                "expected_retrieved_context": [{"content": "", "doc_uri": "docs://manual"}, {"content": "", "doc_uri": "docs://other"}],
                "expected_facts": ["device_2 is off"],
                "guidelines": ["Answer in the user's language"],
                "trace": trace.to_json(),
            }
        ]
    )
    path = tmp_path / "inference_table.parquet"
    frame.to_parquet(path)
    result = lf.evaluate(str(path), metrics=["document_recall", "document_precision", "rouge_l_sum"])
    row = result.metrics_table.iloc[0]
    assert row["case_id"] == "req-1"
    assert row["document_recall/score"] == 0.5
    assert row["document_precision/score"] == 0.5
    assert row["rouge_l_sum/score"] > 0.5


def test_databricks_row_keeps_what_it_gives_and_takes_the_rest_from_the_trace(recorded):
    _, trace = recorded
    rows = [
        {
            "request_id": "r",
            "request": {"messages": [{"role": "user", "content": "Hallo"}]},
            "response": "given answer",
            "retrieved_context": [{"content": "x", "doc_uri": "docs://given"}],
            "expected_facts": ["a fact"],
            "guidelines": ["be brief"],
            "trace": trace.to_json(),
        }
    ]
    case = lf.load_dataset(rows)[0]
    assert (case.prompt, case.response) == ("Hallo", "given answer")
    assert case.retrieved_context[0]["doc_uri"] == "docs://given"
    assert [c.tool_name for c in case.predicted_trajectory] == ["get_device_info", "set_device_info"]
    assert case.metadata["expected_facts"] == ["a fact"] and case.metadata["guidelines"] == ["be brief"]
    assert "trace" not in case.metadata


def test_a_truncated_trace_is_a_failed_row_naming_the_trace_and_the_rest_are_scored(recorded):
    _, trace = recorded
    text = trace.to_json()
    result = lf.evaluate(lf.load_traces([trace, text[: len(text) // 2]]), metrics=["exact_match"])
    assert len(result.runs) == 2
    broken = result.runs[1]
    assert broken.failure and trace.info.trace_id in broken.error and "not valid JSON" in broken.error
    assert not result.runs[0].failure


def test_a_span_that_never_ended_names_the_trace_and_the_span(recorded):
    _, trace = recorded
    data = json.loads(trace.to_json())
    data["data"]["spans"][2]["end_time_unix_nano"] = None
    name = data["data"]["spans"][2]["name"]
    case = lf.load_traces([data])[0]
    assert case.metadata["failure"] is True
    assert trace.info.trace_id in case.metadata["error"] and name in case.metadata["error"]
    assert "never ended" in case.metadata["error"]


def test_a_span_attribute_that_is_not_json_names_the_attribute(recorded):
    _, trace = recorded
    data = json.loads(trace.to_json())
    data["data"]["spans"][1]["attributes"]["mlflow.spanInputs"] = "{broken"
    case = lf.load_traces([data])[0]
    assert case.metadata["failure"] is True and "mlflow.spanInputs" in case.metadata["error"]


def test_a_broken_trace_in_the_trace_column_fails_only_its_row(recorded):
    _, trace = recorded
    rows = [
        {"request_id": "good", "request": "q", "trace": trace.to_json()},
        {"request_id": "bad", "request": "q", "trace": '{"info": {"trace_id": "tr-x"}, "data": {"spans": [{"name": "s"}]}}'},
    ]
    result = lf.evaluate(rows, metrics=["exact_match"])
    assert not result.runs[0].failure
    assert result.runs[1].failure and "row 2" in result.runs[1].error and "tr-x" in result.runs[1].error
    assert math.isnan(result.metrics_table.iloc[1]["exact_match/score"])


def test_search_traces_frame_loads_one_case_per_trace(tracing):
    agent = HomeAgent()
    first = _trace(agent, "eins")
    second = _trace(agent, "二")
    frame = mlflow.search_traces(locations=[first.info.experiment_id], return_type="pandas")
    frame = frame[frame["trace_id"].isin([first.info.trace_id, second.info.trace_id])]
    ds = lf.load_traces(frame)
    assert sorted(c.case_id for c in ds) == sorted([first.info.trace_id, second.info.trace_id])
    assert {c.prompt for c in ds} == {"eins", "二"}


def test_scores_of_an_mlflow_trace_go_back_to_that_trace_and_its_root_span(recorded):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    _, trace = recorded
    result = lf.evaluate(lf.load_traces([trace]), metrics=["exact_match"])
    sink = InMemorySpanExporter()
    lf.export_scores(result, sink)
    (span,) = sink.get_finished_spans()
    root = next(s for s in trace.data.spans if s.parent_id is None)
    assert f"tr-{span.context.trace_id:032x}" == trace.info.trace_id
    assert span.parent.span_id == int(root.span_id, 16)
