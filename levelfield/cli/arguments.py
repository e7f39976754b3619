"""Argument readers shared by the commands (``main`` and ``watch``): dollars, a model spec, the judge."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["budget", "dollars", "judge_of", "model_spec"]


def dollars(text: str) -> float:
    """A number of dollars (``5``, ``$0.50``), 0 or more."""
    try:
        value = float(text.lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of dollars") from None
    if not value >= 0:
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
    from ..adapters.spec import load_agent_spec
    from ..core.errors import AgentSpecError

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
    if spec.startswith(("http://", "https://")):
        return spec
    return model_spec(spec)
