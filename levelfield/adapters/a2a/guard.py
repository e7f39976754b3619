"""The HTTP guard in front of a served agent: the bearer token, the request body cap, and the
JSON-RPC answers a2a-sdk does not give (-32700 for any unreadable body, silence for notifications)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..._serving import replay_body

__all__: list[str] = []  # private to the server: _Guard

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""Where clients read the card: public even with a token, so they learn how to authenticate."""

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


class _Guard:
    """ASGI middleware in front of a2a-sdk's routes: the bearer token, the body size limit, and the
    JSON-RPC answers a2a-sdk does not give (-32700 for any unreadable body, silence for notifications)."""

    def __init__(self, app: ASGIApp, *, max_body: int, token: str | None, rpc_path: str = "/") -> None:
        self.app = app
        self.max_body = max_body
        self.token = token.encode() if token else None
        self.rpc_path = rpc_path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rpc = scope["path"] == self.rpc_path and scope["method"] == "POST"
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if self.token is not None and scope["path"] not in CARD_PATHS and not self._authorized(headers):
            await _reply(send, 401, _error_body(rpc, -32600, "unauthorized: send 'Authorization: Bearer <token>'"),
                         [(b"www-authenticate", b'Bearer realm="levelfield"')])
            return
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        announced = headers.get("content-length", b"")
        if announced.isdigit() and int(announced) > self.max_body:
            await self._too_large(send, rpc)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await self._too_large(send, rpc)
                return
            if not message.get("more_body"):
                break
        if rpc:
            try:
                payload = json.loads(bytes(body))
            except ValueError as exc:  # not JSON, or not UTF-8/16/32 text at all
                reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not valid JSON"
                await _reply(send, 200, _error_body(True, -32700, f"Parse error: the request body is {reason}"))
                return
            if isinstance(payload, dict) and "id" not in payload and "method" in payload:
                # A JSON-RPC notification is never answered; every A2A method expects an answer, so none is run.
                await _reply(send, 204, b"")
                return
        await self.app(scope, replay_body(bytes(body), receive), send)

    def _authorized(self, headers: dict[str, bytes]) -> bool:
        scheme, _, given = headers.get("authorization", b"").partition(b" ")
        # compare_digest: the time taken does not tell how much of the token was right.
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token or b"")

    async def _too_large(self, send: Any, rpc: bool) -> None:
        text = f"the request body is larger than {self.max_body} bytes (levelfield serve --max-body)"
        await _reply(send, 413, _error_body(rpc, -32600, text))


def _error_body(rpc: bool, code: int, message: str) -> bytes:
    if rpc:
        return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    return json.dumps({"error": {"message": message}}).encode()


async def _reply(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    if status == 204:
        head = []
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})
