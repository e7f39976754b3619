"""Argument readers shared by the commands (``eval``, ``compare``, ``plan``, ``watch``...): numbers in their range, dollars, a
model spec, the judge. A reader raises ``argparse.ArgumentTypeError``, which argparse prints naming
the option (``argument --seed: -1: give 0 or more``), exit 2."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["UsageError", "budget", "dollars", "whole", "positive", "number", "share", "probability", "port", "http_url",
           "judge_of", "model_spec", "timeout_seconds", "response_size", "per_minute", "threshold", "named_spec",
           "workers", "stop_early_switch"]


def whole(low: int, high: int | None = None, *, also: tuple[int, ...] = (), what: str = "") -> Callable[[str], int]:
    """A reader of a whole number from ``low`` to ``high`` (no upper end when None); ``also``: other values allowed."""
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value not in also and (value < low or (high is not None and value > high)):
            span = f"from {low} to {high}" if high is not None else f"{low} or more"
            raise argparse.ArgumentTypeError(f"{value}: give {span}{what}")
        return value

    read.__name__ = "whole number"
    return read


def number(low: float = -math.inf, *, above: bool = False, what: str = "") -> Callable[[str], float]:
    """A reader of a finite number, at least ``low`` (more than ``low`` with ``above``)."""
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value < low or (above and value == low):
            raise argparse.ArgumentTypeError(f"{text}: give a number {'more than' if above else 'of at least'} {low:g}{what}")
        return value

    read.__name__ = "number"
    return read


def share(*, open_low: bool = True, open_high: bool = True, what: str = "") -> Callable[[str], float]:
    """A reader of a number between 0 and 1 (ends excluded unless ``open_low`` / ``open_high`` is False)."""
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (0 <= value <= 1) or (open_low and value == 0) or (open_high and value == 1):
            ends = f"{'more than 0' if open_low else 'from 0'} {'and less than 1' if open_high else 'up to 1'}"
            raise argparse.ArgumentTypeError(f"{text}: give a number {ends}{what}")
        return value

    read.__name__ = "number"
    return read


probability = share(what=" (e.g. 0.05)")
"""A significance level or a chance: strictly between 0 and 1."""

port = whole(0, 65535, what=" (0: any free port)")
"""A TCP port, 0 for any free one."""


def http_url(text: str) -> str:
    """An ``http(s)://host...`` URL."""
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r}: give an http(s):// URL, e.g. http://127.0.0.1:4318")
    return text


def dollars(text: str) -> float:
    """A number of dollars (``5``, ``$0.50``), 0 or more."""
    try:
        value = float(text.lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of dollars") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: give 0 or more dollars")
    return value


def budget(text: str) -> float:
    """A spending limit in dollars (``5``, ``$0.50``), more than 0."""
    value = dollars(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: a budget must be more than 0 dollars")
    return value


def model_spec(spec: str) -> Any:
    """What ``module:attr`` names (a ``make_*`` factory called), else ``spec`` as a ``provider:model`` string."""
    from .._core.errors import AgentSpecError
    from ..adapters.spec import load_agent_spec

    try:
        return load_agent_spec(spec)
    except AgentSpecError:
        module = spec.partition(":")[0]
        if "." in module:  # a dotted module is never a LangChain provider: the spec was meant as module:attr
            raise
        return spec


def judge_of(args: argparse.Namespace) -> Any:
    """The judge ``--judge`` names, or None: an A2A URL, ``module:attr`` (a chat model, a function
    or an agent; a ``make_*`` factory is called), else a LangChain ``provider:model`` string."""
    spec = getattr(args, "judge", None)
    if not spec:
        return None
    # The judge package registers the judged metric names (final_response_match_v2, ...) that --judge builds.
    from .. import judge  # noqa: F401
    if spec.startswith(("http://", "https://")):
        return spec
    return model_spec(spec)


class UsageError(Exception):
    """Bad input on the command line: printed as one line, exit code 2."""



positive = whole(1)
"""A whole number of 1 or more."""


def timeout_seconds(text: str) -> float | None:
    if text.lower() in ("none", "0"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (or 'none'), got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds more than 0, or 'none' for no timeout")
    return value


def response_size(text: str) -> int | None:
    from .._core.data.config import parse_size
    from .._core.errors import ConfigError

    if text.lower() == "none":
        return None
    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def per_minute(text: str) -> tuple[str | None, int]:
    """``--rpm N`` / ``--rpm NAME=N``: (None or the name, N)."""
    name, sep, value = text.rpartition("=")
    try:
        rate = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or NAME=N (a whole number per minute), got {text!r}") from None
    if rate < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 a minute, got {rate}")
    return (name.strip() or None) if sep else None, rate



def threshold(text: str) -> tuple[str, float]:
    metric, sep, value = text.partition("=")
    try:
        if not sep or not metric.strip():
            raise ValueError
        bound = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (e.g. trajectory_exact_match=0.8), got {text!r}") from None
    if not math.isfinite(bound) or bound < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of 0 or more for {metric.strip()} "
                                         "(a score from 0 to 1, or a count)")
    return metric.strip(), bound


_NAME = re.compile(r"^[\w .()\-]+$")


def named_spec(text: str) -> tuple[str | None, str]:
    """``name=SPEC`` -> (name, spec); a bare SPEC (no name) -> (None, spec)."""
    name, sep, spec = text.partition("=")
    if sep and name and _NAME.match(name) and spec:
        return name.strip(), spec
    return None, text



def workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1 and value != -1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more processes, or -1 for one per core")
    return value



def stop_early_switch(value: str) -> bool | str:
    """``--stop-early METRIC`` / ``--stop-early off``."""
    return False if value.lower() in ("off", "no", "false") else value
