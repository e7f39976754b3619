"""Runner overhead: 2,000 cases, an agent that sleeps 20 ms, 50 ms, then 400 cases at 1 s, concurrency 100 (issues #16, #56).

Ideal wall time = cases / concurrency x the latency (1.0 s at 50 ms, 4 s at 1 s). At each latency of ``--sleeps``,
for an async agent and a sync one (sync functions run on daemon threads), the median of ``--repeats``
interleaved runs of (the bare floors below run in the same rounds):

- **defaults**: ``lf.evaluate(ds, agent, metrics, concurrency=100)`` (runs and scoring, the adaptive limit on),
  then ``result.summary_metrics``; target <= 1.05x the bare floor (sync and async; at 1 s, <= 1.10x the ideal);
  the endpoint is known from the runs before it (an endpoint that carried its whole concurrency with no 429 is
  kept in the cache folder, and the next run starts at it: issue #56), as a user's second run is;
- **first contact**: the same with that memory forgotten before each run (``lf.forget_limits(endpoint)``): the limit
  starts at half the concurrency and reaches it after one round of answers (what a user's first run pays);
- **adaptive=False**: the same with a fixed concurrency (what the adaptive limit costs: defaults / adaptive=False);
- **out=**: the same with ``out=dir`` (every run journaled to runs.jsonl as it finishes, then the
  record, tables and summary written). Two ratios: against the runner alone (journal on/off: the
  journal *and* the files written at the end), and against the same result saved once at the end
  (``evaluate`` then ``result.save``, both writing the same files). Then out= less the seconds its
  ``EvalResult.save`` took at the end (the tables with explanations and the summary): the runner
  with its journal alone against the runner alone; target <= 1.03 (issues #29, #46).

For scale it prints the floor of this machine, what no runner can beat: bare asyncio (100 tasks
looping over ``asyncio.sleep``) and a bare pool of 100 threads calling ``time.sleep``. Then, when
``vertexai`` is importable, Vertex AI's ``EvalTask(...).evaluate(runnable=agent)`` on the same
workload with the same sync agent, in a child process (importing ``vertexai.preview.evaluation``
silences warnings process-wide). Its built-in metrics, ``trajectory_exact_match`` included, are
computed by the hosted evaluation service (one API request a row), so offline it cannot score
them: the trajectory check is a local ``CustomMetric``, and two Vertex figures are printed, the
whole ``evaluate`` and its agent-running phase alone (``_run_runnable_inference``: 100 threads).
The runner / Vertex ratios compare levelfield's whole ``evaluate`` (runs and scoring) with each;
target <= 0.95 (issue #56). The machine is shared: each figure set prints the load average before and after;
compare only figures taken at similar loads.

``--where`` says where the save at the end goes (explanations, the table, the files, the summary),
from a cProfile of each save; the profiler slows the saves, so its ratios are not the figures.

    python bench/bench_runner.py [--cases 2000] [--concurrency 100] [--sleeps 0.02,0.05,1.0] [--repeats 5] [--no-vertex] [--where]
    python bench/bench_runner.py --quick      (3 repeats, no save-at-the-end mode, no Vertex: a few minutes)
    python bench/bench_runner.py --sleeps 0.05 --modes defaults,adaptive=False --no-vertex   (the 50 ms rows against the floors)

Vertex runs at 50 ms only (the issue's figure: levelfield / Vertex <= 0.95).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import cProfile
import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

METRICS = ["trajectory_exact_match", "exact_match"]
MODES = ["defaults", "first contact", "adaptive=False", "out=", "save at the end"]


def _call(prompt: str) -> dict:
    return {"response": "done", "predicted_trajectory": [
        {"tool_name": "set_device_info", "tool_input": {"device_id": prompt.rsplit(" ", 1)[1]}}]}


def _rows(n: int) -> list[dict]:
    return [
        {"prompt": f"turn off device_{i}", "reference": "done",
         "reference_trajectory": [{"tool_name": "set_device_info", "tool_input": {"device_id": f"device_{i}"}}]}
        for i in range(n)
    ]


def _floor(cases: int, concurrency: int, pause: float) -> tuple[float, float]:
    """Wall seconds of bare asyncio and of a bare thread pool on this workload."""
    per_slot = cases // concurrency

    async def slots() -> None:
        async def slot() -> None:
            for _ in range(per_slot):
                await asyncio.sleep(pause)

        await asyncio.gather(*(slot() for _ in range(concurrency)))

    start = time.perf_counter()
    asyncio.run(slots())
    loop_wall = time.perf_counter() - start
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: time.sleep(pause), range(cases)))
    return loop_wall, time.perf_counter() - start


def _vertex_child(cases: int, pause: float) -> None:
    """Runs in a child process: Vertex EvalTask on the workload; prints one JSON line."""
    try:
        import pandas as pd
        import vertexai
        from google.auth.credentials import AnonymousCredentials
        from vertexai.preview.evaluation import EvalTask
        from vertexai.preview.evaluation.metrics import CustomMetric
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason to skip
        print(json.dumps({"skip": f"vertexai.preview.evaluation cannot be imported ({type(exc).__name__}: {exc})"}))
        return

    def agent(prompt: str) -> dict:
        time.sleep(pause)
        return _call(prompt)

    def exact(instance: dict) -> dict:
        return {"trajectory_exact": float(instance["predicted_trajectory"] == instance["reference_trajectory"])}

    # Its agent-running phase alone, timed around the function EvalTask calls for it.
    from vertexai.preview.evaluation import _evaluation

    inference: list[float] = []
    run_inference = _evaluation._run_runnable_inference

    def timed_inference(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return run_inference(*args, **kwargs)
        finally:
            inference.append(time.perf_counter() - start)

    _evaluation._run_runnable_inference = timed_inference

    rows = _rows(cases)
    frame = pd.DataFrame({"prompt": [r["prompt"] for r in rows],
                          "reference_trajectory": [r["reference_trajectory"] for r in rows]})
    try:
        # No API call is made (only a local CustomMetric), but EvalTask builds a service client
        # first: anonymous credentials let it do so offline.
        vertexai.init(project="levelfield-bench", location="us-central1", credentials=AnonymousCredentials())
        start = time.perf_counter()
        result = EvalTask(dataset=frame, metrics=[CustomMetric(name="trajectory_exact", metric_function=exact)]
                          ).evaluate(runnable=agent)
        wall = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"skip": f"EvalTask could not run offline ({type(exc).__name__}: {str(exc)[:160]})"}))
        return
    assert result.summary_metrics["trajectory_exact/mean"] == 1.0
    print(json.dumps({"wall": wall, "inference": sum(inference) if inference else None}))


def _vertex(cases: int, pause: float, repeats: int) -> tuple[list[dict], str | None]:
    walls: list[dict] = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, __file__, "--vertex-child", "--cases", str(cases), "--sleep", str(pause)],
            capture_output=True, text=True, timeout=600, env={**os.environ, "TQDM_DISABLE": "1"},
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            return walls, f"the child process failed: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
        answer = json.loads(lines[-1])
        if "skip" in answer:
            return walls, answer["skip"]
        walls.append(answer)
    return walls, None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--sleep", type=float, default=None, help="one latency only (seconds); default: --sleeps")
    parser.add_argument("--sleeps", default="0.02,0.05,1.0",
                        help="the agent's latencies, comma-separated (default 0.02,0.05,1.0)")
    parser.add_argument("--slow-cases", type=int, default=400,
                        help="cases at a latency of 0.5 s or more (default 400: 400 x 1 s at 100 in flight, ideal 4 s)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats, no save-at-the-end mode, no Vertex: a few minutes")
    parser.add_argument("--no-vertex", action="store_true", help="skip Vertex EvalTask")
    parser.add_argument("--modes", default=None,
                        help="the runner's modes to time, comma-separated, of: " + ", ".join(MODES)
                             + " (default: all; --quick leaves out 'save at the end')")
    parser.add_argument("--agents", default="async,sync", help="the agents to time: async, sync or both (default)")
    parser.add_argument("--vertex-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--where", action="store_true",
                        help="also say where out='s save at the end goes (a cProfile of each save, medians); the "
                             "profiler slows the saves, so take the ratios from a run without it")
    args = parser.parse_args()
    if args.vertex_child:
        _vertex_child(args.cases, args.sleep or 0.05)
        return
    if args.quick:
        args.repeats = min(args.repeats, 3)
        args.no_vertex = True
    sleeps = [args.sleep] if args.sleep is not None else [float(v) for v in args.sleeps.split(",")]
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for pause in sleeps:
        cases = args.slow_cases if pause >= 0.5 else args.cases
        _one_latency(args, cases, pause)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def _one_latency(args: argparse.Namespace, cases: int, pause: float) -> None:
    """Every mode at one latency, side by side: the floors and the runner's modes interleaved, medians of repeats."""
    import levelfield as lf

    dataset = lf.load_dataset(_rows(cases))

    async def async_agent(prompt: str) -> dict:
        await asyncio.sleep(pause)
        return _call(prompt)

    def sync_agent(prompt: str) -> dict:
        time.sleep(pause)
        return _call(prompt)

    ideal = cases / args.concurrency * pause
    print(f"\n{cases} cases, agent sleeps {pause * 1000:.0f} ms, concurrency {args.concurrency}: ideal {ideal:.2f} s; "
          f"median of {args.repeats} interleaved runs")
    kinds = {kind.strip() for kind in args.agents.split(",")}
    agents = {f"{kind} agent": agent for kind, agent in (("async", async_agent), ("sync", sync_agent)) if kind in kinds}
    walls: dict[tuple[str, str], list[float]] = {}
    # The seconds out= spends saving the tables at the end (EvalResult.save, called by evaluate):
    # out= less this is the runner with its journal alone.
    saving: list[float] = []
    save = lf.EvalResult.save

    parts: dict[str, list[float]] = {}

    def timed_save(self, directory):  # type: ignore[no-untyped-def]
        profile = cProfile.Profile() if args.where else None
        start = time.perf_counter()
        try:
            if profile is None:
                return save(self, directory)
            return profile.runcall(save, self, directory)
        finally:
            saving.append(time.perf_counter() - start)
            if profile is not None:
                _save_parts(profile, parts)

    if args.modes is not None:
        modes = [mode.strip() for mode in args.modes.split(",")]
        unknown = [mode for mode in modes if mode not in MODES]
        if unknown:
            raise SystemExit(f"--modes: unknown {unknown}; the modes are {MODES}")
    else:
        modes = MODES[:-1] if args.quick else MODES
    lf.EvalResult.save = timed_save  # type: ignore[method-assign]
    load = os.getloadavg()[0]
    floors: list[tuple[float, float]] = []
    # A cache folder of its own: no limit learned elsewhere applies (the agents refuse nothing: each is kept as carrying
    # its concurrency, and "defaults" starts there; "first contact" forgets it first).
    with tempfile.TemporaryDirectory() as tmp, _cache_folder(tmp):
        for agent in agents.values():  # warm-up: each agent's endpoint is then known as carrying its concurrency
            lf.evaluate(dataset[: min(len(dataset), 200)], agent, METRICS, concurrency=args.concurrency, progress=False)
        for _ in range(args.repeats):
            floors.append(_floor(cases, args.concurrency, pause))
            for label, agent in agents.items():
                for mode in modes:
                    options: dict = {"out": f"{tmp}/journal", "overwrite": True} if mode == "out=" else {}
                    if mode == "adaptive=False":
                        options["adaptive"] = False
                    if mode == "first contact":
                        lf.forget_limits(f"agent {agent.__name__}")  # this agent's endpoint only
                    # Each call starts as a user's first would: the previous call's result freed, its garbage
                    # collected (else the mode after a bigger one pays for walking what that one left).
                    result = summary = None
                    gc.collect()
                    start = time.perf_counter()
                    result = lf.evaluate(dataset, agent, METRICS, concurrency=args.concurrency, progress=False, **options)
                    summary = result.summary_metrics
                    if mode == "save at the end":
                        result.save(f"{tmp}/saved")
                    wall = time.perf_counter() - start
                    walls.setdefault((label, mode), []).append(wall)
                    if mode == "out=":
                        walls.setdefault((label, "journal alone"), []).append(wall - saving[-1])
                    saving.clear()
                    assert summary["trajectory_exact_match/mean"] == 1.0 and summary["failure/count"] == 0
    lf.EvalResult.save = save  # type: ignore[method-assign]
    floor = {"async agent": statistics.median(f[0] for f in floors), "sync agent": statistics.median(f[1] for f in floors)}
    print(f"floor of this machine: bare asyncio {floor['async agent']:.3f} s = {floor['async agent'] / ideal:.3f}x ideal, "
          f"bare thread pool {floor['sync agent']:.3f} s = {floor['sync agent'] / ideal:.3f}x ideal")
    medians: dict[str, dict[str, float]] = {}
    for label in agents:
        med = medians[label] = {mode: statistics.median(w) for (a, mode), w in walls.items() if a == label}
        bare = floor[label]
        target = f"target <= {1.10 if pause >= 0.5 else 1.05}{' of the ideal' if pause >= 0.5 else ''}"
        line = f"{label:11s}:"
        if "defaults" in med:
            line += (f" defaults {med['defaults']:.3f} s = {med['defaults'] / ideal:.3f}x ideal = "
                     f"{med['defaults'] / bare:.3f}x the bare floor ({target});")
        if "adaptive=False" in med:
            line += f" adaptive=False {med['adaptive=False']:.3f} s = {med['adaptive=False'] / bare:.3f}x the floor"
            if "defaults" in med:
                line += f"; defaults / adaptive=False {med['defaults'] / med['adaptive=False']:.3f}"
        print(line.rstrip(";"))
        if "first contact" in med:
            line = (f"{'':11s}  first contact (nothing kept of the endpoint) {med['first contact']:.3f} s = "
                    f"{med['first contact'] / bare:.3f}x the floor")
            if "defaults" in med:
                line += f" = {med['first contact'] / med['defaults']:.3f}x defaults"
            print(line)
        if "out=" in med and "defaults" in med:
            line = f"{'':11s}  out= {med['out=']:.3f} s: journal on/off {med['out='] / med['defaults']:.3f}x (target <= 1.10)"
            if "save at the end" in med:
                line += f"; {med['out='] / med['save at the end']:.3f}x saving the same files at the end"
            print(line)
            print(f"{'':11s}  runner with journal, tables at the end left out: {med['journal alone']:.3f} s = "
                  f"{med['journal alone'] / med['defaults']:.3f}x the runner alone (target <= 1.03); the tables "
                  f"at the end {med['out='] - med['journal alone']:.3f} s")
    print(f"{'':11s}  {_load(load).strip(' ;')}")
    if parts:
        total = statistics.median(parts.pop("save"))
        print(f"where out='s save at the end goes (median of {args.repeats * len(agents)} saves under cProfile, "
              f"{total:.3f} s in all):")
        for part, seconds in parts.items():
            share = statistics.median(seconds)
            print(f"  {part:<58} {share:7.3f} s  {share / total:6.1%}")

    if args.no_vertex or pause != 0.05 or "defaults" not in medians.get("sync agent", {}):
        return
    load = os.getloadavg()[0]
    vertex, reason = _vertex(cases, pause, max(1, min(args.repeats, 3)))
    if reason is not None:
        print(f"Vertex EvalTask: skipped: {reason}")
        return
    ours = medians["sync agent"]["defaults"]
    wall = statistics.median(v["wall"] for v in vertex)
    print(f"Vertex EvalTask (sync agent, its 100 threads; median of {len(vertex)}): evaluate {wall:.3f} s = "
          f"{wall / ideal:.3f}x ideal; levelfield / Vertex = {ours / wall:.3f} (target <= 0.95)")
    phases = [v["inference"] for v in vertex if v.get("inference") is not None]
    if phases:
        phase = statistics.median(phases)
        print(f"{'':16s}its agent-running phase alone {phase:.3f} s = {phase / ideal:.3f}x ideal; levelfield's whole "
              f"evaluate / that phase = {ours / phase:.3f}{_load(load)}")


@contextlib.contextmanager
def _cache_folder(path: str):  # type: ignore[no-untyped-def]
    before = os.environ.get("LEVELFIELD_CACHE_DIR")
    os.environ["LEVELFIELD_CACHE_DIR"] = path
    try:
        yield
    finally:
        if before is None:
            del os.environ["LEVELFIELD_CACHE_DIR"]
        else:
            os.environ["LEVELFIELD_CACHE_DIR"] = before


# The pieces of EvalResult.save, by the function that does each (cumulative seconds under cProfile).
SAVE_PARTS = {
    "save": ("result.py", "save"),
    "explanations (each run scored again for its explanation)": ("held.py", "_explained"),
    "the rows made ahead, the last of them made (TableAhead)": ("table_ahead.py", "made"),
    "the table's rows made from the explained scores": ("held.py", "table_rows"),
    "the tables written (metrics_table.csv and .parquet)": ("table_writer.py", "write_rows"),
    "the journal's final header (runs.jsonl)": ("record.py", "finish_journal"),
    "the summary computed": ("held.py", "summary"),
    "the summary written (summary.json)": ("tables.py", "write_summary"),
}


def _save_parts(profile: cProfile.Profile, parts: dict[str, list[float]]) -> None:
    stats = pstats.Stats(profile).stats  # {(file, line, function): (calls, primitive, tottime, cumtime, callers)}
    for label, (file, function) in SAVE_PARTS.items():
        seconds = sum(v[3] for (f, _, fn), v in stats.items() if f.endswith(file) and fn == function)
        parts.setdefault(label, []).append(seconds)


def _load(before: float) -> str:
    return f"; load average {before:.2f} -> {os.getloadavg()[0]:.2f}"


if __name__ == "__main__":
    main()
