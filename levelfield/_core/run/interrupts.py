"""Telling the user's Ctrl-C from a ``KeyboardInterrupt`` an agent raises.

Both arrive as ``KeyboardInterrupt`` on the event loop's thread, but only the first must stop the
evaluation; the second is one failed run, like any other error an agent raises. While runs are
in flight (:func:`watching`), a SIGINT handler installed over the current one counts the signals
the process receives and then does what the handler it replaced did (``asyncio.run`` cancels the
evaluation, the default raises ``KeyboardInterrupt``). A ``KeyboardInterrupt`` seen while no
SIGINT arrived since the runs started was raised by code, not by the user.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["watching", "user_interrupted"]

_received = 0  # SIGINTs received while a watch was installed
_watchers = 0
_replaced: Any = None
_since: contextvars.ContextVar[int | None] = contextvars.ContextVar("levelfield_sigints_since", default=None)


def _count(signum: int, frame: Any) -> None:
    global _received
    _received += 1
    previous = _replaced
    if callable(previous):
        previous(signum, frame)
    else:  # the handler was replaced meanwhile by SIG_DFL/SIG_IGN: Ctrl-C still interrupts
        raise KeyboardInterrupt


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """Count the SIGINTs received from here on (main thread only: signals are delivered there;
    elsewhere no SIGINT can raise on this thread, so every ``KeyboardInterrupt`` is code's)."""
    global _watchers, _replaced
    installed = False
    if threading.current_thread() is threading.main_thread():
        current = signal.getsignal(signal.SIGINT)
        if current is _count or callable(current):  # SIG_IGN/SIG_DFL raise no KeyboardInterrupt
            if _watchers == 0 and current is not _count:
                _replaced = current
                signal.signal(signal.SIGINT, _count)
            _watchers += 1
            installed = True
    token = _since.set(_received)
    try:
        yield
    finally:
        _since.reset(token)
        if installed:
            _watchers -= 1
            if _watchers == 0 and signal.getsignal(signal.SIGINT) is _count:
                signal.signal(signal.SIGINT, _replaced)


def user_interrupted() -> bool:
    """Whether a ``KeyboardInterrupt`` seen now may be the user's: a SIGINT arrived since the runs
    started, or no watch is in place (outside the runner nothing can be told apart)."""
    since = _since.get()
    return since is None or _received > since
