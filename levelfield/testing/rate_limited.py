"""A rate-limited endpoint for offline tests and benchmarks: an ASGI app in front of another that
admits ``limit`` requests in flight and answers HTTP 429 above it, as a provider's gateway does.

Wrap any ASGI app (e.g. ``levelfield.adapters.a2a.server.build_app``) and serve it with
``start_asgi``::

    limited = None

    def make(url):
        global limited
        limited = ConcurrencyLimited(build_app(agent, url=url), limit=8, retry_after=1)
        return limited

    with start_asgi(make) as server:
        lf.evaluate(ds, server.url, concurrency=64)
    print(limited.admitted, limited.refused, limited.peak)

Only POST requests (the calls) count; the agent card and other GETs pass through.

``FirstCallRefused`` is the other kind of 429: it refuses each request's first call, whatever is
in flight (a per-request check such as a cache warming or an idempotency gate), and admits the
request when it comes again. A refusal there says nothing about capacity.

``QueuedAhead`` is a gate with a slow intake in front of it: its first requests pass one at a time,
each taking ``intake`` seconds, before they reach the gate, as a server whose accepting thread is
short of CPU queues requests ahead of its limit; then the intake opens and the queue rushes the gate.
While it is slow no refusal comes back however many calls are sent: only the answers' growing
latency tells a client that its calls are queueing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .._serving import replay_body

__all__ = ["ConcurrencyLimited", "FirstCallRefused", "QueuedAhead"]


class ConcurrencyLimited:
    """An ASGI app that admits ``limit`` POST requests in flight to ``app`` and answers 429 above it,
    with ``Retry-After: retry_after`` when given. Counts what it admitted and refused."""

    def __init__(self, app: Any, limit: int, *, retry_after: float | None = None) -> None:
        self.app = app
        self.limit = limit
        self.retry_after = retry_after
        self.in_flight = 0
        self.admitted = 0
        """POST requests let through."""
        self.refused = 0
        """POST requests answered with 429."""
        self.peak = 0
        """The most requests in flight at once (never above ``limit``)."""
        self.state = getattr(app, "state", None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            self.refused += 1
            await self._too_many(send)
            return
        self.in_flight += 1
        self.admitted += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _too_many(self, send: Any) -> None:
        body = b'{"error": "too many requests in flight"}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if self.retry_after is not None:
            headers.append((b"retry-after", f"{self.retry_after:g}".encode()))
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _texts(value: Any) -> list[str]:
    """Every ``"text"`` string in a JSON value, in order (an A2A message's text parts)."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in ([v] if k == "text" and isinstance(v, str) else _texts(v))]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


class FirstCallRefused(ConcurrencyLimited):
    """An ASGI app that answers 429 to the first POST of each request (known by the text it carries,
    so a retry is the same request) and passes it through when it comes again. No limit in flight."""

    def __init__(self, app: Any, *, retry_after: float | None = None) -> None:
        super().__init__(app, 1 << 30, retry_after=retry_after)
        self.seen: set[str] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            key = "\n".join(_texts(json.loads(body)))
        except ValueError:
            key = body.decode("utf-8", "replace")
        if key not in self.seen:
            self.seen.add(key)
            self.refused += 1
            await self._too_many(send)
            return
        self.in_flight += 1
        self.admitted += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.app(scope, replay_body(body, receive), send)
        finally:
            self.in_flight -= 1


class QueuedAhead(ConcurrencyLimited):
    """``ConcurrencyLimited`` behind a slow intake: the first ``slow_for`` POST requests queue and pass one at
    a time, ``intake`` seconds each, then every request queued passes at once (the queue rushes the gate)."""

    def __init__(self, app: Any, limit: int, *, intake: float = 0.008, slow_for: int = 100,
                 retry_after: float | None = None) -> None:
        super().__init__(app, limit, retry_after=retry_after)
        self.intake = intake
        self.slow_for = slow_for
        self.taken = 0
        """POST requests through the intake so far."""
        self._lock: asyncio.Lock | None = None  # made in the server's own event loop

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "POST" and self.taken < self.slow_for:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self.taken < self.slow_for:
                    self.taken += 1
                    await asyncio.sleep(self.intake)
        await super().__call__(scope, receive, send)
