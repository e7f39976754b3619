"""A fresh Python session for the snippets of one docs page, as a reader pastes them into one.

Started by tests/docs/test_docs_snippets.py as ``python _snippet_runner.py ROOT WORKDIR``: it reads one
JSON request a line on stdin (``{"code": ..., "where": "docs/x.md:12", "module": "snippets_x"}``), runs the code in the
page's one namespace and answers one JSON line (``{"ok": true, "stdout": ...}``, or ``"error"``: the
traceback) on the stdout it started with. Whatever the snippets print, they or the processes they
start, goes to stderr (their own ``print`` is captured into the answer too), so the answers cannot mix
with it. Connections to anything but this machine are refused: "offline" is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
import socket
import sys
import traceback
import warnings


def _loopback(address: object) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):
        return True  # a Unix socket
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _offline() -> None:
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise ConnectionRefusedError(f"docs snippets run offline; refused a connection to {address}")
        return connect(self, address)

    socket.socket.connect = guarded  # type: ignore[method-assign]


def main() -> None:
    root, workdir = sys.argv[1], sys.argv[2]
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # everything else printed, by a snippet or a process it starts, goes to stderr
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
    sys.path[0:1] = ["", root]  # as `python` started in the reader's checkout: its folder, then the repository
    os.chdir(workdir)
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{os.path.join(workdir, 'mlflow.db')}"
    _offline()
    warnings.simplefilter("ignore")
    namespace: dict = {}
    for line in sys.stdin:
        request = json.loads(line)
        namespace.setdefault("__name__", request["module"])
        printed = io.StringIO()
        answer: dict = {"ok": True}
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(request["code"], request["where"], "exec"), namespace)  # noqa: S102 - our own docs
        except BaseException:  # noqa: BLE001 - a SystemExit too is the snippet's failure, reported
            answer = {"ok": False, "error": traceback.format_exc()}
        answer["stdout"] = printed.getvalue()
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
