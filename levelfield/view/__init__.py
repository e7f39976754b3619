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
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from .._core.errors import MissingExtraError
from .._serving import BackgroundServer, bind, is_loopback, run_in_thread, url_of

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


def _server(roots: Sequence[str | Path], host: str, port: int, token: str | None, log_level: str) -> tuple[Any, socket.socket, str]:
    _require()
    import uvicorn

    # Bound to this machine: answer only its own names. Bound wider: any name it is reached by.
    app = create_app(roots, token=token, allowed_hosts=None if is_loopback(host) else ["*"])
    sock = bind(host, port, backlog=128)
    url = url_of(host, sock.getsockname()[1])
    config = uvicorn.Config(app, log_level=log_level, lifespan="off", timeout_graceful_shutdown=1)
    return uvicorn.Server(config), sock, url


# One class for every background server levelfield starts; the view's name stays for callers.
ViewServer = BackgroundServer


def start(roots: Sequence[str | Path], *, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> ViewServer:
    """Serve the view of the runs under ``roots`` in a background thread (notebooks, tests); port 0 picks a free port."""
    server, sock, url = _server(roots, host, port, token, "warning")
    return run_in_thread(server, sock, url, what="view", poll=0.01)


def serve(roots: Sequence[str | Path], *, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
    """Serve the view until interrupted, saying where, and warning when other machines can reach it."""
    missing = [str(r) for r in roots if not Path(r).exists()]
    if missing:
        from .._core.errors import ConfigError

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
