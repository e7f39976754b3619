"""Traces -> scored: how fast ``load_traces`` + ``evaluate`` go through production-sized trace logs.

Writes N synthetic traces in two formats to a temporary folder, each a small agent run (one
agent span, a retrieval, three tool calls, a model call with token usage):

- MLflow: one trace JSON per line (schema v3, as ``Trace.to_json()`` writes it);
- OTLP: OTLP JSON exports (``{"resourceSpans": ...}``) of 1,000 traces each, one per line, as
  an OpenTelemetry collector's file exporter writes them.

Each format is then loaded with ``lf.load_traces`` and scored with ``trajectory_recall``,
``trajectory_exact_match``, ``document_recall`` and ``rouge_l_sum`` in a fresh subprocess; the
script prints traces/s for loading, scoring and both, and the subprocess's peak RSS.

    python bench/bench_traces.py [--traces 100000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ["list_devices", "get_device_info", "set_device_info", "get_temperature", "set_temperature"]
ROOMS = ["Küche", "Living Room", "寝室", "Bedroom", "Salão"]
METRICS = ["trajectory_recall", "trajectory_exact_match", "document_recall", "rouge_l_sum"]


def _run_plan(i: int) -> dict:
    rnd = random.Random(i)
    room = rnd.choice(ROOMS)
    calls = [(rnd.choice(TOOLS), {"room": room, "step": k}) for k in range(3)]
    docs = [f"kb://{rnd.randrange(50)}" for _ in range(3)]
    return {
        "prompt": f"Turn off the lights in the {room}, request {i}",
        "answer": f"The lights in the {room} are off now.",
        "calls": calls,
        "docs": docs,
    }


def mlflow_trace(i: int) -> dict:
    plan = _run_plan(i)
    t0 = 1_795_000_000_000_000_000 + i * 10_000_000
    tid = f"{i:032x}"

    def span(k: int, name: str, kind: str, inputs, outputs, parent: int | None, start: int, end: int) -> dict:
        return {
            "trace_id": tid,
            "span_id": f"{i:08x}{k:08x}",
            "parent_span_id": None if parent is None else f"{i:08x}{parent:08x}",
            "name": name,
            "start_time_unix_nano": t0 + start,
            "end_time_unix_nano": t0 + end,
            "events": [],
            "status": {"code": "STATUS_CODE_OK", "message": ""},
            "attributes": {
                "mlflow.traceRequestId": json.dumps(f"tr-{tid}"),
                "mlflow.spanType": json.dumps(kind),
                "mlflow.spanInputs": json.dumps(inputs, ensure_ascii=False),
                "mlflow.spanOutputs": json.dumps(outputs, ensure_ascii=False),
            },
        }

    spans = [span(0, "agent", "AGENT", {"request": plan["prompt"]}, plan["answer"], None, 0, 9_000_000)]
    docs = [{"page_content": f"about {d}", "metadata": {"doc_uri": d}} for d in plan["docs"]]
    spans.append(span(1, "retrieve", "RETRIEVER", {"query": plan["prompt"]}, docs, 0, 100, 1_000_000))
    for k, (name, args) in enumerate(plan["calls"], 2):
        spans.append(span(k, name, "TOOL", args, {"ok": True}, 0, k * 1_000_000, k * 1_000_000 + 500_000))
    llm = span(9, "chat", "CHAT_MODEL", {"messages": []}, plan["answer"], 0, 7_000_000, 8_000_000)
    llm["attributes"]["mlflow.chat.tokenUsage"] = json.dumps({"input_tokens": 120, "output_tokens": 12, "total_tokens": 132})
    spans.append(llm)
    return {"info": {"trace_id": f"tr-{tid}", "request_time": "2026-11-22T00:00:00Z", "state": "OK"}, "data": {"spans": spans}}


def _kv(key: str, value) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def otlp_spans(i: int) -> list[dict]:
    plan = _run_plan(i)
    t0 = 1_795_000_000_000_000_000 + i * 10_000_000
    tid = f"{i:032x}"

    def span(k: int, name: str, attrs: list, parent: int | None, start: int, end: int) -> dict:
        out = {
            "traceId": tid,
            "spanId": f"{i:08x}{k:08x}",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(t0 + start),
            "endTimeUnixNano": str(t0 + end),
            "attributes": attrs,
            "status": {},
        }
        if parent is not None:
            out["parentSpanId"] = f"{i:08x}{parent:08x}"
        return out

    msg = lambda role, text: json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)  # noqa: E731
    spans = [span(0, "invoke_agent home", [_kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "home"),
                                          _kv("gen_ai.input.messages", msg("user", plan["prompt"])),
                                          _kv("gen_ai.output.messages", msg("assistant", plan["answer"]))], None, 0, 9_000_000)]
    docs = json.dumps([{"content": f"about {d}", "doc_uri": d} for d in plan["docs"]])
    spans.append(span(1, "retrieval", [_kv("gen_ai.operation.name", "retrieval"), _kv("gen_ai.retrieval.documents", docs)], 0, 100, 1_000_000))
    for k, (name, args) in enumerate(plan["calls"], 2):
        spans.append(span(k, f"execute_tool {name}", [_kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", name),
                                                     _kv("gen_ai.tool.call.id", f"call_{k}"),
                                                     _kv("gen_ai.tool.call.arguments", json.dumps(args, ensure_ascii=False)),
                                                     _kv("gen_ai.tool.call.result", '{"ok": true}')], 0, k * 1_000_000, k * 1_000_000 + 500_000))
    spans.append(span(9, "chat", [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.usage.input_tokens", 120),
                                  _kv("gen_ai.usage.output_tokens", 12), _kv("gen_ai.output.messages", msg("assistant", plan["answer"]))],
                      0, 7_000_000, 8_000_000))
    return spans


def write_files(n: int, folder: Path) -> tuple[Path, Path, Path]:
    mlflow_path, otlp_path, truth_path = folder / "mlflow.jsonl", folder / "otlp.jsonl", folder / "truth.json"
    with mlflow_path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(mlflow_trace(i), ensure_ascii=False) + "\n")
    with otlp_path.open("w", encoding="utf-8") as f:
        for start in range(0, n, 1000):
            spans = [s for i in range(start, min(n, start + 1000)) for s in otlp_spans(i)]
            export = {"resourceSpans": [{"resource": {"attributes": [_kv("service.name", "home")]},
                                         "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}
            f.write(json.dumps(export, ensure_ascii=False) + "\n")
    # Ground truth per trace id, joined onto the loaded cases: reference answer, calls, documents.
    truth = {}
    for i in range(n):
        plan = _run_plan(i)
        truth[f"{i:032x}"] = {
            "reference": plan["answer"],
            "reference_trajectory": [{"tool_name": t, "tool_input": a} for t, a in plan["calls"][:2]],
            "expected_retrieved_context": [{"doc_uri": d} for d in plan["docs"][:2]],
        }
    truth_path.write_text(json.dumps(truth), encoding="utf-8")
    return mlflow_path, otlp_path, truth_path


def measure(path: str, truth_path: str) -> None:
    """Child process: load, join ground truth, score; print one JSON line of figures."""
    import levelfield as lf

    truth = json.loads(Path(truth_path).read_text(encoding="utf-8"))
    start = time.perf_counter()
    ds = lf.load_traces(path)
    loaded = time.perf_counter()
    for case in ds:
        t = truth[case.case_id.removeprefix("tr-")]
        case.reference = t["reference"]
        case.reference_trajectory = [lf.ToolCall(**c) for c in t["reference_trajectory"]]
        case.expected_retrieved_context = t["expected_retrieved_context"]
    joined = time.perf_counter()
    result = lf.evaluate(ds, metrics=METRICS, progress=False)
    summary = result.summary_metrics
    scored = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "traces": len(ds),
        "failed": sum(1 for r in result.runs if r.failure),
        "load_s": loaded - start,
        "score_s": scored - joined,
        "total_s": scored - start - (joined - loaded),
        "peak_mib": peak_kib / 1024,
        "means": {m: round(summary.get(f"{m}/mean", float("nan")), 4) for m in METRICS},
    }))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        mlflow_path, otlp_path, truth_path = write_files(args.traces, Path(tmp))
        print(f"wrote {args.traces} traces per format in {time.perf_counter() - t:.1f} s "
              f"(MLflow {mlflow_path.stat().st_size / 2**20:.0f} MiB, OTLP {otlp_path.stat().st_size / 2**20:.0f} MiB)")
        for label, path in (("MLflow JSON", mlflow_path), ("OTLP JSON", otlp_path)):
            out = subprocess.run([sys.executable, __file__, "--child", str(path), str(truth_path)],
                                 capture_output=True, text=True, check=True)
            fig = json.loads(out.stdout.strip().splitlines()[-1])
            n = fig["traces"]
            print(f"{label:<12} {n} traces ({fig['failed']} failed): load {n / fig['load_s']:8.0f} traces/s, "
                  f"score {n / fig['score_s']:8.0f} traces/s, load+score {n / fig['total_s']:8.0f} traces/s "
                  f"({fig['total_s']:.1f} s); peak RSS {fig['peak_mib']:.0f} MiB; means {fig['means']}")


if __name__ == "__main__":
    main()
