"""One exception hierarchy for everything levelfield raises or records."""

from __future__ import annotations

__all__ = [
    "LevelfieldError",
    "DatasetError",
    "MetricError",
    "AdapterError",
    "AgentOutputError",
    "TransientAgentError",
    "MissingExtraError",
]


class LevelfieldError(Exception):
    """Base class of every error levelfield raises."""


class DatasetError(LevelfieldError, ValueError):
    """A dataset could not be read or a row is malformed; names the file, row and field."""


class MetricError(LevelfieldError, ValueError):
    """A metric is unknown, duplicated or misconfigured."""


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


class MissingExtraError(LevelfieldError, ImportError):
    """An adapter's framework package is not installed; names the extra to install."""

    def __init__(self, extra: str, package: str, what: str):
        super().__init__(
            f"{what} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'levelfield[{extra}]'"
        )
        self.extra = extra
        self.package = package
