"""Levelled tools for function agents: a function agent's ``tools`` parameter receives its tool
implementations (the parameter's default: a list or dict of functions) wrapped so each call answers
through ``levelfield.tools``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .level import acall_tool, call_tool

__all__ = ["levelled_function", "levelled_functions"]


def levelled_function(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """``fn`` answering through ``levelfield.tools`` under the tool name ``name`` (default: its ``__name__``)."""
    tool = name or getattr(fn, "__name__", None) or type(fn).__name__
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    def args_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if not args:
            return dict(kwargs)  # what binding would give, ~20x quicker
        if signature is None:
            return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
        bound = signature.bind_partial(*args, **kwargs)
        return dict(bound.arguments)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def levelled_async(*args: Any, **kwargs: Any) -> Any:
            return await acall_tool(tool, args_of(args, kwargs), lambda: fn(*args, **kwargs))
        return levelled_async

    @functools.wraps(fn)
    def levelled(*args: Any, **kwargs: Any) -> Any:
        return call_tool(tool, args_of(args, kwargs), lambda: fn(*args, **kwargs))
    return levelled


def levelled_functions(tools: Any) -> Any:
    """A function agent's tools levelled, in the shape given: a dict ``{name: fn}`` or a list of functions."""
    if isinstance(tools, Mapping):
        return {name: levelled_function(fn, str(name)) for name, fn in tools.items()}
    return type(tools)(levelled_function(fn) for fn in tools) if isinstance(tools, (list, tuple)) else None
