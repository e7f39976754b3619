"""Benchmark: levelfield's A2A adapter against a plain a2a-sdk client loop on the same server.

A local A2A server (``levelfield serve``, in its own process) runs an agent that sleeps 20 ms.
Both sides send the same number of requests with the same concurrency, once with streaming on and
once with it off:

- plain: an a2a-sdk 1.x client and an ``asyncio.Semaphore``, reading every event of each answer;
- levelfield: ``lf.evaluate(dataset, A2AAgent(url, streaming=...), concurrency=...)`` (runner,
  retries, the turn's total timeout, output normalization, the results table).

Prints each side's wall time (median of the rounds), levelfield/plain (target <= 1.05) and
requests per second, per streaming mode. Run from the repository root: ``python bench/bench_a2a.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["sleepy_agent", "main"]

SLEEP_SECONDS = 0.020


async def sleepy_agent(prompt: str) -> str:
    """The benchmarked agent: waits 20 ms, then echoes."""
    await asyncio.sleep(SLEEP_SECONDS)
    return f"echo: {prompt}"


def _start_server(port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "levelfield", "serve", "bench.bench_a2a:sleepy_agent", "--port", str(port)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for(url: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/.well-known/agent-card.json", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no A2A server at {url} after {seconds} s")


async def _plain(url: str, requests: int, concurrency: int, streaming: bool) -> tuple[float, float]:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create_from_url(url)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                message = Message(
                    role=Role.ROLE_USER, message_id=uuid.uuid4().hex, context_id=f"c{i}", parts=[Part(text=f"case {i}")]
                )
                async for _ in client.send_message(SendMessageRequest(message=message)):
                    pass

        start, cpu = time.perf_counter(), time.process_time()
        outcomes = await asyncio.gather(*(one(i) for i in range(requests)), return_exceptions=True)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            print(f"  (plain loop: {len(errors)} of {requests} requests failed, e.g. {errors[0]!r})")
        return elapsed, cpu


def _levelfield(url: str, requests: int, concurrency: int, streaming: bool) -> tuple[float, float]:
    import levelfield as lf
    from levelfield._core.data.dataset import EvalCase, EvalDataset
    from levelfield.adapters import A2AAgent

    dataset = EvalDataset([EvalCase(case_id=f"c{i}", prompt=f"case {i}") for i in range(requests)])
    agent = A2AAgent(url, streaming=streaming, name="bench")
    start, cpu = time.perf_counter(), time.process_time()
    result = lf.evaluate(dataset, agent, metrics=[], concurrency=concurrency, progress=False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    failures = sum(r.failure for r in result.runs)
    if failures:
        raise RuntimeError(f"{failures} levelfield runs failed, e.g. {next(r.error for r in result.runs if r.failure)}")
    return elapsed, cpu


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=9931)
    args = parser.parse_args(argv)

    url = f"http://127.0.0.1:{args.port}"
    proc = _start_server(args.port)
    figures: dict[bool, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = {}
    try:
        _wait_for(url, proc)
        for streaming in (True, False):
            asyncio.run(_plain(url, args.concurrency, args.concurrency, streaming))  # warm up both paths
            _levelfield(url, args.concurrency, args.concurrency, streaming)
            plain, ours = [], []
            for _ in range(args.rounds):  # interleaved, so drift on the machine hits both alike
                plain.append(asyncio.run(_plain(url, args.requests, args.concurrency, streaming)))
                ours.append(_levelfield(url, args.requests, args.concurrency, streaming))
            figures[streaming] = (plain, ours)
    finally:
        proc.terminate()
        proc.wait(10)

    floor = args.requests / args.concurrency * SLEEP_SECONDS
    print(f"A2A benchmark: {args.requests} requests, concurrency {args.concurrency}, agent sleeps {SLEEP_SECONDS * 1000:.0f} ms")
    print(f"  (floor if the server were free: {floor:.2f} s); median of {args.rounds} rounds, JSON-RPC")
    print("  client CPU: this process's CPU time per request, what each client costs whatever the machine's load")
    for streaming, (plain, ours) in figures.items():
        p, o = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in ours)
        pc, oc = statistics.median(c for _, c in plain), statistics.median(c for _, c in ours)
        per = 1000 / args.requests
        print(f"  streaming {'on ' if streaming else 'off'}")
        print(f"    plain a2a-sdk client loop : {p:6.2f} s  {args.requests / p:7.1f} req/s  client CPU {pc * per:5.2f} ms/req   rounds: {', '.join(f'{w:.2f}' for w, _ in plain)}")
        print(f"    levelfield lf.evaluate    : {o:6.2f} s  {args.requests / o:7.1f} req/s  client CPU {oc * per:5.2f} ms/req   rounds: {', '.join(f'{w:.2f}' for w, _ in ours)}")
        print(f"    levelfield / plain        : {o / p:6.3f} wall (target <= 1.05), {oc / pc:5.2f} client CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
