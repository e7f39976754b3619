"""``levelfield watch`` sends scores back to MLflow as assessments on the traces they score: real
MLflow (a sqlite tracking store), real traces made by MLflow's tracing API, the watcher in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.errors import ConfigError
from levelfield.watch import Watcher

mlflow = pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow  # a local MLflow store per test: 52 s of the suite's time in one process
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.conftest import mlflow_store, traced_home_agent  # noqa: E402
from tests.watch.test_watch import PROMPTS, agent_trace, exporter_provider, journaled, references, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ANSWERS = {p: a for p, a in zip(PROMPTS, ["Erledigt, das Licht ist aus.", "好的，客厅的灯已经关了。", "リビングの電気を消しました。",
                                          "Pronto, a luz do quarto está apagada."])}


def explained(instance: dict) -> dict:
    """A metric that explains itself in the language of the answer."""
    response = instance.get("response") or ""
    return {"answer_length": float(len(response) > 5), "explanation": f"Antwort «{response[:12]}» hat {len(response)} Zeichen"}


METRICS = ["trajectory_exact_match", lf.metrics.CustomMetric("answer_length", explained)]


@pytest.fixture
def tracking(tmp_path):
    """A fresh sqlite tracking store as the current MLflow tracking URI (MLflow's state restored afterwards)."""
    with mlflow_store(tmp_path / "mlflow.db") as uri:
        yield uri


def home_agent():
    # The Portuguese request (room 3) switches the light on: a wrong call.
    return traced_home_agent(PROMPTS, lambda room: ANSWERS[PROMPTS[room]], wrong=lambda room: room == 3)


def assessments(trace_id: str) -> dict:
    """The assessments MLflow holds on a trace, by name."""
    from mlflow.tracing.client import TracingClient

    return {a.name: a for a in TracingClient(mlflow.get_tracking_uri()).get_trace_info(trace_id).assessments}


def test_scores_of_traces_from_the_mlflow_experiment_go_back_to_them_as_assessments(tmp_path, tracking):
    mlflow.set_experiment("production")
    agent = home_agent()
    ids = {}
    for prompt in PROMPTS:
        agent(prompt)
        ids[prompt] = mlflow.get_last_active_trace_id()
    with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", mlflow_tracking_uri=tracking,
                 references=references(tmp_path / "refs.jsonl"), poll=0.1) as w:
        wait_for(lambda: w.stats.mlflow_assessments == 2 * len(PROMPTS))
    assert w.stats.mlflow_failed_traces == 0 and w.stats.mlflow_missing_traces == 0
    scores = dict(journaled(tmp_path / "out"))
    for prompt, tid in ids.items():
        found = assessments(tid)
        assert set(found) == {"trajectory_exact_match", "answer_length"}
        exact = found["trajectory_exact_match"]
        assert exact.value == (0.0 if prompt == PROMPTS[3] else 1.0) == scores[tid]["trajectory_exact_match"]
        assert exact.source.source_type == "CODE" and exact.source.source_id == "levelfield/trajectory_exact_match"
        length = found["answer_length"]
        assert length.value == 1.0 and length.source.source_id == "levelfield/answer_length"
        assert length.rationale == f"Antwort «{ANSWERS[prompt][:12]}» hat {len(ANSWERS[prompt])} Zeichen"
        assert mlflow.get_trace(tid).data.request  # the trace itself is untouched
    assert "好的" in assessments(ids[PROMPTS[1]])["answer_length"].rationale


def test_no_export_mlflow_leaves_the_experiments_traces_alone(tmp_path, tracking):
    mlflow.set_experiment("production")
    home_agent()(PROMPTS[0])
    tid = mlflow.get_last_active_trace_id()
    with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", export_mlflow=False,
                 poll=0.1) as w:
        assert w.assessments is None
        wait_for(lambda: w.stats.scored_traces == 1)
    assert assessments(tid) == {} and w.stats.mlflow_assessments == 0


def test_a_trace_mlflow_exports_over_otlp_too_gets_its_assessments(tmp_path, tracking, monkeypatch):
    """An app traced by MLflow that also exports its spans over OTLP (MLflow's dual export) to the
    watcher: the watcher finds the trace in MLflow by its OpenTelemetry trace id."""
    mlflow.set_experiment("production")
    with Watcher([lf.metrics.TrajectorySingleToolUse("set_light")], tmp_path / "out", otlp_port=0, export_mlflow=tracking, trace_timeout=5) as w:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{w.port}/v1/traces")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        monkeypatch.setenv("MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT", "true")
        monkeypatch.setenv("MLFLOW_ENABLE_OTEL_GENAI_SEMCONV", "true")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        mlflow.tracing.reset()  # MLflow reads its exporters' settings when its tracer starts
        try:
            home_agent()(PROMPTS[1])
            tid = mlflow.get_last_active_trace_id()
            wait_for(lambda: w.stats.mlflow_assessments == 1, timeout=15)
        finally:
            monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            monkeypatch.delenv("MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT")
            mlflow.tracing.reset()
    found = assessments(tid)["trajectory_single_tool_use"]
    assert found.value == 1.0 and found.source.source_id == "levelfield/trajectory_single_tool_use"
    assert [tid] == [f"tr-{t}" for t, _ in journaled(tmp_path / "out")]


def test_spans_mlflow_exports_over_otlp_give_the_request_the_answer_and_the_tool_calls(tmp_path, tracking, monkeypatch):
    """MLflow's dual export sends its spans with its own attributes (``mlflow.spanType``,
    ``mlflow.spanInputs``/``Outputs``, JSON text): the watcher reads the request, the answer and the
    tool calls from them, in any language. (With MLFLOW_ENABLE_OTEL_GENAI_SEMCONV=true MLflow 3.x
    leaves an agent span's inputs and outputs out of the export: only the tool calls remain.)"""
    mlflow.set_experiment("production")
    refs = references(tmp_path / "refs.jsonl")
    with Watcher(["trajectory_exact_match", "exact_match"], tmp_path / "out", otlp_port=0, export_mlflow=False,
                 references=refs, trace_timeout=5) as w:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{w.port}/v1/traces")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        monkeypatch.setenv("MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT", "true")
        monkeypatch.setenv("MLFLOW_ENABLE_OTEL_GENAI_SEMCONV", "false")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
        mlflow.tracing.reset()
        try:
            for prompt in PROMPTS[1:3]:
                home_agent()(prompt)
            wait_for(lambda: w.stats.scored_traces == 2, timeout=15)
        finally:
            monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            monkeypatch.delenv("MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT")
            mlflow.tracing.reset()
    from tests.watch.test_watch import window_files

    result = lf.EvalResult.load(window_files(tmp_path / "out")[0])
    table = result.metrics_table.set_index("prompt")
    assert set(table.index) == set(PROMPTS[1:3])
    for prompt in PROMPTS[1:3]:
        assert table.loc[prompt, "response"] == ANSWERS[prompt]
    case = {c.prompt: c for c in result.dataset}[PROMPTS[1]]
    assert [(c.tool_name, c.tool_input) for c in case.predicted_trajectory] == [("set_light", {"room": 1, "on": False})]
    assert (table["trajectory_exact_match/score"] == 1.0).all()


def test_an_otlp_trace_is_sent_once_mlflow_holds_it_and_one_mlflow_never_holds_is_counted(tmp_path, tracking):
    from mlflow.tracing.client import TracingClient

    mem = InMemorySpanExporter()
    refs = references(tmp_path / "refs.jsonl")
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, export_mlflow=tracking, references=refs, trace_timeout=5) as w:
        w.assessments.backoff = 0.05  # six tries within about 3 s
        provider = exporter_provider(w.port)
        provider.add_span_processor(SimpleSpanProcessor(mem))
        tracer = provider.get_tracer("app")
        agent_trace(tracer, 1)
        agent_trace(tracer, 2, wrong=True)
        provider.force_flush()
        wait_for(lambda: w.stats.scored_traces == 2)
        late, never = [f"{s.context.trace_id:032x}" for s in mem.get_finished_spans() if s.parent is None]
        # The first trace reaches MLflow only now (its own exporter a moment behind the watcher).
        experiment = mlflow.set_experiment("production").experiment_id
        start_trace(TracingClient(tracking), f"tr-{late}", experiment)
        wait_for(lambda: w.stats.mlflow_assessments == 2 and w.stats.mlflow_missing_traces == 1)
        provider.shutdown()
    found = assessments(f"tr-{late}")
    assert found["trajectory_exact_match"].value == 1.0
    assert found["answer_length"].rationale.startswith("Antwort «Erledigt.»")
    with pytest.raises(mlflow.exceptions.MlflowException, match="not found"):
        assessments(f"tr-{never}")
    assert len(journaled(tmp_path / "out")) == 2  # its scores are journaled all the same


def start_trace(client, trace_id: str, experiment_id: str) -> None:
    """Record a finished trace with a given id in MLflow, as its OTLP ingestion or tracing SDK would."""
    from mlflow.entities import TraceInfo, TraceLocation, TraceState

    now = int(time.time() * 1000)
    client.start_trace(TraceInfo(trace_id=trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
                                 request_time=now, state=TraceState.OK, execution_duration=5))


def test_an_mlflow_that_fails_never_stops_the_watcher_nor_loses_a_score(tmp_path, monkeypatch):
    """A tracking server that answers its health check but fails every call: each trace is tried
    with backoff, then counted as failed; every trace is scored and journaled."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    calls = []

    async def health(request):
        return PlainTextResponse("OK")

    async def broken(request):
        calls.append(request.url.path)
        return PlainTextResponse("database is down", status_code=500)

    app = Starlette(routes=[Route("/health", health), Route("/{path:path}", broken, methods=["GET", "POST", "PATCH"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started)
    port = server.servers[0].sockets[0].getsockname()[1]
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # our own backoff is what is tested
    try:
        with Watcher(METRICS, tmp_path / "out", otlp_port=0, export_mlflow=f"http://127.0.0.1:{port}",
                     references=references(tmp_path / "refs.jsonl"), trace_timeout=5) as w:
            w.assessments.backoff, w.assessments.tries = 0.02, 3
            provider = exporter_provider(w.port)
            for i in range(6):
                agent_trace(provider.get_tracer("app"), i)
            provider.force_flush()
            wait_for(lambda: w.stats.mlflow_failed_traces == 6)
            provider.shutdown()
    finally:
        server.should_exit = True
        thread.join()
    assert w.stats.scored_traces == 6 and w.stats.mlflow_assessments == 0
    assert len(calls) == 6 * 3  # each trace tried three times (its first assessment failed each time)
    assert len(journaled(tmp_path / "out")) == 6
    status = json.loads((tmp_path / "out" / "status.json").read_text())
    assert status["mlflow_failed_traces"] == 6


def test_a_bad_tracking_uri_is_a_config_error_before_anything_starts(tmp_path):
    with pytest.raises(ConfigError, match="nosuch://x.*tracking server"):
        Watcher(METRICS, tmp_path / "a", otlp_port=0, export_mlflow="nosuch://x")
    with socket_closed() as port, pytest.raises(ConfigError, match=f"no MLflow tracking server answers at http://127.0.0.1:{port}"):
        Watcher(METRICS, tmp_path / "b", otlp_port=0, export_mlflow=f"http://127.0.0.1:{port}")
    with pytest.raises(ConfigError, match="nosuch://y"):  # the MLflow source's URI is checked the same way
        Watcher(METRICS, tmp_path / "c", otlp_port=None, mlflow_experiment="production", mlflow_tracking_uri="nosuch://y")
    assert not any((tmp_path / d).exists() for d in "abc")  # nothing was started or written
    done = subprocess.run([sys.executable, "-m", "levelfield", "watch", "--out", str(tmp_path / "d"), "--otlp-port", "0",
                           "--export-mlflow", "nosuch://x"], check=False, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "levelfield watch: export_mlflow: cannot use the MLflow tracking URI 'nosuch://x'" in done.stderr


class socket_closed:
    """A port on 127.0.0.1 nobody listens on: bound, not listening, so connections are refused and no other
    process takes the port until the block ends (a port closed again could be, by another test's server)."""

    def __enter__(self) -> int:
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        return self._socket.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self._socket.close()


def test_the_assessments_waiting_for_mlflow_are_bounded(tmp_path, tracking):
    """MLflow slower than the traffic: beyond max_pending traces, the next are counted as failed, not held."""
    from levelfield._core.score.metrics.base import Score
    from levelfield.watch import WatchStats
    from levelfield.watch.assessments import MlflowAssessments

    stats = WatchStats()
    sender = MlflowAssessments(tracking, [], stats, every_trace=True, max_pending=2)  # its thread not started: MLflow "stuck"
    for i in range(5):
        sender.submit(f"{i:032x}", None, {"exact_match": Score(1.0)})
    assert sender.pending == 2 and stats.mlflow_failed_traces == 3
    sender.submit("row-7", None, {"exact_match": Score(1.0)})  # not an OpenTelemetry id: MLflow cannot hold it
    assert stats.mlflow_missing_traces == 1 and sender.pending == 2


def test_the_mlflow_source_without_the_export_still_names_a_bad_tracking_uri(tmp_path):
    watcher = Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", export_mlflow=False,
                      mlflow_tracking_uri="nosuch://z")
    with pytest.raises(ConfigError, match="mlflow_experiment='production': cannot reach MLflow at 'nosuch://z'"):
        watcher.start()
