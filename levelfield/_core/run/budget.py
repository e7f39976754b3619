"""What the run in progress may spend, for adapters that talk to servers.

The runner sets two things around every attempt: the moment its timeout ends
(``RunConfig.timeout``) and the largest answer it may read (``RunConfig.max_response_bytes``).
An adapter reads them here instead of being handed the RunConfig: ``seconds_left()`` bounds a
wait a server asks for (``Retry-After``), ``max_response_bytes()`` caps what it reads. A worker
process of ``isolation="process"`` gets both with each request (``spending``).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

from ..data.config import DEFAULT_MAX_RESPONSE_BYTES

__all__ = [
    "Budget",
    "seconds_left",
    "max_response_bytes",
    "current",
    "spending",
    "set_deadline",
    "reset_deadline",
    "set_response_cap",
    "reset_response_cap",
    "absorbs_rate_limits",
    "set_absorbing",
    "reset_absorbing",
]

Budget = tuple[float | None, int | None]
"""(seconds left of the attempt or None, the response cap in bytes or None): what crosses to a worker."""

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("levelfield_attempt_deadline", default=None)
_response_cap: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "levelfield_max_response_bytes", default=DEFAULT_MAX_RESPONSE_BYTES
)


_absorbs: contextvars.ContextVar[bool] = contextvars.ContextVar("levelfield_absorbs_rate_limits", default=False)


def absorbs_rate_limits() -> bool:
    """Whether the caller adapts to rate limits itself (``RunConfig(adaptive=True)``): an adapter then
    raises ``RateLimitedError`` at the first 429 instead of waiting out ``Retry-After`` in the attempt."""
    return _absorbs.get()


def set_absorbing(absorbs: bool) -> contextvars.Token[bool]:
    """Say whether rate-limit answers are absorbed by the caller (the runner, once per evaluation)."""
    return _absorbs.set(absorbs)


def reset_absorbing(token: contextvars.Token[bool]) -> None:
    """Restore what ``set_absorbing`` replaced."""
    _absorbs.reset(token)


def seconds_left() -> float | None:
    """Seconds until the current attempt's timeout (``time.monotonic`` clock), or None without one."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def max_response_bytes() -> int | None:
    """The largest answer the current run may read, in bytes (None: no cap); the default outside a run."""
    return _response_cap.get()


def current() -> Budget:
    """This run's budget as it can be sent to another process."""
    return seconds_left(), max_response_bytes()


def set_deadline(seconds: float) -> contextvars.Token[float | None]:
    """Start an attempt's timeout of ``seconds`` (the runner); undo with ``reset_deadline(token)``."""
    return _deadline.set(time.monotonic() + seconds)


def reset_deadline(token: contextvars.Token[float | None]) -> None:
    """End the attempt started by ``set_deadline``."""
    _deadline.reset(token)


def set_response_cap(cap: int | None) -> contextvars.Token[int | None]:
    """Cap every answer read in this context (the runner, once per evaluation)."""
    return _response_cap.set(cap)


def reset_response_cap(token: contextvars.Token[int | None]) -> None:
    """Restore the cap ``set_response_cap`` replaced."""
    _response_cap.reset(token)


@contextlib.contextmanager
def spending(budget: Budget) -> Iterator[None]:
    """Run the block under ``budget`` (as ``current()`` gave it in another process)."""
    left, cap = budget
    cap_token = _response_cap.set(cap)
    deadline_token = _deadline.set(None if left is None else time.monotonic() + left)
    try:
        yield
    finally:
        _deadline.reset(deadline_token)
        _response_cap.reset(cap_token)
