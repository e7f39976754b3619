"""What Ctrl-C and SIGTERM do to a command that runs agents: SIGTERM stops it as Ctrl-C does, and
the note printed says what was kept and the command that resumes."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["RUNS_AGENTS", "terminate_as_interrupt", "interrupted_note"]


RUNS_AGENTS = ("eval", "compare", "demo")
"""The commands SIGTERM stops as Ctrl-C does (the others keep their own handling, or Python's)."""


@contextlib.contextmanager
def terminate_as_interrupt(terminated: list[int], active: bool) -> Iterator[None]:
    """While ``active``, SIGTERM does what Ctrl-C does (the runs that finished stay journaled, those in
    flight are left for ``--resume``, the command that resumes is printed) and is noted in ``terminated``,
    so the exit code can be 143 rather than 130. A service manager, ``timeout`` or ``docker stop`` sends
    SIGTERM, and by default it would end the process without a word."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_terminate(signum: int, frame: Any) -> None:
        terminated.append(signum)
        # Whatever answers Ctrl-C now (asyncio.run cancelling the evaluation, the runner's counter of
        # the user's interrupts, Python's default) answers this signal too.
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_note(args: argparse.Namespace, argv: Sequence[str], how: str = "interrupted") -> str:
    """What Ctrl-C (or SIGTERM, ``how``) left: the runs kept in the journal, and the command that resumes."""
    import shlex

    out = getattr(args, "out", None)
    if not out or args.command == "demo":
        return f"levelfield {args.command}: {how}; nothing was saved (give --out DIR to journal runs as they finish)"
    from .._core.errors import LevelfieldError
    from .._core.results.record import read_record

    try:
        record = read_record(out)
        kept = f"{len(record.runs)} of {len(record.expected_keys())} runs are saved in {record.path}"
    except LevelfieldError:
        kept = f"no run had finished; nothing is saved in {out}"
    from ..adapters.a2a.secrets import hide_url_credentials  # light: a2a-sdk is imported only by A2AAgent

    again = [a for a in argv if a != "--overwrite"]
    if "--resume" not in again:
        again.append("--resume")
    command = shlex.join(again)
    shown = hide_url_credentials(command)
    hidden = "" if shown == command else " (with the URL credentials shown as *** put back)"
    return f"levelfield {args.command}: {how}; {kept}. Resume with{hidden}:\n  levelfield {shown}"
