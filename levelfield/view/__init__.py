"""``levelfield view``: a local web app to browse, filter and diff every run under some folders.

It reads what evaluations already write (the ``runs.jsonl`` run record of ``evaluate`` and
``compare``, the score tables of saved predictions) and serves, from this machine only by default:
the runs list, each run's report with its cases paged on the server, each case's transcripts step
by step beside the reference, and the diff of two runs (the cases whose score changed and whether
the change is significant). It needs Starlette and uvicorn: ``pip install 'levelfield[view]'``.

    levelfield view runs/                  # then open the address it prints
    lf.view.start(["runs/"])               # in a notebook or test: a server in a thread
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..core.errors import MissingExtraError

__all__ = ["create_app", "start", "serve", "ViewServer", "is_loopback"]


def _require() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("view", "starlette and uvicorn", "levelfield view") from exc


def create_app(roots: Sequence[str | Path], *, token: str | None = None, allowed_hosts: Sequence[str] | None = None,
               rescan: float = 1.0) -> Any:
    """The view's ASGI app over the runs under ``roots`` (see :func:`levelfield.view.app.create_app`)."""
    _require()
    from .app import create_app as build

    return build(roots, token=token, allowed_hosts=allowed_hosts, rescan=rescan)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def _address(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def _server(roots: Sequence[str | Path], host: str, port: int, token: str | None, log_level: str) -> tuple[Any, socket.socket, str]:
    _require()
    import uvicorn

    # Bound to this machine: answer only its own names. Bound wider: any name it is reached by.
    app = create_app(roots, token=token, allowed_hosts=None if is_loopback(host) else ["*"])
    sock = _bind(host, port)
    url = _address(host, sock.getsockname()[1])
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", timeout_graceful_shutdown=1)
    return uvicorn.Server(config), sock, url


class ViewServer:
    """A view served in a background thread; ``stop()`` (or leaving ``with``) shuts it down."""

    def __init__(self, server: Any, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        """The base address, with the port the system picked when asked for port 0."""

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ViewServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(roots: Sequence[str | Path], *, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> ViewServer:
    """Serve the view of the runs under ``roots`` in a background thread (notebooks, tests); port 0 picks a free port."""
    server, sock, url = _server(roots, host, port, token, "warning")

    def run() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"levelfield-view-{url}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the view at {url} did not start")
        time.sleep(0.01)
    return ViewServer(server, thread, url)


def serve(roots: Sequence[str | Path], *, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
    """Serve the view until interrupted, saying where, and warning when other machines can reach it."""
    missing = [str(r) for r in roots if not Path(r).exists()]
    if missing:
        from ..core.errors import ConfigError

        raise ConfigError(f"{', '.join(missing)}: no such folder; give the folders your runs are written to (--out DIR)")
    server, sock, url = _server(roots, host, port, token, "warning")
    if not is_loopback(host):
        guard = ("every request must bring the auth token" if token else
                 "with no --auth-token, anyone who can reach it reads every run and transcript: pass --auth-token")
        print(f"levelfield view: warning: listening on {host}, reachable from other machines; {guard}", file=sys.stderr)
    link = f"{url}/?{urlencode({'token': token})}" if token else f"{url}/"
    print(f"levelfield view: serving the runs under {', '.join(str(r) for r in roots)} at {link}", flush=True)
    print("levelfield view: new runs show up as they are written; Ctrl-C to stop", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
