"""One retry loop for every outside call (an agent's turn, a simulated user's turn, a judge's
answer), and one rule for which errors are worth trying again.

:func:`call_with_retries` makes a call until it answers, fails for good, or its retries are spent:
it takes the endpoint's slot from its limit (``levelfield._core.run.limits``) before each call,
lets the limit absorb rate-limit answers (waited out and sent again without spending a retry),
retries what the classifier calls transient after a jittered exponential backoff, and never
swallows the caller's own cancellation nor the user's Ctrl-C. It never raises for what the call
raised: a failure comes back in :class:`Tried`, and each caller records it its own way (a failed
run, a simulator failure, a judge reply with an error).

:func:`is_transient` is the one classifier. What an adapter marks transient is always retried;
whether a provider's "try again later" (HTTP 429/5xx, a provider SDK's rate-limit class) and a
bare timeout or dropped connection are too is the caller's policy, said by its flags: an agent's
adapter knows its framework and marks what is worth retrying (a bare ``TimeoutError`` from an
agent is its run's timeout, not retried), a simulated user calls a chat model (its provider's
errors retried, not the run's timeout), a judge retries all three.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .failures import attribute, cancelled_from_outside
from .interrupts import user_interrupted

if TYPE_CHECKING:
    from .limits import EndpointLimit

__all__ = ["call_with_retries", "Tried", "is_transient", "backoff_delay", "BACKOFF_CAP"]

T = TypeVar("T")

BACKOFF_CAP = 60.0
"""Seconds a backoff may reach at the most, however many retries came before."""

# Exception class names that mean "try again later" across the common provider SDKs
# (openai, anthropic, google.api_core, httpx); matched by name so that none is imported.
_PROVIDER_NAMES = frozenset(
    {
        "RateLimitError",
        "APIConnectionError",
        "APITimeoutError",
        "InternalServerError",
        "OverloadedError",
        "ServiceUnavailable",
        "ServiceUnavailableError",
        "ResourceExhausted",
        "DeadlineExceeded",
        "TooManyRequests",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "RemoteProtocolError",
    }
)
_PROVIDER_STATUS = frozenset({408, 409, 425, 429})  # and every 5xx


def _marked(exc: BaseException) -> bool:
    # Read safely: an agent's exception may have a __getattr__ or a truth value that raises.
    try:
        return bool(attribute(exc, "transient")) or attribute(exc, "error_type") == "transient"
    except Exception:  # noqa: BLE001 - a truth value that raises
        return False


def _http_status(exc: BaseException) -> Any:
    status = attribute(exc, "status_code")
    if status is None:
        status = attribute(exc, "code")  # google-genai's APIError, urllib's HTTPError
    if status is None:
        status = attribute(attribute(exc, "response"), "status_code")
    return status


def is_transient(exc: BaseException, *, provider_errors: bool = False, timeouts: bool = False) -> bool:
    """Whether a call that raised ``exc`` is worth trying again. Never raises.

    Args:
        exc: what the call raised.
        provider_errors: also a provider's "try again later": HTTP 408/409/425/429 or 5xx (the
            error's ``status_code``, ``code`` or ``response.status_code``), or a provider SDK's
            class for it (``RateLimitError``, ``APIConnectionError``, ``ServiceUnavailable``...).
        timeouts: also a bare ``TimeoutError`` or ``ConnectionError``.

    An error its adapter marks (``transient = True`` or ``error_type == "transient"``, e.g.
    ``TransientAgentError``) is always transient; any other ``BaseException`` that is not an
    ``Exception`` (``SystemExit``, ``CancelledError``...) never is.
    """
    if _marked(exc):
        return True
    if not isinstance(exc, Exception):
        return False
    if timeouts and isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    if not provider_errors:
        return False
    status = _http_status(exc)
    if isinstance(status, int) and (status in _PROVIDER_STATUS or 500 <= status < 600):
        return True
    return any(cls.__name__ in _PROVIDER_NAMES for cls in type(exc).__mro__)


def backoff_delay(retry: int, base: float, cap: float | None = BACKOFF_CAP,
                  rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first): "full jitter", uniform in
    [0, min(cap, base * 2 ** (retry - 1))), so calls that failed together do not retry together."""
    ceiling = base * 2.0 ** (retry - 1)
    if cap is not None:
        ceiling = min(ceiling, cap)
    return ceiling * rng()


@dataclass(slots=True)
class Tried(Generic[T]):
    """How a call with retries ended: its value, or the error it failed with for good."""

    value: T | None
    """What the call returned; None when it failed."""
    error: BaseException | None
    """What the last call raised; None when it answered."""
    attempts: int
    """Calls made, retries included and rate-limit answers the limit absorbed left out."""
    calls: int
    """Every call made, absorbed ones included (what the endpoint was asked)."""
    latency: float
    """Seconds the last call took."""
    total: float
    """Seconds every call took together (waits on the limit and backoffs left out)."""


def _no_tokens(value: Any) -> None:
    return None


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff: float,
    cap: float | None = BACKOFF_CAP,
    transient: Callable[[BaseException], bool] = is_transient,
    limit: EndpointLimit | None = None,
    timeout: float | None = None,
    tokens: Callable[[T], float | None] = _no_tokens,
    on_wait: Callable[[float, bool], None] | None = None,
    rng: Callable[[], float] = random.random,
) -> Tried[T]:
    """``call()`` awaited until it answers, fails with an error not worth retrying, or has failed
    ``retries`` times more; never raises what the call raised (it is :attr:`Tried.error`).

    Args:
        call: makes one call (a new awaitable each time), its own timeout included.
        retries: how many times a transient failure is tried again.
        backoff: seconds before the first retry; each later one's doubles, up to ``cap``, and the
            wait is drawn uniformly below that (:func:`backoff_delay`, with ``rng``).
        transient: which failures are retried (:func:`is_transient` with the caller's flags).
        limit: the endpoint's limit: a slot is taken before each call and given back with how the
            call ended; a rate-limit answer it absorbs is waited out and sent again without
            counting as an attempt.
        timeout: the caller's seconds per call, for the limit: a rate limit asking to wait longer
            is not absorbed.
        tokens: the tokens an answer spent, for the limit's ``tokens_per_minute``.
        on_wait: told every wait on the limit: the seconds, and whether it waited out an absorbed
            rate-limit answer (else: for a slot).

    Cancelling the caller stops it at once, in a call, a wait for a slot or a backoff. A
    ``CancelledError`` the call raised itself (the caller not being cancelled) is a failure, as is
    a ``KeyboardInterrupt`` that is not the user's Ctrl-C (which is raised).
    """
    attempts = calls = absorbed = 0
    total = 0.0
    clock = time.perf_counter
    while True:
        attempts += 1
        calls += 1
        if limit is not None:
            waited = await limit.acquire()
            if on_wait is not None:
                on_wait(waited, False)
        start = clock()
        try:
            value = await call()
        except asyncio.CancelledError as exc:
            if limit is not None:
                limit.failed()
            if cancelled_from_outside():
                raise
            error: BaseException = exc
        except KeyboardInterrupt as exc:
            if limit is not None:
                limit.failed()
            if user_interrupted():
                raise  # the user's Ctrl-C on this thread: it stops the evaluation
            error = exc  # raised by the called code: a failure
        except BaseException as exc:  # noqa: BLE001 - every other failure is returned, never raised
            error = exc
            wait = None if limit is None else limit.ended_with(exc, absorbed, timeout)
            if wait is not None:
                # Absorbed: not a failed attempt. The limit fell; wait what the endpoint asked, try again.
                total += clock() - start
                absorbed += 1
                attempts -= 1
                if on_wait is not None:
                    on_wait(wait, True)
                if wait > 0:  # none: sent again at once, in the slot the limit kept for it
                    await asyncio.sleep(wait)
                continue
        else:
            took = clock() - start
            if limit is not None:
                limit.success(tokens(value))
            return Tried(value, None, attempts, calls, took, total + took)
        took = clock() - start
        total += took
        if attempts <= retries and transient(error):
            await asyncio.sleep(backoff_delay(attempts, backoff, cap, rng))
            continue
        return Tried(None, error, attempts, calls, took, total)
