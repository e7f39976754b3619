"""One exception hierarchy for everything levelfield raises or records.

Every error levelfield raises derives from :class:`LevelfieldError`; catch that to catch them all.
Errors about a bad argument also derive from ``ValueError`` (and, where a wrong *kind* of object
was passed, ``TypeError``), so code written against the built-in exceptions keeps working::

    LevelfieldError
    ├── ConfigError (ValueError)          a bad argument or option: evaluate(concurrency=0), ...
    │   ├── ConfigTypeError (TypeError)   the wrong kind of object: as_agent(42), ...
    │   └── AgentSpecError                "pkg.mod:attr" that cannot be imported, a bad URL, ...
    ├── DatasetError (ValueError)         a dataset file, row or field that cannot be read
    │   └── TraceError                    a trace whose spans are incomplete or unreadable
    ├── MetricError (ValueError)          an unknown, duplicated or misconfigured metric
    ├── RecordError                       a saved run (runs.jsonl, summary.json) that cannot be read or resumed
    │   └── WriteError (OSError)          a file of a run (journal, table, report) that cannot be written
    ├── MissingExtraError (ImportError)   an adapter's framework is not installed; names the extra
    ├── RegressionError                   compare(fail_if_worse=...): an agent is significantly worse than its baseline
    ├── ExecutorError                     where runs execute cannot run the rest (a Ray cluster with no worker left)
    └── AdapterError                      recorded on a failed run, not raised to the caller
        ├── AgentOutputError              the agent answered in a shape levelfield cannot read
        ├── TransientAgentError           worth retrying (connection refused, HTTP 429/503)
        │   └── RateLimitedError          the endpoint said "too many requests, retry after X" (HTTP 429/503)
        ├── WorkerError                   a run that failed in a worker process (isolation="process")
        └── ContainedBaseException        a SystemExit, KeyboardInterrupt or StopIteration from an agent's code
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "LevelfieldError",
    "LevelfieldWarning",
    "ConfigError",
    "ConfigTypeError",
    "AgentSpecError",
    "DatasetError",
    "MetricError",
    "RecordError",
    "WriteError",
    "AdapterError",
    "AgentOutputError",
    "TransientAgentError",
    "RateLimitedError",
    "MissingExtraError",
    "exception_text",
    "message_of",
    "raised_where",
    "type_name",
    "TraceError",
    "RegressionError",
    "ExecutorError",
    "WorkerError",
    "ContainedBaseException",
]


class LevelfieldError(Exception):
    """Base class of every error levelfield raises."""


class LevelfieldWarning(UserWarning):
    """Base of the warnings levelfield gives when a result could mislead."""


class ConfigError(LevelfieldError, ValueError):
    """A bad argument or option; the message names the option, the value and what is accepted."""


class ConfigTypeError(ConfigError, TypeError):
    """An argument of the wrong kind (not an agent, not a metric...); also a ``TypeError``."""


class AgentSpecError(ConfigError):
    """An agent spec (``pkg.mod:attr``, a URL, a resource name) could not be resolved."""


class DatasetError(LevelfieldError, ValueError):
    """A dataset could not be read or a row is malformed; names the file, row and field."""


class MetricError(LevelfieldError, ValueError):
    """A metric is unknown, duplicated or misconfigured."""


class RecordError(LevelfieldError):
    """A saved run record cannot be read, or does not match what it is resumed or loaded with."""


class WriteError(RecordError, OSError):
    """A file of a run (the journal, a table, the summary, the report) could not be written: a full
    disk, a read-only or missing folder. Names the path and the cause; ``errno`` is the cause's."""

    def __init__(self, path: object, cause: OSError, what: str = "cannot write") -> None:
        reason = cause.strerror or str(cause) or type(cause).__name__
        advice = ("free some space or write to another disk" if cause.errno in _FULL
                  else "choose a folder you can write to")
        self.message = f"{path}: {what} ({reason}); {advice}"
        super().__init__(self.message)
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, str(path)

    def __str__(self) -> str:  # OSError's own would print "[Errno 28] ..." without what was being written
        return self.message

    def __reduce__(self) -> tuple:  # picklable (a Ray worker's error) although __init__ takes the cause
        return (_write_error, (self.message, self.errno, self.strerror, self.filename))


_FULL = (28, 122)  # ENOSPC, EDQUOT (Linux): the disk or the user's quota is full


def _write_error(message: str, errno: int | None, strerror: str | None, filename: str) -> WriteError:
    error = WriteError(filename, OSError(errno, strerror))
    error.message = message
    return error


class AdapterError(LevelfieldError):
    """An agent run failed inside an adapter.

    ``error_type`` is what the run's ``error_type`` column shows; adapters set it to say
    which kind of failure it was (``"recursion_limit"``, ``"http_error"``, ...).
    ``partial`` may hold the part of the output gathered before the failure.
    """

    error_type: str | None = None

    def __init__(self, message: str, *, error_type: str | None = None, partial: object = None):
        super().__init__(message)
        if error_type is not None:
            self.error_type = error_type
        self.partial = partial


class AgentOutputError(AdapterError):
    """The agent answered, but not in a shape levelfield can read."""

    error_type = "bad_output"


class TransientAgentError(AdapterError):
    """A failure worth retrying (connection refused, HTTP 429/503, ...). The runner retries it."""

    error_type = "transient"
    transient = True


class RateLimitedError(TransientAgentError):
    """The endpoint refused the request for its rate limit (HTTP 429, or 503 with ``Retry-After``).

    Distinct from other transient errors: the runner's adaptive concurrency
    (``RunConfig(adaptive=True)``, the default) lowers the endpoint's
    concurrency, waits ``retry_after`` seconds (when the server said) and tries again without
    counting a failed attempt of the run.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, error_type: str | None = None,
                 partial: object = None) -> None:
        super().__init__(message, error_type=error_type, partial=partial)
        self.retry_after = retry_after
        """Seconds the endpoint asked the client to wait before trying again; None when it did not say."""


class MissingExtraError(LevelfieldError, ImportError):
    """An adapter's framework package is not installed; names the extra to install."""

    def __init__(self, extra: str, package: str, what: str):
        super().__init__(
            f"{what} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'levelfield[{extra}]'"
        )
        self.extra = extra
        self.package = package
        self.what = what

    def __reduce__(self) -> tuple:  # picklable (a worker's error): BaseException's own passes only the message
        return (type(self), (self.extra, self.package, self.what), self.__dict__)


# -- describing any exception (never raises: agents raise anything) --------------------------------


def type_name(exc: BaseException) -> str:
    """``type(exc).__name__``, never raising."""
    try:
        return type(exc).__name__
    except BaseException:  # noqa: BLE001
        return "BaseException"


def message_of(exc: BaseException) -> str:
    """``str(exc)``, or a note saying it could not be read (a ``__str__`` that raises)."""
    try:
        text = str(exc)
        if isinstance(text, str):
            return text
    except KeyboardInterrupt:
        raise
    except BaseException as inner:  # noqa: BLE001
        return f"(its message could not be read: str() raised {type_name(inner)})"
    return "(its message could not be read)"


def raised_where(exc: BaseException) -> str | None:
    """``"raised in bind_tools, chat_models.py:1234"``: the innermost frame of ``exc``'s traceback
    (where it was raised), or None without a traceback. Never raises."""
    try:
        tb = exc.__traceback__
        if tb is None:
            return None
        while tb.tb_next is not None:
            tb = tb.tb_next
        code = tb.tb_frame.f_code
        return f"raised in {code.co_name}, {os.path.basename(code.co_filename)}:{tb.tb_lineno}"
    except Exception:  # noqa: BLE001 - a description is a bonus, never a crash
        return None


def exception_text(exc: BaseException) -> str:
    """``Type: message``; for an exception without a message, its type and where it was raised:
    ``NotImplementedError (raised in bind_tools, chat_models.py:1234)``. Never raises."""
    name = type_name(exc)
    text = message_of(exc)
    if text.strip():
        return f"{name}: {text}"
    where = raised_where(exc)
    return f"{name} ({where})" if where else name
class TraceError(DatasetError):
    """A trace whose spans are incomplete or unreadable; the message names the trace and the span."""


class RegressionError(LevelfieldError):
    """``fail_if_worse``: an agent is significantly worse than its baseline; ``.gate`` and ``.comparison`` say how."""

    def __init__(self, gate: Any, comparison: Any) -> None:
        super().__init__(gate.message())
        self.gate = gate
        """The ``levelfield.gate.GateResult``: every tested change, and which are regressions."""
        self.comparison = comparison
        """The ``Comparison`` the gate judged."""

    def __reduce__(self) -> tuple:  # picklable: BaseException's own would call RegressionError(message)
        return (type(self), (self.gate, self.comparison), self.__dict__)


class ExecutorError(LevelfieldError):
    """The executor cannot run the rest of an evaluation (every Ray worker lost, none back in time).

    The runs that finished are in the journal (``out/runs.jsonl``): ``resume=True`` runs only the rest.
    """


class WorkerError(AdapterError):
    """A run that failed in a worker process: the agent's own error as the worker described it."""

    def __init__(self, message: str, *, error_type: str | None, partial: object = None, transient: bool = False):
        super().__init__(message, error_type=error_type, partial=partial)
        self.transient = transient


class ContainedBaseException(AdapterError):
    """A ``BaseException`` (SystemExit, KeyboardInterrupt, GeneratorExit...) or a ``StopIteration``
    raised by an agent's code in a worker thread (or a SystemExit in a framework's own task),
    carried as an ordinary exception.

    Left as it was, it would escape whatever task awaits it (asyncio re-raises SystemExit and
    KeyboardInterrupt out of the event loop; a future refuses StopIteration) and sink the
    evaluation. A KeyboardInterrupt in a worker thread is never the user's Ctrl-C (signals reach
    the main thread): it is the agent's. The run records the original type and message.
    """

    def __init__(self, original: BaseException, message: str = "") -> None:
        name = type(original).__name__
        super().__init__(f"{name}: {message or name}", error_type=name)
        self.original = original


def contained(exc: BaseException) -> BaseException:
    """``exc``, or a :class:`ContainedBaseException` carrying it if it is not safe to raise into a task
    (a ``BaseException`` such as ``SystemExit``, or a ``StopIteration`` a future refuses)."""
    if isinstance(exc, Exception) and not isinstance(exc, (StopIteration, StopAsyncIteration)):
        return exc
    wrapper = ContainedBaseException(exc, message_of(exc))
    wrapper.__cause__ = exc
    return wrapper
