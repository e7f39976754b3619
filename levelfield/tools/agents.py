"""Putting an agent's tools on the level field: the interception each adapter allows, installed once,
and the agent wrapped so each run's scope knows what answers its tools.

| agent | how its tools are levelled |
|---|---|
| LangChain / LangGraph | the ``BaseTool``s of its ToolNodes (``create_agent``, prebuilt, hand-built), AgentExecutor |
| ADK agent or App | a runner plugin's tool callbacks (``AgentTool``s and their inner calls included) |
| Agent Engine local template | ``AdkApp``: the plugin; ``LangchainAgent``/``LanggraphAgent``: its runnable's tools |
| function agent | its ``tools`` parameter receives the levelled tools (the parameter's default, levelled) |
| remote A2A agent, deployed Agent Engine | cannot be levelled: its tools run on its server |
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

from .._core.data.protocol import AgentRequest
from .._core.data.types import AgentOutput
from .._core.run.scope import current_scope
from .level import Leveller

__all__ = ["LevelledAgent", "level_agent", "is_remote"]


class LevelledAgent:
    """An agent whose runs answer their tool calls through a :class:`Leveller`."""

    def __init__(self, inner: Any, leveller: Leveller, how: str, install: Any = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.leveller = leveller
        self.how = how
        """How its tools are levelled (for the report)."""
        self._install = install
        self._installed = install is None
        self._lock = asyncio.Lock()

    async def _ensure_installed(self) -> None:
        if self._installed:
            return
        async with self._lock:
            if not self._installed:
                ready = getattr(self.inner, "_ensure_ready", None)
                if ready is not None:
                    await ready()  # a local template is set up before its runnable can be reached
                self._install()
                self._installed = True

    async def arun(self, request: AgentRequest) -> AgentOutput:
        scope = current_scope()
        if scope is not None:
            scope.leveller = self.leveller
            if scope.tool_events is None:
                scope.tool_events = []
        await self._ensure_installed()
        try:
            output = await self.inner.arun(request)
        except BaseException:
            if scope is not None and scope.fatal is not None:
                raise scope.fatal from None
            raise
        if scope is not None and scope.fatal is not None:
            raise scope.fatal
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"LevelledAgent({self.inner!r})"


def level_agent(agent: Any, leveller: Leveller) -> tuple[Any, dict[str, Any]]:
    """``agent`` with its tools levelled, and what the report says of it: ``{"levelled": bool, "how" | "why": str}``."""
    inner = agent
    while type(inner).__name__ == "_Renamed":
        inner = inner.inner
    kind = type(inner).__name__
    if kind == "FunctionAgent":
        return _level_function(agent, inner, leveller)
    if kind == "LangChainAgent":
        from .intercept_langchain import level_langchain

        names = level_langchain(inner.runnable)
        if not names:
            return agent, {"levelled": False, "why": "no ToolNode or AgentExecutor tools found in the graph (tools "
                           "called from a node's own code cannot be intercepted: use a ToolNode)"}
        note = {"levelled": True, "how": f"LangChain tools: {', '.join(names)}", "tools": list(names)}
        return LevelledAgent(agent, leveller, "LangChain tools"), note
    if kind == "AdkAgent":
        from .intercept_adk import level_adk

        level_adk([inner.runner.plugin_manager])
        return LevelledAgent(agent, leveller, "ADK plugin"), {"levelled": True, "how": "ADK runner plugin"}
    if kind == "AgentEngineAgent":
        if inner.resource_name is not None or type(inner.agent).__name__ in ("AgentEngine", "ReasoningEngine"):
            return agent, {"levelled": False, "why": "a deployed Agent Engine agent: its tools run on Google's servers"}
        how: dict[str, str] = {}
        return LevelledAgent(agent, leveller, "Agent Engine template", install=lambda: _level_template(inner, how)), \
            {"levelled": True, "how": f"Agent Engine local template {type(inner.agent).__name__}"}
    if kind == "A2AAgent":
        return agent, {"levelled": False, "why": "a remote A2A agent: its tools run on its server"}
    return agent, {"levelled": False, "why": f"{kind}: no interception for this kind of agent (give a function agent a "
                   "'tools' parameter, or use a LangChain, ADK or Agent Engine agent)"}


def is_remote(agent: Any) -> bool:
    """An agent whose tools run on another machine (a remote A2A agent, a deployed Agent Engine agent)."""
    inner = agent
    while type(inner).__name__ == "_Renamed":
        inner = inner.inner
    kind = type(inner).__name__
    if kind == "AgentEngineAgent":
        return inner.resource_name is not None or type(inner.agent).__name__ in ("AgentEngine", "ReasoningEngine")
    return kind == "A2AAgent"


def _level_function(agent: Any, inner: Any, leveller: Leveller) -> tuple[Any, dict[str, Any]]:
    from .intercept_function import levelled_functions

    try:
        params: Mapping[str, inspect.Parameter] = inspect.signature(inner.fn).parameters
    except (TypeError, ValueError):
        params = {}
    param = params.get("tools")
    default = None if param is None else param.default
    levelled = None if default is None or default is inspect.Parameter.empty else levelled_functions(default)
    if levelled is None:
        return agent, {"levelled": False, "why": "the function has no 'tools' parameter whose default is a list or "
                       "dict of its tool functions (def agent(prompt, tools=[search, ...]))"}
    inner.levelled_tools = levelled
    note = {"levelled": True, "how": "function agent 'tools' parameter", "tools": _function_names(levelled)}
    return LevelledAgent(agent, leveller, "function tools"), note


def _function_names(tools: Any) -> list[str]:
    if isinstance(tools, dict):
        return [str(name) for name in tools]
    return [str(getattr(fn, "tool_name", None) or getattr(fn, "__name__", "?")) for fn in tools]


def _level_template(inner: Any, how: dict[str, str]) -> None:
    attrs = getattr(inner.agent, "_tmpl_attrs", None)
    if not isinstance(attrs, dict):
        return
    runners = [attrs.get(k) for k in ("runner", "in_memory_runner") if attrs.get(k) is not None]
    if runners:
        from .intercept_adk import level_adk

        level_adk([getattr(r, "plugin_manager", None) for r in runners])
        how["how"] = "ADK runner plugin"
        return
    if attrs.get("runnable") is not None:
        from .intercept_langchain import level_langchain

        level_langchain(attrs["runnable"])
        how["how"] = "LangChain tools"
