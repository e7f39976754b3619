"""Describing a failed run: its error text and type, whatever the agent raised.

An agent may raise anything: a ``BaseException`` subclass, an exception whose ``__str__`` or
``__getattr__`` raises, a ``StopIteration`` that Python turned into ``RuntimeError``. These
helpers read what can be read and never raise.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import AdapterError, type_name, exception_text, message_of, raised_where

__all__ = ["describe_error", "exception_text", "raised_where", "is_transient", "message_of", "attribute", "cancelled_from_outside"]


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


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: those an adapter marks transient."""
    try:
        return bool(attribute(exc, "transient")) or attribute(exc, "error_type") == "transient"
    except Exception:  # noqa: BLE001 - a truth value that raises
        return False


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
