"""A failed run's traceback, as the run record keeps it: the agent's own frames (and those of the
exceptions it was raised from), bounded, credentials redacted.

The record is shared and kept, so what could carry a credential is replaced by ``***`` as the A2A
adapter does for what a server echoes: the values of this process's environment variables named
like credentials (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``...) and whatever the agent
itself redacts (``agent.redact(text)``, e.g. an A2A agent's headers and URL credentials).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable

__all__ = ["MAX_TRACEBACK_CHARS", "traceback_text", "redact", "print_first_failure"]

MAX_TRACEBACK_CHARS = 12_000
"""The most of a traceback a run keeps: its end (the innermost frames and the error), the start cut."""

_CREDENTIAL_ENV = re.compile(r"key|token|secret|passw|pwd|credential|auth|cookie|signature", re.IGNORECASE)
_MIN_SECRET = 6  # shorter values ("1", "true") are settings, not secrets, and would redact everything
_REDACTED = "***"


def _environment_secrets() -> list[str]:
    # A path (PWD, XAUTHORITY, SSH_AUTH_SOCK) is no secret, and redacting it would blank the traceback's files.
    found = {v for k, v in os.environ.items()
             if _CREDENTIAL_ENV.search(k) and len(v) >= _MIN_SECRET and not os.path.isabs(v) and not os.path.exists(v)}
    return sorted(found, key=len, reverse=True)  # longest first: a token inside a value goes too


def redact(text: str, agent_redact: Callable[[str], str] | None = None) -> str:
    """``text`` with credential values replaced by ``***`` (see the module's docstring)."""
    for secret in _environment_secrets():
        text = text.replace(secret, _REDACTED)
    if agent_redact is not None:
        try:
            text = agent_redact(text)
        except Exception:  # noqa: BLE001 - a redactor that fails leaves what the environment's did
            pass
    return text


def traceback_text(exc: BaseException, agent_redact: Callable[[str], str] | None = None) -> str | None:
    """The traceback of ``exc`` with its causes and context (a framework's error wrapping the agent's),
    at most ``MAX_TRACEBACK_CHARS`` (the end kept), redacted; None when it has none. Never raises."""
    try:
        if exc.__traceback__ is None and exc.__cause__ is None and exc.__context__ is None:
            return None
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # noqa: BLE001 - an exception that cannot be formatted keeps its message only
        return None
    text = redact(text, agent_redact)
    if len(text) > MAX_TRACEBACK_CHARS:
        cut = len(text) - MAX_TRACEBACK_CHARS
        text = f"[the first {cut} characters cut]\n" + text[cut:]
    return text


def print_first_failure(agent: str, case_id: str, trial: int, text: str) -> None:
    """With ``LEVELFIELD_DEBUG=1``: the first failed run's traceback, on stderr."""
    print(f"levelfield (LEVELFIELD_DEBUG): the first failed run, agent {agent!r}, case {case_id!r}, trial {trial}:\n"
          f"{text}", file=sys.stderr, flush=True)
