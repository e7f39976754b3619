"""Serving an ASGI app with uvicorn on a socket levelfield binds itself (``levelfield serve``, ``view``).

Binding first tells the caller the real port when asked for port 0, before anything is served. Below
the adapters; imports no framework (uvicorn is the caller's extra, imported by the caller).
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from typing import Any

__all__ = ["bind", "url_of", "is_loopback", "check_token", "BackgroundServer", "run_in_thread", "replay_body"]


def replay_body(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that gives a request body already read, then waits on the client as before
    (so a disconnect still arrives): for middleware that must read the body before passing it on."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def bind(host: str, port: int, *, backlog: int = 2048) -> socket.socket:
    """A listening TCP socket on ``host:port``; an error names the address and the reason."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY only then
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(backlog)
    return sock


def check_token(token: str, option: str = "--auth-token") -> None:
    """Refuse a bearer token that is too short to guard anything or cannot travel in a header and a
    cookie as it is (``levelfield view`` and ``watch`` share this rule); ``option`` names it in the error."""
    from ._core.errors import ConfigError

    if not isinstance(token, str) or not re.fullmatch(r"[A-Za-z0-9._~+/=!#$%&*^`|-]{8,}", token):
        raise ConfigError(
            f"{option}: give at least 8 characters of letters, digits and .-_~+/= (it travels in an "
            "Authorization header and a cookie, which carry no spaces, quotes or non-ASCII letters); "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe())'"
        )


def url_of(host: str, port: int) -> str:
    """The base URL a client on this machine reaches ``host:port`` at (wildcards become loopback)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


class BackgroundServer:
    """A server running in a background thread; ``stop()`` (or leaving ``with``) shuts it down."""

    def __init__(self, server: Any, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        """The base URL, with the port the system picked when asked for port 0."""

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_in_thread(server: Any, sock: socket.socket, url: str, *, what: str, poll: float = 0.005) -> BackgroundServer:
    """Run the uvicorn ``server`` on ``sock`` in a daemon thread and return once it accepts
    connections (within 10 s, else RuntimeError naming ``what`` and ``url``)."""

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"levelfield-{what}-{url}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the {what} at {url} did not start")
        time.sleep(poll)
    return BackgroundServer(server, thread, url)
