"""Custom agent functions: ``fn(prompt)`` returning Vertex's ``{"response", "predicted_trajectory"}``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from .._core.data.protocol import AgentRequest
from .._core.data.rows import parse_handoffs
from .._core.data.types import AgentOutput, ToolCall, Usage
from .._core.errors import AgentOutputError, ConfigTypeError, DatasetError
from .._core.run.threads import run_sync

__all__ = ["FunctionAgent", "output_from_value"]

_EXPECTED = (
    "a str, an AgentOutput, or a dict {'response': str, 'predicted_trajectory': [{'tool_name', 'tool_input'}, ...]} "
    "(optionally with 'handoffs', 'state' and 'usage')"
)


def _usage_from(value: Any, agent: str) -> Usage | None:
    """A returned ``usage`` (a Usage or ``{input_tokens, output_tokens[, total_tokens, cache_read_tokens,
    cache_write_tokens, reasoning_tokens, model]}``: input counts cached tokens, output counts reasoning)."""
    if value is None or isinstance(value, Usage):
        return value
    try:
        usage = Usage.model_validate(value)
    except ValidationError as exc:
        raise AgentOutputError(f"agent {agent!r} returned a malformed 'usage' ({exc.errors()[0]['msg']}); expected "
                               "{'input_tokens': int, 'output_tokens': int, 'model': str} (optionally "
                               "'cache_read_tokens', 'cache_write_tokens' within input_tokens and "
                               "'reasoning_tokens' within output_tokens)") from None
    if not usage.total_tokens:
        usage.total_tokens = usage.input_tokens + usage.output_tokens
    return usage


def output_from_value(value: Any, agent: str) -> AgentOutput:
    """Read what a function returned; anything else is an AgentOutputError saying what was expected."""
    if isinstance(value, AgentOutput):
        return value
    if isinstance(value, str):
        return AgentOutput(response=value)
    if isinstance(value, dict):
        if "response" not in value:
            raise AgentOutputError(f"agent {agent!r} returned a dict without 'response' (keys: {sorted(value)}); expected {_EXPECTED}")
        response = value["response"]
        if not isinstance(response, str):
            raise AgentOutputError(
                f"agent {agent!r} returned 'response' of type {type(response).__name__}; expected a str"
            )
        raw_calls = value.get("predicted_trajectory", value.get("trajectory")) or []
        if not isinstance(raw_calls, list):
            raise AgentOutputError(
                f"agent {agent!r} returned 'predicted_trajectory' of type {type(raw_calls).__name__}; expected a list of tool calls"
            )
        calls = []
        for i, c in enumerate(raw_calls):
            try:
                calls.append(c if isinstance(c, ToolCall) else ToolCall.model_validate(c))
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(part) for part in err.get("loc", ()))
                got = type(err.get("input")).__name__
                raise AgentOutputError(
                    f"agent {agent!r} returned a malformed tool call #{i + 1} in 'predicted_trajectory'"
                    f"{f', field {field!r}' if field else ''}: {err['msg']} (got {got}); "
                    "expected {'tool_name': str, 'tool_input': dict}"
                ) from None
        return AgentOutput(response=response, trajectory=calls, raw=value, **_extras(value, agent))
    raise AgentOutputError(f"agent {agent!r} returned {type(value).__name__}; expected {_EXPECTED}")


def _extras(value: dict[str, Any], agent: str) -> dict[str, Any]:
    """The optional keys of a returned dict: ``handoffs``, ``state`` (the final session state), ``usage``."""
    out: dict[str, Any] = {}
    if value.get("handoffs") is not None:
        try:
            out["handoffs"] = parse_handoffs(value["handoffs"], f"agent {agent!r}", "handoffs")
        except DatasetError as exc:
            raise AgentOutputError(f"{exc}; a function agent returns 'handoffs' as agent names or {{from_agent, to_agent}}") from None
    state = value.get("state")
    if state is not None:
        if not isinstance(state, Mapping):
            raise AgentOutputError(f"agent {agent!r} returned 'state' of type {type(state).__name__}; expected a dict of the final session state")
        out["state"] = dict(state)
    if value.get("usage") is not None:
        out["usage"] = _usage_from(value["usage"], agent)
    return out


class FunctionAgent:
    """Wraps ``fn(prompt)`` (sync or async). ``fn`` may also take ``history``, ``session_id`` and
    ``state`` (the case's initial session state, a dict) keywords, and ``tools`` (its tool functions as
    the default; an evaluation with ``tools=``/``faults=`` passes them levelled)."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigTypeError(f"FunctionAgent needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004 (the method, not a test)
        self._is_async = inspect.iscoroutinefunction(target)
        self.on_threads = not self._is_async
        """Whether its calls run on threads of their own (a sync function), each taking the interpreter as it returns."""
        try:
            params: Mapping[str, inspect.Parameter] = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self._extra = {k for k in ("history", "session_id", "state") if k in params or takes_kwargs}
        self.levelled_tools: Any = None
        """The function's tools levelled (``tools=``/``faults=`` of an evaluation; see ``levelfield.tools``),
        passed as its ``tools`` argument; None: its own default applies."""

    def _kwargs(self, request: AgentRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if "history" in self._extra:
            kwargs["history"] = request.history
        if "session_id" in self._extra:
            kwargs["session_id"] = request.session_id
        if "state" in self._extra:
            kwargs["state"] = dict(request.state)  # a copy: one case's agent must not change the next one's
        if self.levelled_tools is not None:
            kwargs["tools"] = self.levelled_tools
        return kwargs

    async def arun(self, request: AgentRequest) -> AgentOutput:
        kwargs = self._kwargs(request)
        if self._is_async:
            value = await self.fn(request.prompt, **kwargs)
        else:
            value = await run_sync(self.fn, request.prompt, **kwargs)
            if inspect.isawaitable(value):
                value = await value
        return output_from_value(value, self.name)

    def __repr__(self) -> str:
        return f"FunctionAgent({self.name!r})"
