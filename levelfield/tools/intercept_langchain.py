"""Levelled LangChain tools: every ``BaseTool`` an agent runs (in a LangGraph ``ToolNode``, prebuilt
or hand-built, ``create_agent``'s, or an ``AgentExecutor``'s) answers through ``levelfield.tools``.

Each tool is replaced, where the agent holds it, by a copy of itself whose class overrides ``_run``
and ``_arun`` only: LangChain still parses the input, fires the callbacks the trajectory is read
from, handles errors (``handle_tool_error``) and formats the ``ToolMessage``; only the tool's own
work is answered from the cassette or run live, with the run's fault on top. Outside a levelled
run the copy behaves as the tool. langchain-core is imported only here.
"""

from __future__ import annotations

import contextvars
import functools
import json
import threading
from collections.abc import Mapping
from typing import Any

from .._core.run.scope import current_scope
from .level import acall_tool, call_tool

__all__ = ["level_langchain", "levelled_tool"]

_PENDING: contextvars.ContextVar[tuple[str, dict[str, Any]] | None] = contextvars.ContextVar(
    "levelfield_lc_pending", default=None)
_SUBCLASSES: dict[type, type] = {}
_LOCK = threading.Lock()


def _args_of(tool: Any, tool_input: Any) -> dict[str, Any]:
    """The call's arguments as the model gave them (injected state and runtime left out)."""
    if isinstance(tool_input, Mapping):
        if tool_input.get("type") == "tool_call" and isinstance(tool_input.get("args"), Mapping):
            tool_input = tool_input["args"]
        try:
            return dict(tool._filter_injected_args(dict(tool_input)))
        except Exception:  # noqa: BLE001 - an older tool class without the filter
            return dict(tool_input)
    if isinstance(tool_input, str):
        try:
            parsed = json.loads(tool_input)
        except ValueError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"input": tool_input}
    return {"input": tool_input}


def _as_response(tool: Any, value: Any) -> Any:
    # A content_and_artifact pair comes back from a cassette as a JSON list.
    if getattr(tool, "response_format", None) == "content_and_artifact" and isinstance(value, list) and len(value) == 2:
        return tuple(value)
    return value


def _subclass(cls: type) -> type:
    with _LOCK:
        sub = _SUBCLASSES.get(cls)
        if sub is not None:
            return sub
        base_run, base_arun = cls._run, cls._arun  # type: ignore[attr-defined]

        def run(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            _PENDING.set((self.name, _args_of(self, tool_input)))  # read by _run in the context run() copies
            return cls.run(self, tool_input, *args, **kwargs)  # type: ignore[attr-defined]  # cls: a BaseTool subclass

        async def arun(self: Any, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            _PENDING.set((self.name, _args_of(self, tool_input)))
            return await cls.arun(self, tool_input, *args, **kwargs)  # type: ignore[attr-defined]

        from langchain_core.tools import BaseTool

        # LangChain passes run_manager / config to a _run whose signature and type hints name them:
        # the overrides wear the originals' (and LangChain reads _run's for a class keeping BaseTool's _arun).
        @functools.wraps(base_run)
        def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
            pending = _PENDING.get()
            if pending is None:
                return base_run(self, *args, **kwargs)
            _PENDING.set(None)  # tools this tool calls are their own calls
            return _as_response(self, call_tool(pending[0], pending[1], lambda: base_run(self, *args, **kwargs)))

        @functools.wraps(base_run if base_arun is BaseTool._arun else base_arun)
        async def _arun(self: Any, *args: Any, **kwargs: Any) -> Any:
            pending = _PENDING.get()
            if pending is None:
                return await base_arun(self, *args, **kwargs)
            _PENDING.set(None)
            answer = await acall_tool(pending[0], pending[1], lambda: base_arun(self, *args, **kwargs))
            return _as_response(self, answer)

        namespace = {"__slots__": (), "__module__": __name__, "run": run, "arun": arun, "_run": _run, "_arun": _arun,
                     "__doc__": cls.__doc__}
        sub = type(f"Levelled{cls.__name__}", (cls,), namespace)
        _SUBCLASSES[cls] = sub
        _SUBCLASSES[sub] = sub
        return sub


def _in_environment_run() -> bool:
    scope = current_scope()
    return scope is not None and scope.leveller is not None and scope.leveller.environment is not None


class _ToolsByName(dict):
    """A ToolNode's tools by name. In a run levelled by an environment, a name the node lacks (a model's invention)
    is a call like any other: the environment answers it (a τ² environment: its own error, which its reward
    replays), the trajectory and the tool events hold it. Elsewhere the node answers it as it always has (its
    "not a valid tool" message). Listing the tools lists the node's own."""

    def get(self, name: Any, default: Any = None) -> Any:
        tool = dict.get(self, name)
        if tool is None and isinstance(name, str) and _in_environment_run():
            return _unknown_tool(name)
        return default if tool is None else tool

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str) and _in_environment_run())

    def __missing__(self, name: Any) -> Any:
        if isinstance(name, str) and _in_environment_run():
            return _unknown_tool(name)
        raise KeyError(name)


@functools.lru_cache(maxsize=256)
def _unknown_tool(name: str) -> Any:
    """A levelled tool named ``name`` taking any arguments, for a call the environment answers; its body runs only
    where nothing levels it, and says so."""
    from langchain_core.tools import StructuredTool

    def unknown(**kwargs: Any) -> Any:
        raise LookupError(f"tool {name!r} is not among the agent's tools")

    return levelled_tool(StructuredTool.from_function(
        func=unknown, name=name, description="A tool the agent does not have.",
        args_schema={"type": "object", "properties": {}, "additionalProperties": True}, infer_schema=False))


def levelled_tool(tool: Any) -> Any:
    """A copy of ``tool`` (a LangChain ``BaseTool``) answering through ``levelfield.tools``; itself if it does."""
    if type(tool) in _SUBCLASSES.values():
        return tool
    sub = _subclass(type(tool))
    copied = tool.model_copy()
    object.__setattr__(copied, "__class__", sub)
    return copied


def level_langchain(runnable: Any) -> list[str]:
    """Replace the tools ``runnable`` holds (ToolNodes of a compiled graph and its subgraphs, an
    AgentExecutor's tools) by levelled copies, in place. The names of the tools levelled."""
    found: list[str] = []
    _walk(runnable, found, set(), 0)
    return found


def _walk(obj: Any, found: list[str], seen: set[int], depth: int) -> None:
    if obj is None or id(obj) in seen or depth > 12:
        return
    seen.add(id(obj))
    by_name = getattr(obj, "_tools_by_name", None)
    if isinstance(by_name, dict) and type(obj).__name__.endswith("ToolNode"):
        for name, tool in list(by_name.items()):
            by_name[name] = levelled_tool(tool)
            found.append(name)
        if not isinstance(by_name, _ToolsByName):
            try:
                obj._tools_by_name = _ToolsByName(by_name)
            except (AttributeError, TypeError):  # a node that keeps its own: unknown names stay its to answer
                pass
        return
    tools = getattr(obj, "tools", None)
    if type(obj).__name__ == "AgentExecutor" and isinstance(tools, (list, tuple)):
        obj.tools = [levelled_tool(t) for t in tools]
        found.extend(t.name for t in tools)
        return
    nodes = getattr(obj, "nodes", None)
    if isinstance(nodes, Mapping):  # a compiled graph: its nodes' runnables
        for node in nodes.values():
            _walk(getattr(node, "bound", node), found, seen, depth + 1)
    for attr in ("bound", "runnable", "first", "last"):
        inner = getattr(obj, attr, None)
        if inner is not None and not callable(getattr(inner, "__self__", None)):
            _walk(inner, found, seen, depth + 1)
    for step in getattr(obj, "steps", None) or getattr(obj, "middle", None) or []:
        _walk(step, found, seen, depth + 1)
