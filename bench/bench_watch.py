"""Benchmark: ``levelfield watch`` under a burst and under steady traffic.

The watcher runs in its own process (``levelfield watch``, fsync on), scoring every trace with
the trajectory and response metrics against a references file (canary prompts):

1. burst: 10,000 traces (3 spans each: agent, tool, model), made by the OpenTelemetry SDK,
   encoded by its OTLP encoder into requests of 100 traces and posted as fast as 4 senders go.
   Prints the sustained rate (traces scored per second, first request to last score), the 503s
   (shed requests, resent after Retry-After) and the watcher's peak memory (VmHWM).
2. steady: traces made live at a fixed rate and pushed by the SDK's own OTLP/HTTP exporter
   (BatchSpanProcessor). Prints the p50 and p99 time from a trace's end to its score being journaled.
3. mlflow: traces already in an MLflow experiment (a sqlite tracking store, made by MLflow's
   tracing API), picked up by ``--mlflow-experiment``, scored, and their scores logged back as
   assessments (one per metric). Prints the traces/s scored with the export off, and with it on
   the time until every assessment is in MLflow (traces/s and ms per trace of exporting).

Run from the repository root: ``python bench/bench_watch.py [--traces 10000] [--rate 300] [--mlflow-traces 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

PROMPTS = [f"Schalte das Licht in Raum {i} aus" for i in range(20)]
METRICS = ["trajectory_exact_match", "trajectory_precision", "trajectory_recall", "response_match_score", "rouge_l_sum"]


def one_trace(tracer, i: int) -> None:
    room = i % len(PROMPTS)
    with tracer.start_as_current_span("invoke_agent home") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": PROMPTS[room]}]}]))
        with tracer.start_as_current_span("execute_tool set_light") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "set_light")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"room": room, "on": i % 7 == 0}))
        with tracer.start_as_current_span("chat model") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 40)
            chat.set_attribute("gen_ai.usage.output_tokens", 9)
        agent.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"Das Licht in Raum {room} ist aus."}]}]))


def start_watcher(out: Path, refs: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    cmd = [sys.executable, "-m", "levelfield", "watch", "--otlp-port", "0", "--out", str(out), "--references", str(refs),
           "--trace-timeout", "30", *[a for m in METRICS for a in ("-m", m)], *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline()
    if "receiving" not in line:
        raise SystemExit(line + proc.stderr.read())
    return proc, int(line.rsplit(":", 1)[1].split("/")[0])


def status(out: Path) -> dict:
    try:
        return json.loads((out / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def scored_so_far(out: Path) -> int:
    return sum(1 for p in (out / "windows").glob("*.jsonl") for line in p.open("rb") if line.startswith(b'{"kind":"run"'))


async def burst(port: int, requests: list[bytes], senders: int = 4) -> int:
    shed = 0
    queue = list(reversed(requests))
    async with httpx.AsyncClient(timeout=60) as client:
        async def sender() -> None:
            nonlocal shed
            while queue:
                body = queue.pop()
                while True:
                    r = await client.post(f"http://127.0.0.1:{port}/v1/traces", content=body,
                                          headers={"Content-Type": "application/x-protobuf"})
                    if r.status_code == 200:
                        break
                    shed += 1
                    await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
        await asyncio.gather(*(sender() for _ in range(senders)))
    return shed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=300.0, help="traces per second in the steady phase")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the steady phase")
    parser.add_argument("--mlflow-traces", type=int, default=1000, help="traces in the MLflow phase (0: skip it)")
    parser.add_argument("--only-mlflow", action="store_true", help="run the MLflow phase only")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_watch_"))
    refs = tmp / "refs.jsonl"
    with refs.open("w", encoding="utf-8") as f:
        for room, prompt in enumerate(PROMPTS):
            f.write(json.dumps({"prompt": prompt, "reference": f"Das Licht in Raum {room} ist aus.",
                                "reference_trajectory": [{"tool_name": "set_light", "tool_input": {"room": room, "on": False}}]},
                               ensure_ascii=False) + "\n")

    if args.mlflow_traces:
        bench_mlflow(tmp, refs, args.mlflow_traces)
    if args.only_mlflow:
        return

    # 1. burst
    mem = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(mem))
    tracer = provider.get_tracer("bench")
    for i in range(args.traces):
        one_trace(tracer, i)
    spans = mem.get_finished_spans()
    requests = [encode_spans(spans[k:k + 300]).SerializeToString() for k in range(0, len(spans), 300)]
    out = tmp / "burst"
    proc, port = start_watcher(out, refs, "--max-queue", "5000")
    try:
        t0 = time.perf_counter()
        shed = asyncio.run(burst(port, requests))
        sent = time.perf_counter() - t0
        while scored_so_far(out) < args.traces:
            time.sleep(0.05)
        took = time.perf_counter() - t0
        peak = peak_memory_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    print(f"burst: {args.traces} traces ({len(spans)} spans, {len(requests)} requests) accepted in {sent:.1f} s, "
          f"scored in {took:.1f} s = {args.traces / took:,.0f} traces/s sustained; {shed} requests shed (503) and resent; "
          f"watcher peak memory {peak:.0f} MB")

    # 2. steady
    out = tmp / "steady"
    proc, port = start_watcher(out, refs)
    try:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"),
                                                       schedule_delay_millis=100, max_export_batch_size=512))
        tracer = provider.get_tracer("bench")
        n = int(args.rate * args.seconds)
        start = time.perf_counter()
        for i in range(n):
            one_trace(tracer, i)
            ahead = (i + 1) / args.rate - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)
        provider.force_flush()
        while scored_so_far(out) < n:
            time.sleep(0.05)
        time.sleep(2.5)  # the status file is written every 2 s
        s = status(out)
        provider.shutdown()
    finally:
        proc.terminate()
        proc.wait()
    print(f"steady: {n} traces at {args.rate:.0f}/s through the SDK's OTLP/HTTP exporter (batches every 100 ms): "
          f"time from a trace's end to its score p50 {s.get('time_to_score_p50', float('nan')):.3f} s, "
          f"p99 {s.get('time_to_score_p99', float('nan')):.3f} s")


def bench_mlflow(tmp: Path, refs: Path, n: int) -> None:
    """Phase 3: an MLflow experiment's traces scored, with and without their scores logged back."""
    import sqlite3

    import mlflow

    from tests.conftest import mlflow_store, traced_home_agent

    db = tmp / "mlflow.db"

    def assessments() -> int:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT count(*) FROM assessments").fetchone()[0]

    figures = {}
    with mlflow_store(db) as uri:
        mlflow.set_experiment("production")
        agent = traced_home_agent(PROMPTS, lambda room: f"Das Licht in Raum {room} ist aus.")
        for i in range(n):
            agent(PROMPTS[i % len(PROMPTS)])
        for export in (False, True):
            out = tmp / f"mlflow_{export}"
            before = assessments()
            proc, _ = start_watcher(out, refs, "--mlflow-experiment", "production", "--mlflow-tracking-uri", uri,
                                    *([] if export else ["--no-export-mlflow"]))
            try:
                t0 = time.perf_counter()
                while scored_so_far(out) < n:
                    time.sleep(0.05)
                scored = time.perf_counter() - t0
                while export and assessments() - before < n * len(METRICS):
                    time.sleep(0.05)
                logged = time.perf_counter() - t0
            finally:
                proc.terminate()
                proc.wait()
            figures[export] = (scored, logged)
    off, (on_scored, on_logged) = figures[False][0], figures[True]
    print(f"mlflow: {n} traces of an MLflow experiment (sqlite store) scored with {len(METRICS)} metrics in {off:.1f} s "
          f"= {n / off:,.0f} traces/s with the export off; with it on, scored in {on_scored:.1f} s and all "
          f"{n * len(METRICS)} assessments logged in {on_logged:.1f} s = {n / on_logged:,.0f} traces/s "
          f"({1000 * on_logged / n:.1f} ms a trace, {1000 * on_logged / (n * len(METRICS)):.1f} ms an assessment)")


if __name__ == "__main__":
    main()
