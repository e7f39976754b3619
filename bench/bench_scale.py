"""Scoring a million saved predictions: time, memory, and the ratio to just parsing the file.

Generates N saved cases (1-8 tool calls each, predicted and reference, a response and a
reference text), as JSON Lines and as Parquet (trajectory columns as lists of
``{tool_name, tool_input}`` with ``tool_input`` a JSON string, as log exports store them), then:

* the floor: parsing every line with orjson (JSONL), reading every row into Python (Parquet);
* ``lf.evaluate(path, metrics=[5 Vertex trajectory metrics, exact_match], out=dir)`` end to end
  (read, score, metrics table written to Parquet, summary), with ``workers=1`` and ``workers=2``,
  each in a fresh process: seconds, rows/s, peak RSS (the process and its workers), ratio to
  the floor; and where the time goes (read / score / write) with ``workers=1``;
* ROUGE-L and BLEU over the same rows (``--text-rows``), rows/s per core with 1 and 2 workers;
* google-adk's ``TrajectoryEvaluator`` (EXACT, IN_ORDER, ANY_ORDER), when installed, on the first
  20,000 cases, side by side with levelfield on the same 20,000 cases (read + score + table).

    python bench/bench_scale.py [--cases 1000000] [--text-rows 100000] [--data DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

TOOLS = ["get_device_info", "set_device_info", "get_temperature", "set_temperature", "get_user_preferences"]
ROOMS = ["Living Room", "Bedroom", "Kitchen", "Escritório", "客厅"]
WORDS = "the living room is now at twenty one degrees and the lights are off in kitchen".split()
TRAJECTORY = [
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
    "trajectory_precision", "trajectory_recall",
]
ADK_SAMPLE = 20_000


def _call(rnd: random.Random) -> dict:
    tool = rnd.choice(TOOLS)
    if tool.endswith("device_info"):
        args = {"device_id": f"device_{rnd.randint(1, 50)}"}
        if tool.startswith("set"):
            args["updates"] = {"status": rnd.choice(["ON", "OFF"])}
    elif tool.endswith("temperature"):
        args = {"location": rnd.choice(ROOMS)}
        if tool.startswith("set"):
            args["temperature"] = rnd.choice([19, 21, 23, 23.5])
    else:
        args = {"user_id": f"user_{rnd.randint(1, 200)}"}
    return {"tool_name": tool, "tool_input": args}


def _case(i: int, rnd: random.Random) -> dict:
    reference = [_call(rnd) for _ in range(rnd.randint(1, 8))]
    predicted = list(reference)
    roll = rnd.random()
    if roll < 0.2:
        rnd.shuffle(predicted)
    elif roll < 0.4:
        predicted.insert(rnd.randrange(len(predicted) + 1), _call(rnd))
    elif roll < 0.55:
        predicted.pop(rnd.randrange(len(predicted)))
    elif roll < 0.7:
        predicted[rnd.randrange(len(predicted))] = _call(rnd)
    predicted = predicted[:8] or [_call(rnd)]
    text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 14)))
    response = text if rnd.random() < 0.5 else " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 14)))
    return {
        "id": f"case-{i}", "prompt": "Set the temperature and tell me the state of the house",
        "response": response, "reference": text,
        "predicted_trajectory": predicted, "reference_trajectory": reference,
    }


def generate(n: int, folder: Path) -> tuple[Path, Path]:
    """The JSONL and Parquet files of n cases (made once per n, then reused)."""
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl, parquet = folder / f"saved-{n}.jsonl", folder / f"saved-{n}.parquet"
    if jsonl.exists() and parquet.exists():
        return jsonl, parquet
    folder.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    call_type = pa.list_(pa.struct([("tool_name", pa.string()), ("tool_input", pa.string())]))
    schema = pa.schema([("id", pa.string()), ("prompt", pa.string()), ("response", pa.string()),
                        ("reference", pa.string()), ("predicted_trajectory", call_type), ("reference_trajectory", call_type)])
    with jsonl.open("wb") as f, pq.ParquetWriter(parquet, schema) as writer:
        for start in range(0, n, 50_000):
            rows = [_case(i, rnd) for i in range(start, min(n, start + 50_000))]
            f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
            for r in rows:
                for key in ("predicted_trajectory", "reference_trajectory"):
                    r[key] = [{"tool_name": c["tool_name"], "tool_input": json.dumps(c["tool_input"], ensure_ascii=False)} for c in r[key]]
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
    return jsonl, parquet


def _peak_gb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    return own, children


# --- each measurement runs in its own process, so peaks do not mix --------------------------------


def floor(path: str) -> dict:
    start = time.perf_counter()
    rows = 0
    if path.endswith(".jsonl"):
        import orjson

        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
                rows += 1
        native = None
    else:
        import pyarrow.parquet as pq

        t = time.perf_counter()
        pq.read_table(path)
        native = time.perf_counter() - t
        start = time.perf_counter()
        for batch in pq.ParquetFile(path).iter_batches(batch_size=20_000):
            rows += len(batch.to_pylist())
    return {"seconds": time.perf_counter() - start, "rows": rows, "arrow_read": native}


def score(path: str, workers: int, metrics: list[str], breakdown: bool) -> dict:
    import pyarrow.parquet  # noqa: F401  (imported before the clock starts, as ADK's modules are)

    import levelfield as lf

    out = Path(tempfile.mkdtemp(prefix="lf-scale-"))
    try:
        phases = {}
        if breakdown:
            phases = _phases(path, metrics)
        start = time.perf_counter()
        result = lf.evaluate(path, metrics=metrics, out=out, workers=workers, progress=False, overwrite=True)
        seconds = time.perf_counter() - start
        table = out / "metrics_table.parquet"
        own, children = _peak_gb()
        return {
            "seconds": seconds, "rows": result.summary_metrics["row_count"], "own_gb": own, "workers_gb": children,
            "table_mb": table.stat().st_size / 1e6, "phases": phases,
            "means": {m: result.summary_metrics[f"{m}/mean"] for m in metrics},
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _phases(path: str, metrics: list[str]) -> dict:
    """Where one worker's time goes: reading rows, scoring them, writing the table."""
    from levelfield._core.score.batch.rows import _ListBatch
    from levelfield._core.score.batch.scorer import BatchScorer
    from levelfield._core.score.metrics.registry import resolve_metrics
    from levelfield.formats.batches import batch_source, table_writer

    scorer = BatchScorer(resolve_metrics(metrics))
    read = scored = written = 0.0
    out = Path(tempfile.mkdtemp(prefix="lf-phases-"))
    writer = table_writer(out / "t.parquet")
    import gc

    for batch in batch_source(path).batches:
        t0 = time.perf_counter()
        gc.disable()
        rows = batch.rows()
        gc.enable()
        t1 = time.perf_counter()
        result = scorer.score(_ListBatch(rows, batch.start))  # already read: scored alone
        t2 = time.perf_counter()
        writer.write(result)
        t3 = time.perf_counter()
        read, scored, written = read + t1 - t0, scored + t2 - t1, written + t3 - t2
        del rows
    writer.close()
    shutil.rmtree(out, ignore_errors=True)
    return {"read": read, "score": scored, "write": written}


def adk_evaluators() -> list:
    """google-adk's TrajectoryEvaluator with EXACT, IN_ORDER and ANY_ORDER."""
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    return [
        TrajectoryEvaluator(eval_metric=EvalMetric(
            metric_name="tool_trajectory_avg_score", threshold=1.0,
            criterion=ToolTrajectoryCriterion(threshold=1.0, match_type=match)))
        for match in ("EXACT", "IN_ORDER", "ANY_ORDER")
    ]


def invocation(prompt: str, text: str, calls: list[dict]):
    """One side of a case as ADK's ``Invocation``: the prompt, the answer, the tool calls."""
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.genai import types

    return Invocation(
        user_content=types.Content(parts=[types.Part(text=prompt)], role="user"),
        final_response=types.Content(parts=[types.Part(text=text)], role="model"),
        intermediate_data=IntermediateData(
            tool_uses=[types.FunctionCall(name=c["tool_name"], args=c["tool_input"]) for c in calls]),
    )


def adk_pairs(rows: Iterable[dict]) -> list[tuple]:
    """Each saved row as ADK's (actual, expected) pair of ``Invocation``s."""
    return [(invocation(r["prompt"], r["response"], r["predicted_trajectory"]),
             invocation(r["prompt"], r["reference"], r["reference_trajectory"])) for r in rows]


def adk_means(evaluators: list, pairs: list[tuple]) -> list[float]:
    """Each evaluator's mean overall score over the pairs, scored one case at a time as ADK does."""
    means = []
    for evaluator in evaluators:
        total = 0.0
        for actual, expected in pairs:
            total += evaluator.evaluate_invocations([actual], [expected]).overall_score
        means.append(total / len(pairs))
    return means


def adk(path: str, n: int) -> dict:
    """google-adk's TrajectoryEvaluator with EXACT, IN_ORDER and ANY_ORDER on the first n cases."""
    import orjson

    evaluators = adk_evaluators()
    start = time.perf_counter()
    with open(path, "rb") as f:
        cases = adk_pairs(orjson.loads(line) for line in itertools.islice(f, n))
    built = time.perf_counter()
    means = adk_means(evaluators, cases)
    done = time.perf_counter()
    return {"seconds": done - start, "evaluate_seconds": done - built, "rows": len(cases), "means": means}


def text(path: str, rows: int, workers: int) -> dict:
    import levelfield as lf

    sample = Path(tempfile.mkdtemp(prefix="lf-text-")) / "rows.jsonl"
    with open(path, "rb") as f, sample.open("wb") as g:
        for i, line in enumerate(f):
            if i >= rows:
                break
            g.write(line)
    start = time.perf_counter()
    result = lf.evaluate(sample, metrics=["rouge_l_sum", "bleu"], workers=workers, progress=False)
    seconds = time.perf_counter() - start
    shutil.rmtree(sample.parent, ignore_errors=True)
    return {"seconds": seconds, "rows": result.summary_metrics["row_count"], "workers": workers}


def run_child(script: str, *args: str) -> dict:
    """Run one step of a bench ``script`` in a fresh process (``script --child ARGS``); its last line of JSON."""
    out = subprocess.run([sys.executable, script, "--child", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"bench step {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child(*args: str) -> dict:
    return run_child(__file__, *args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--text-rows", type=int, default=100_000)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "levelfield-bench-scale"))
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "floor":
            result = floor(rest[0])
        elif kind == "score":
            result = score(rest[0], int(rest[1]), rest[2].split(","), rest[3] == "1")
        elif kind == "adk":
            result = adk(rest[0], int(rest[1]))
        else:
            result = text(rest[0], int(rest[1]), int(rest[2]))
        print(json.dumps(result))
        return

    t = time.perf_counter()
    jsonl, parquet = generate(args.cases, Path(args.data))
    print(f"data: {args.cases:,} cases, {jsonl.stat().st_size / 1e6:,.0f} MB JSONL, {parquet.stat().st_size / 1e6:,.0f} MB Parquet "
          f"(ready in {time.perf_counter() - t:.0f} s); load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    metrics = ",".join([*TRAJECTORY, "exact_match"])
    for path in (jsonl, parquet):
        base = _child("floor", str(path))
        extra = f"; Arrow's own read {base['arrow_read']:.2f} s" if base["arrow_read"] is not None else ""
        what = "orjson.loads of every line" if path.suffix == ".jsonl" else "every row into Python (to_pylist)"
        print(f"\n{path.name}: floor ({what}) {base['seconds']:.2f} s{extra}")
        for workers in (1, 2):
            r = _child("score", str(path), str(workers), metrics, "1" if workers == 1 else "0")
            print(f"  workers={workers}: {r['seconds']:.2f} s end to end, {r['rows'] / r['seconds']:,.0f} rows/s, "
                  f"ratio to floor {r['seconds'] / base['seconds']:.2f}, peak RSS {r['own_gb']:.2f} GB "
                  f"(+ workers {r['workers_gb']:.2f} GB each at most), table {r['table_mb']:.0f} MB")
            if r["phases"]:
                p = r["phases"]
                print(f"    where one worker's time goes: read {p['read']:.2f} s, score {p['score']:.2f} s, write {p['write']:.2f} s")
    sample = min(ADK_SAMPLE, args.cases)
    head = Path(args.data) / f"saved-{sample}-head.jsonl"
    with jsonl.open("rb") as f, head.open("wb") as g:
        for i, line in enumerate(f):
            if i >= sample:
                break
            g.write(line)
    ours = _child("score", str(head), "1", ",".join(TRAJECTORY[:3]), "0")
    print(f"\n{sample:,} cases, EXACT + IN_ORDER + ANY_ORDER: levelfield {ours['seconds']:.2f} s end to end "
          f"({ours['rows'] / ours['seconds']:,.0f} cases/s)")
    try:
        import google.adk  # noqa: F401
    except ImportError:
        print("google-adk is not installed: no side-by-side with its TrajectoryEvaluator")
    else:
        a = _child("adk", str(head), str(sample))
        print(f"  google-adk TrajectoryEvaluator: {a['seconds']:.2f} s end to end ({a['rows'] / a['seconds']:,.0f} cases/s; "
              f"{a['evaluate_seconds']:.2f} s of it evaluating)")
        print(f"  levelfield / ADK throughput: {a['seconds'] / ours['seconds']:.1f}x end to end, "
              f"{a['evaluate_seconds'] / ours['seconds']:.1f}x against ADK's evaluation alone (target >= 3x)")
        print(f"  means, ADK: {[round(m, 4) for m in a['means']]}  levelfield: {[round(v, 4) for v in ours['means'].values()]}")
    rows = min(args.text_rows, args.cases)
    for workers in (1, 2):
        r = _child("text", str(jsonl), str(rows), str(workers))
        print(f"\nROUGE-L sum + BLEU on {r['rows']:,} rows, workers={workers}: {r['seconds']:.2f} s, "
              f"{r['rows'] / r['seconds']:,.0f} rows/s, {r['rows'] / r['seconds'] / workers:,.0f} rows/s per core")
    os.unlink(head)


if __name__ == "__main__":
    main()
