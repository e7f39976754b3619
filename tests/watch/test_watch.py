"""``levelfield watch``: traces pushed by the real OpenTelemetry SDK through its real OTLP/HTTP exporter
to a watcher on 127.0.0.1, assembled, sampled, scored and journaled in windows; malformed requests,
backpressure, a kill -9 and restart, drift alerts against a baseline, scores sent back over OTLP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

import levelfield as lf
from tests.conftest import mlflow_store, traced_home_agent

pytest.importorskip("opentelemetry.proto")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from google.protobuf.json_format import MessageToDict  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from levelfield._core.results.record import read_record  # noqa: E402
from levelfield.watch import (
    Watcher,  # noqa: E402
    WatchStats,  # noqa: E402
)
from levelfield.watch.windows import window_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # watchers in subprocesses, one killed with SIGKILL and restarted

PROMPTS = ["Licht aus in der Küche", "把客厅的灯关掉", "リビングの電気を消して", "Desligue a luz do quarto"]


def agent_trace(tracer, i: int, *, wrong: bool = False, start: int | None = None) -> None:
    """One agent turn instrumented with the GenAI conventions: an agent span around one tool span."""
    prompt = PROMPTS[i % len(PROMPTS)]
    with tracer.start_as_current_span("invoke_agent home", start_time=start, end_on_exit=start is None) as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": prompt}]}]))
        tool = tracer.start_span("execute_tool set_light", start_time=start)
        tool.set_attribute("gen_ai.operation.name", "execute_tool")
        tool.set_attribute("gen_ai.tool.name", "set_light")
        tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"room": i % len(PROMPTS), "on": wrong}))
        tool.end(end_time=None if start is None else start + 1_000_000)
        answer = "Erledigt." if not wrong else "Erledigt, leider nicht."
        agent.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]))
    if start is not None:
        agent.end(end_time=start + 2_000_000)


def references(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, prompt in enumerate(PROMPTS):
            row = {"prompt": prompt, "reference": "Erledigt.",
                   "reference_trajectory": [{"tool_name": "set_light", "tool_input": {"room": i, "on": False}}]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def post(url: str, body: bytes | str, content_type: str = "application/x-protobuf") -> httpx.Response:
    """POST one request to a watcher. The watcher answers once the body is fsync'ed to its spool, which
    on a loaded machine can take longer than httpx's default 5 s: wait long, never assert on time."""
    return httpx.post(url, content=body, headers={"Content-Type": content_type}, timeout=60)


def journaled(out: Path) -> list[tuple[str, dict]]:
    """(trace id, scores) of every run line in every window, duplicates kept. A line not ended yet is
    being written by the watcher (read while it runs, a group of lines is written in parts, which may
    end inside a character): it is read on a later call; a line that stays unended fails the test's
    own count. Only whole lines are decoded."""
    found = []
    for path in window_files(out):
        for line in path.read_bytes().split(b"\n")[:-1]:
            data = json.loads(line.decode("utf-8"))
            if data.get("kind") == "run":
                found.append((data["case_id"], {k: v["value"] for k, v in (data.get("scores") or {}).items()}))
    return found


def exporter_provider(port: int, **headers) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", headers=headers or None, timeout=60),
        max_queue_size=20_000, max_export_batch_size=512, schedule_delay_millis=50))
    return provider


METRICS = ["trajectory_exact_match", "response_match_score"]


def test_a_burst_from_the_otel_exporter_is_scored_once_each_and_journaled(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, references=references(tmp_path / "refs.jsonl"),
                 trace_timeout=5) as w:
        provider = exporter_provider(w.port)
        tracer = provider.get_tracer("app")
        for i in range(2000):
            wrong = i % 5 == 0
            agent_trace(tracer, i, wrong=wrong)
        provider.force_flush()
        wait_for(lambda: w.stats.scored_traces >= 2000)
        provider.shutdown()
    rows = journaled(tmp_path / "out")
    ids = [tid for tid, _ in rows]
    assert len(ids) == 2000 and len(set(ids)) == 2000
    exact = sorted(s["trajectory_exact_match"] for _, s in rows)
    assert exact.count(0.0) == 400 and exact.count(1.0) == 1600  # every fifth trace called the tool wrongly
    result = lf.EvalResult.load(window_files(tmp_path / "out")[0])
    assert set(result.metrics_table["prompt"]) == set(PROMPTS)
    assert not list((tmp_path / "out" / "spool").glob("*.bin"))  # all journaled: the spool is empty


def test_spans_of_one_trace_sent_in_two_requests_make_one_trace(tmp_path):
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    agent_trace(provider.get_tracer("t"), 1)
    spans = exp.get_finished_spans()
    tool = [s for s in spans if s.parent is not None]
    root = [s for s in spans if s.parent is None]
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=30) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, encode_spans(tool).SerializeToString()).status_code == 200
        time.sleep(0.3)
        assert w.stats.scored_traces == 0  # the root has not come: the trace is still open
        # The second half as OTLP JSON, as the Collector may send it.
        body = json.dumps(MessageToDict(encode_spans(root)))
        assert post(url, body, "application/json").status_code == 200
        wait_for(lambda: w.stats.scored_traces == 1)
    case = lf.EvalResult.load(window_files(tmp_path / "out")[0]).dataset[0]
    assert case.prompt == PROMPTS[1]
    assert [c.tool_name for c in case.predicted_trajectory] == ["set_light"]


def test_a_trace_whose_root_never_comes_is_scored_after_the_timeout(tmp_path):
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    agent_trace(provider.get_tracer("t"), 2)
    tool = [s for s in exp.get_finished_spans() if s.parent is not None]
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=0.5) as w:
        r = post(f"http://127.0.0.1:{w.port}/v1/traces", encode_spans(tool).SerializeToString())
        assert r.status_code == 200
        wait_for(lambda: w.stats.scored_traces == 1)
        assert w.stats.timed_out_traces == 1
    case = lf.EvalResult.load(window_files(tmp_path / "out")[0]).dataset[0]
    assert case.metadata.get("trace_incomplete") is True


def test_malformed_requests_get_400_and_the_watcher_goes_on(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=5) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, b"\x0a\xff\xff\xff").status_code == 400
        r = post(url, b'{"resourceSpans": [', "application/json")
        assert r.status_code == 400 and "JSON" in r.text
        assert post(url, b'{"other": 1}', "application/json").status_code == 400
        assert post(url, b"x", "text/plain").status_code == 415
        assert w.stats.bad_requests == 4
        provider = exporter_provider(w.port)
        agent_trace(provider.get_tracer("app"), 3)
        provider.force_flush()
        wait_for(lambda: w.stats.scored_traces == 1)  # still receiving
        provider.shutdown()


def test_the_auth_token_is_required_when_set(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, auth_token="s3cret-token", trace_timeout=5) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        body = encode_spans([]).SerializeToString()
        assert post(url, body).status_code == 401
        provider = exporter_provider(w.port, authorization="Bearer s3cret-token")
        agent_trace(provider.get_tracer("app"), 0)
        provider.force_flush()
        wait_for(lambda: w.stats.scored_traces == 1)
        provider.shutdown()
        assert w.stats.unauthorized == 1


def test_the_status_is_read_from_another_thread_while_scores_come_in():
    """write_status runs in a worker thread every 2 s while the loop appends times to score; reading
    them failed with 'deque mutated during iteration', which ended the ticker (no more trace
    timeouts, source polls or drift checks) under load."""
    stats = WatchStats()
    stats.time_to_score.extend([0.5] * 5000)
    stop = threading.Event()

    def scoring() -> None:
        while not stop.is_set():
            stats.time_to_score.append(1.0)
            stats.scored_traces += 1

    thread = threading.Thread(target=scoring)
    thread.start()
    try:
        for _ in range(50):
            status = stats.as_dict()
            assert 0.5 <= status["time_to_score_p50"] <= status["time_to_score_p99"] <= 1.0
            assert "time_to_score" not in status
    finally:
        stop.set()
        thread.join()
    assert WatchStats().as_dict()["time_to_score_p50"] is None


def test_a_full_queue_answers_503_with_retry_after_and_counts_what_it_shed(tmp_path):
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracer = provider.get_tracer("t")
    for i in range(3):
        agent_trace(tracer, i)
    children = [s for s in exp.get_finished_spans() if s.parent is not None]
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, max_queue=2, trace_timeout=60) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        assert post(url, encode_spans(children[:2]).SerializeToString()).status_code == 200
        r = post(url, encode_spans(children[2:]).SerializeToString())
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
        assert w.stats.shed_traces == 1 and w.stats.shed_requests == 1 and w.pending == 2


def test_sampling_scores_the_share_chosen_by_trace_id(tmp_path):
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, sample=0.25, trace_timeout=5) as w:
        mem = InMemorySpanExporter()
        provider = exporter_provider(w.port)
        provider.add_span_processor(SimpleSpanProcessor(mem))
        tracer = provider.get_tracer("app")
        for i in range(400):
            agent_trace(tracer, i)
        provider.force_flush()
        roots = [s for s in mem.get_finished_spans() if s.parent is None]
        chosen = {f"{s.context.trace_id:032x}" for s in roots if (s.context.trace_id & (2**64 - 1)) < 0.25 * 2**64}
        wait_for(lambda: w.stats.scored_traces + w.stats.sampled_out_traces >= 400)
        provider.shutdown()
    assert {tid for tid, _ in journaled(tmp_path / "out")} == chosen
    assert 60 < len(chosen) < 140


def _watch_process(out: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "levelfield", "watch", "--otlp-port", "0", "--out", str(out), "-m", "response_match_score",
         "-m", "trajectory_exact_match", "--trace-timeout", "60", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert "receiving OTLP/HTTP on" in line, line + proc.stderr.read()
    return proc, int(line.rsplit(":", 1)[1].split("/")[0])


def test_kill_9_and_restart_loses_no_acknowledged_trace_and_scores_none_twice(tmp_path):
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracer = provider.get_tracer("t")
    for i in range(600):
        agent_trace(tracer, i, wrong=i % 3 == 0)
    spans = exp.get_finished_spans()
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    traces = list(by_trace.values())
    # Requests of 20 traces; the first 40 traces send their tool spans now and their roots only after the restart.
    held_roots = [s for t in traces[:40] for s in t if s.parent is None]
    first = [s for t in traces[:40] for s in t if s.parent is not None] + [s for t in traces[40:] for s in t]
    out = tmp_path / "out"
    headers = {"Content-Type": "application/x-protobuf"}
    proc, port = _watch_process(out)
    acknowledged = set()
    try:
        with httpx.Client(timeout=60) as client:
            for k in range(0, len(first), 60):
                chunk = first[k:k + 60]
                r = client.post(f"http://127.0.0.1:{port}/v1/traces", content=encode_spans(chunk).SerializeToString(),
                                headers=headers)
                assert r.status_code == 200
                acknowledged |= {f"{s.context.trace_id:032x}" for s in chunk}
    finally:
        proc.send_signal(signal.SIGKILL)  # mid-scoring: some traces journaled, some only spooled
        proc.communicate()  # its pipes read to their end and closed
    before = [tid for tid, _ in journaled(out)]
    assert len(before) < len(traces)  # the kill came before everything was scored
    proc, port = _watch_process(out)
    try:
        r = post(f"http://127.0.0.1:{port}/v1/traces", encode_spans(held_roots).SerializeToString())
        assert r.status_code == 200
        wait_for(lambda: len(journaled(out)) >= len(traces), timeout=90)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    rows = journaled(out)
    ids = [tid for tid, _ in rows]
    assert len(ids) == len(set(ids)) == len(traces)  # nothing twice
    assert set(ids) == acknowledged  # nothing lost
    for _tid, scores in rows[:5]:
        assert set(scores) == {"response_match_score", "trajectory_exact_match"}
    partial = {f"{t[0].context.trace_id:032x}" for t in traces[:40]}
    cases = {c.case_id: c for p in window_files(out) for c in read_record(p).cases}
    assert all(cases[t].prompt in PROMPTS and len(cases[t].predicted_trajectory) == 1 for t in partial)


def _past_window_traces(tracer, start_s: int, n: int, wrong_every: int) -> None:
    for i in range(n):
        agent_trace(tracer, i, wrong=wrong_every > 0 and i % wrong_every == 0, start=(start_s + i % 50) * 10**9)


def test_a_significant_drop_against_the_baseline_raises_one_alert(tmp_path):
    refs = references(tmp_path / "refs.jsonl")
    hour = 3600
    base_start = (int(time.time()) // hour - 30) * hour
    # The baseline: an earlier watch of healthy traffic (1 in 10 wrong).
    with Watcher(METRICS, tmp_path / "base", otlp_port=0, references=refs, window=hour, trace_timeout=1) as w:
        provider = exporter_provider(w.port)
        _past_window_traces(provider.get_tracer("app"), base_start, 300, 10)
        provider.force_flush()
        wait_for(lambda: w.stats.scored_traces >= 300)
        provider.shutdown()
    watched = tmp_path / "now"
    with Watcher(METRICS, watched, otlp_port=0, references=refs, window=hour, trace_timeout=0.3, settle=0.3, poll=0.1,
                 baseline=tmp_path / "base", alert_if_worse=["trajectory_exact_match", "response_match_score"]) as w:
        provider = exporter_provider(w.port)
        tracer = provider.get_tracer("app")
        _past_window_traces(tracer, base_start + 10 * hour, 200, 10)  # same quality: no alert
        _past_window_traces(tracer, base_start + 11 * hour, 200, 2)  # half wrong: a drop
        provider.force_flush()
        wait_for(lambda: (watched / "drift.jsonl").exists() and len((watched / "drift.jsonl").read_text().splitlines()) >= 2)
        provider.shutdown()
    checks = [json.loads(line) for line in (watched / "drift.jsonl").read_text().splitlines()]
    assert [c["alert"] for c in checks] == [False, True]
    dropped = {c["metric"]: c for c in checks[1]["changes"]}
    assert dropped["trajectory_exact_match"]["verdict"] == "regression"
    # One test for both metrics: the permutation test of the means, whose inverted interval is printed.
    assert dropped["trajectory_exact_match"]["test"] == dropped["response_match_score"]["test"] == "permutation"
    for change in dropped.values():
        assert change["ci_high"] < 0  # the interval beside the alert lies below 0, as its test says
    report = subprocess.run([sys.executable, "-m", "levelfield", "report", str(watched)], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True).stdout
    assert "Alerts (1)" in report and "regression" in report and "Worst traces" in report


def test_scores_and_alerts_go_back_over_otlp(tmp_path):
    import uvicorn
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    received = []

    async def sink(request):
        req = ExportTraceServiceRequest.FromString(await request.body())
        for rs in req.resource_spans:
            for ss in rs.scope_spans:
                received.extend(ss.spans)
        return Response(b"", media_type="application/x-protobuf")

    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/v1/traces", sink, methods=["POST"])]),
                                           host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started)
    sink_port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with Watcher(METRICS, tmp_path / "out", otlp_port=0, references=references(tmp_path / "r.jsonl"), trace_timeout=5,
                     export_otlp=f"http://127.0.0.1:{sink_port}") as w:
            mem = InMemorySpanExporter()
            provider = exporter_provider(w.port)
            provider.add_span_processor(SimpleSpanProcessor(mem))
            agent_trace(provider.get_tracer("app"), 1, wrong=True)
            provider.force_flush()
            wait_for(lambda: len(received) >= 1)
            provider.shutdown()
    finally:
        server.should_exit = True
        thread.join()
    root = next(s for s in mem.get_finished_spans() if s.parent is None)
    span = received[0]
    assert span.name == "gen_ai.evaluation"
    assert span.trace_id.hex() == f"{root.context.trace_id:032x}"  # parented to the trace it scores
    assert span.parent_span_id.hex() == f"{root.context.span_id:016x}"
    events = {}
    for e in span.events:
        attrs = {kv.key: kv.value for kv in e.attributes}
        events[attrs["gen_ai.evaluation.name"].string_value] = attrs["gen_ai.evaluation.score.value"].double_value
    assert e.name == "gen_ai.evaluation.result"
    assert events["trajectory_exact_match"] == 0.0


def test_a_folder_source_scores_new_trace_files_once(tmp_path):
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    for i in range(6):
        agent_trace(provider.get_tracer("t"), i)
    spans = exp.get_finished_spans()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with Watcher(METRICS, tmp_path / "out", otlp_port=None, folder=inbox, poll=0.05) as w:
        (inbox / "a.json").write_text(json.dumps(MessageToDict(encode_spans(spans[:6]))), encoding="utf-8")
        wait_for(lambda: w.stats.scored_traces == 3)
        (inbox / "b.json").write_text(json.dumps(MessageToDict(encode_spans(spans[6:]))), encoding="utf-8")
        wait_for(lambda: w.stats.scored_traces == 6)
    # Started again: the files are done, nothing is scored twice.
    with Watcher(METRICS, tmp_path / "out", otlp_port=None, folder=inbox, poll=0.05) as w:
        time.sleep(0.5)
        assert w.stats.scored_traces == 0
    ids = [tid for tid, _ in journaled(tmp_path / "out")]
    assert len(ids) == len(set(ids)) == 6


def test_an_mlflow_experiment_is_polled_for_new_traces_incrementally(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    with mlflow_store(tmp_path / "mlflow.db") as uri:
        experiment = mlflow.set_experiment("production")

        agent = traced_home_agent(PROMPTS, lambda room: "Erledigt.")
        for prompt in PROMPTS[:2]:
            agent(prompt)
        with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", mlflow_tracking_uri=uri,
                     references=references(tmp_path / "refs.jsonl"), poll=0.1) as w:
            wait_for(lambda: w.stats.scored_traces == 2)
            for prompt in PROMPTS[2:]:
                agent(prompt)
            wait_for(lambda: w.stats.scored_traces == 4)
            time.sleep(0.5)
            assert w.stats.scored_traces == 4  # polled again and again: each trace once
        with Watcher(METRICS, tmp_path / "out", otlp_port=None, mlflow_experiment="production", mlflow_tracking_uri=uri,
                     poll=0.1) as w:
            time.sleep(0.6)
            assert w.stats.scored_traces == 0  # a restart takes up where it was
        assert experiment.experiment_id
    rows = journaled(tmp_path / "out")
    assert len(rows) == 4 and all(s["trajectory_exact_match"] == 1.0 for _, s in rows)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the open files from /proc")
def test_a_window_no_trace_was_written_to_lately_has_its_file_closed_and_reopened_for_a_late_one(tmp_path):
    def open_windows() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if f"{os.sep}windows{os.sep}" in target and target.endswith(".jsonl"):
                found.add(target)
        return found

    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracer = provider.get_tracer("app")
    # Idle for 2 s: time enough on a loaded machine to see the file open between the write and the close.
    with Watcher(METRICS, tmp_path / "out", otlp_port=0, trace_timeout=1, close_idle_after=2) as w:
        url = f"http://127.0.0.1:{w.port}/v1/traces"
        agent_trace(tracer, 0)
        assert post(url, encode_spans(exp.get_finished_spans()).SerializeToString()).status_code == 200
        wait_for(lambda: w.stats.scored_traces == 1)
        assert len(open_windows()) == 1
        wait_for(lambda: not open_windows())  # idle for 2 s: its file is closed
        exp.clear()
        agent_trace(tracer, 1)
        assert post(url, encode_spans(exp.get_finished_spans()).SerializeToString()).status_code == 200
        wait_for(lambda: w.stats.scored_traces == 2)
    rows = journaled(tmp_path / "out")
    assert len(rows) == 2 and len({tid for tid, _ in rows}) == 2
    assert len(window_files(tmp_path / "out")) == 1  # the same window's file, appended to


def test_close_idle_after_must_be_positive(tmp_path):
    with pytest.raises(lf.ConfigError, match="close_idle_after=0"):
        Watcher(METRICS, tmp_path / "out", otlp_port=0, close_idle_after=0)
