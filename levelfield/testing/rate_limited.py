"""A rate-limited endpoint for offline tests and benchmarks: an ASGI app in front of another that
admits ``limit`` requests in flight and answers HTTP 429 above it, as a provider's gateway does.

Wrap any ASGI app (e.g. ``levelfield.adapters.a2a_server.build_app``) and serve it with
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
"""

from __future__ import annotations

from typing import Any

__all__ = ["ConcurrencyLimited"]


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
