"""A levelfield A2A server behind a gate admitting a few calls in flight, in a process of its own, as a
proxy in front of an agent is: the evaluation's event loop then shares no interpreter lock with the server.

A light module (no pytest): the spawned process imports it to find its target.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from typing import Any

__all__ = ["GateProcess"]

DELAY = 0.05
"""Seconds the agent behind the gate takes to answer."""


async def _echo(prompt: str) -> str:
    await asyncio.sleep(DELAY)
    return f"echo {prompt}"


def _serve(conn: Any, kind: str, limit: int) -> None:
    from levelfield.adapters.a2a.server import build_app, start_asgi
    from levelfield.testing import ConcurrencyLimited, QueuedAhead

    made: list[Any] = []

    def make(url: str) -> Any:
        gate = {"plain": ConcurrencyLimited, "queued": QueuedAhead}[kind]
        made.append(gate(build_app(_echo, url=url, name="limited"), limit))
        return made[0]

    with start_asgi(make) as server:
        conn.send(server.url)
        conn.recv()  # told to stop
        conn.send((made[0].admitted, made[0].refused, made[0].peak))


class GateProcess:
    """``with GateProcess("plain") as gate:`` the server's ``gate.url``; ``gate.counts()`` stops it and gives
    what its gate admitted and refused, and the most calls it held at once. ``kind``: ``"plain"``
    (``ConcurrencyLimited``) or ``"queued"`` (``QueuedAhead``: a slow intake ahead of the gate)."""

    def __init__(self, kind: str, limit: int = 8) -> None:
        context = multiprocessing.get_context("spawn")
        self._here, there = context.Pipe()
        self._process = context.Process(target=_serve, args=(there, kind, limit), daemon=True)
        self.url = ""

    def __enter__(self) -> GateProcess:
        self._process.start()
        if not self._here.poll(120):
            self._process.kill()
            raise RuntimeError("the gate's server process did not start within 120 s")
        self.url = self._here.recv()
        return self

    def counts(self) -> tuple[int, int, int]:
        self._here.send("stop")
        if not self._here.poll(30):
            raise RuntimeError("the gate's server process did not answer within 30 s")
        return self._here.recv()

    def __exit__(self, *exc: Any) -> None:
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._here.close()
