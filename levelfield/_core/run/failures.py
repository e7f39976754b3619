"""Describing a failed run: its error text and type, whatever the agent raised.

An agent may raise anything: a ``BaseException`` subclass, an exception whose ``__str__`` or
``__getattr__`` raises, a ``StopIteration`` that Python turned into ``RuntimeError``. These
helpers read what can be read and never raise.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any

from ..errors import AdapterError, RateLimitedError, exception_text, message_of, raised_where, type_name

__all__ = ["describe_error", "exception_text", "raised_where", "message_of", "attribute",
           "cancelled_from_outside", "RateLimit", "rate_limit_of", "parse_retry_after"]


def cancelled_from_outside() -> bool:
    """Whether a CancelledError comes from cancelling the caller (the evaluation, a served request),
    not one the agent raised itself."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    # Python 3.10 cannot tell the two apart: the agent's own is assumed (cancelling the evaluation
    # also cancels the runs waiting for a slot, which stops it).
    return bool(cancelling is not None and cancelling())


def attribute(exc: BaseException, name: str) -> Any:
    """``getattr(exc, name, None)``, None if reading it raises."""
    try:
        return getattr(exc, name, None)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - an exception with a hostile __getattr__
        return None


@dataclass(frozen=True)
class RateLimit:
    """An endpoint's "too many requests": what an error says about the wait it asked for."""

    retry_after: float | None = None
    """Seconds the endpoint asked to wait (``Retry-After``); None when it did not say."""


# Provider SDK exception names that mean "rate limited" (openai, anthropic, google.api_core, ...),
# matched by name so that none is imported; plus any name containing "RateLimit".
_RATE_LIMIT_NAMES = frozenset({"ResourceExhausted", "TooManyRequests", "TooManyRequestsError", "OverloadedError"})
_RATE_LIMIT_STATUS = (429, 503, 529)  # 529: Anthropic's "overloaded"


def parse_retry_after(value: Any) -> float | None:
    """A ``Retry-After`` header's value (seconds, or an HTTP date) as seconds from now; None if unreadable."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        seconds = float(text)
        return seconds if seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _status(exc: BaseException) -> Any:
    status = attribute(exc, "status_code")
    if status is None:
        status = attribute(exc, "status")
    if status is None:
        status = attribute(attribute(exc, "response"), "status_code")
    return status


def _header_wait(exc: BaseException) -> float | None:
    headers = attribute(attribute(exc, "response"), "headers")
    try:
        return parse_retry_after(headers.get("retry-after")) if headers is not None else None
    except Exception:  # noqa: BLE001 - headers of an unknown shape
        return None


def rate_limit_of(exc: BaseException) -> RateLimit | None:
    """The rate limit ``exc`` reports, or None: a :class:`RateLimitedError`, or (from any framework) an
    error with HTTP status 429/503/529 or whose class name says so (``RateLimitError``,
    ``ResourceExhausted``...), anywhere in its chain of causes. An adapter's error other than
    ``RateLimitedError`` is its verdict and is not looked behind. Never raises."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and not any(current is s for s in seen) and len(seen) < 16:
        seen.append(current)
        if isinstance(current, RateLimitedError):
            wait = current.retry_after
            return RateLimit(float(wait) if isinstance(wait, (int, float)) else None)
        if isinstance(current, AdapterError):
            return None  # an adapter's own verdict (e.g. a wait longer than the run's timeout) stands
        status = _status(current)
        names = [type_name(current)] + [getattr(c, "__name__", "") for c in type(current).__mro__[1:]]
        if (isinstance(status, int) and not isinstance(status, bool) and status in _RATE_LIMIT_STATUS) or any(
            "RateLimit" in n or n in _RATE_LIMIT_NAMES for n in names
        ):
            return RateLimit(_header_wait(current))
        current = attribute(current, "__cause__") or attribute(current, "__context__")
    return None


def _origin(exc: BaseException) -> BaseException:
    # PEP 479 turns a StopIteration leaving a coroutine into RuntimeError; report what was raised.
    cause = exc.__cause__
    if type(exc) is RuntimeError and isinstance(cause, (StopIteration, StopAsyncIteration)):
        return cause
    return exc


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(error text, error type) for a failed run; never raises, whatever ``exc`` is.

    An exception without a message (``raise NotImplementedError``) is described by its type and
    where it was raised, ``NotImplementedError (raised in bind_tools, chat_models.py:1234)``:
    the type alone does not say which call an agent's framework could not make.
    """
    exc = _origin(exc)
    text = message_of(exc)
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not text:
        return "timed out", "timeout"
    name = type_name(exc)
    error_type = attribute(exc, "error_type")
    if not isinstance(error_type, str) or not error_type:
        error_type = name
    if isinstance(exc, AdapterError) and text.strip():
        return text, error_type
    return exception_text(exc), error_type
