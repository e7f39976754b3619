"""Benchmark: the A2A edges that must stay bounded, measured as a careless or hostile peer would.

1. A server answering 100 MB to an ``A2AAgent(timeout=5)`` run: seconds until the run ends and
   the client's peak memory growth, with the default cap (32 MB) and with the cap off (``None``).
2. ``levelfield serve`` under many requests: the server process's resident memory after every
   block of requests (it should level off: finished tasks are evicted, histories are bounded).

Prints figures only. Run from the repository root: ``python bench/bench_a2a_edges.py``
(``--requests 20000`` for the long serve run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["echo_agent", "main"]

CHUNK = b"x" * (1 << 20)


def echo_agent(prompt: str) -> str:
    """The served agent: echoes the prompt."""
    return f"echo: {prompt}"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _big_answer_server(megabytes: int) -> tuple[str, threading.Thread]:
    """A raw HTTP server: the card, then a JSON-RPC answer of ``megabytes`` MB sent in 1 MB chunks."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict

    from levelfield.adapters.a2a.server import build_agent_card

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    card = json.dumps(agent_card_to_dict(build_agent_card("big", url, streaming=False))).encode()

    def handle(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while True:
                line = reader.readline()
                if not line:
                    return
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b""):
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                reader.read(length)
                try:
                    if line.startswith(b"GET"):
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                     + str(len(card)).encode() + b"\r\n\r\n" + card)
                        continue
                    head = b'{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"'
                    tail = b'"}]}}}'
                    body_length = len(head) + megabytes * len(CHUNK) + len(tail)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(body_length).encode() + b"\r\n\r\n" + head)
                    for _ in range(megabytes):
                        conn.sendall(CHUNK)
                    conn.sendall(tail)
                except OSError:
                    return

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return url, thread


def big_answer(megabytes: int, cap: int | None) -> None:
    import levelfield as lf
    from levelfield.adapters import A2AAgent

    url, _ = _big_answer_server(megabytes)
    dataset = lf.load_dataset([{"case_id": "c1", "prompt": "everything, please"}])
    before = _peak_mb()
    start = time.perf_counter()
    run = lf.evaluate(dataset, A2AAgent(url, timeout=5), metrics=[], progress=False, retries=0,
                      max_response_bytes=cap).runs[0]
    seconds = time.perf_counter() - start
    shown = "none" if cap is None else f"{cap >> 20} MB"
    print(f"{megabytes} MB answer, cap {shown:>6}: {seconds:5.2f} s, peak memory +{_peak_mb() - before:6.0f} MB, "
          f"{run.error_type or 'answered'} ({len(run.output.response) >> 20 if run.output else 0} MB kept)")


def serve_memory(requests: int, every: int) -> None:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "levelfield", "serve", "bench_a2a_edges:echo_agent", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench")])}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        proc.stdout.readline()
        # uvicorn logs every request to stdout: drain it, or the server blocks once the pipe is full.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        url = f"http://127.0.0.1:{port}/"

        def rss() -> float:
            with open(f"/proc/{proc.pid}/status") as status:
                return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024

        async def send_all() -> None:
            async with httpx.AsyncClient(timeout=30) as client:
                for _ in range(100):  # the server is still starting
                    try:
                        await client.get(f"{url}.well-known/agent-card.json")
                        break
                    except httpx.ConnectError:
                        await asyncio.sleep(0.1)
                print(f"serve: {0:6d} requests, server RSS {rss():6.0f} MB")
                for block in range(requests // every):
                    async def one(i: int) -> None:
                        message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": f"q{i}"}]}
                        await client.post(url, json={"jsonrpc": "2.0", "id": i, "method": "SendMessage",
                                                     "params": {"message": message}}, headers={"A2A-Version": "1.0"})

                    for start in range(0, every, 32):
                        await asyncio.gather(*(one(start + i) for i in range(32)))
                    print(f"serve: {(block + 1) * every:6d} requests, server RSS {rss():6.0f} MB")

        asyncio.run(send_all())
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--no-uncapped", action="store_true", help="skip the run with the cap off (it takes GBs)")
    args = parser.parse_args()
    big_answer(args.megabytes, 32 << 20)
    if not args.no_uncapped:
        big_answer(args.megabytes, None)
    serve_memory(args.requests, args.every)


if __name__ == "__main__":
    main()
