"""Environments: tools answered from live state that belongs to one run.

Beside a :class:`~levelfield.ToolCassette` (recorded answers) and :class:`~levelfield.Faults` (a seeded
schedule on top), an environment answers each levelled tool call from a state of its own for each run:
``reset(case_id, trial)`` gives a fresh session when the run makes its first call, every call of that
run goes to that session, and what ``close()`` returns is kept on the run (``AgentRun.environment``).
Two runs, even of one case and one trial by two agents at once, never share a session.

Write your own by giving ``name``, ``tool_specs()`` and ``reset``::

    class Counter:
        name = "counter"
        def tool_specs(self):
            return [ToolSpec("bump", "Add one to the counter.", {"type": "object", "properties": {}})]
        def reset(self, case_id, trial):
            return CounterSession()   # with call(tool, args) and close()

    lf.evaluate(data, agent, tools=Counter())

The tools in each framework's shape (:func:`function_tools`, :func:`langchain_tools`, :func:`adk_tools`)
are built from the specs; their bodies never run inside a levelled run (the environment answers), and
outside one they say so.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ToolSpec", "ToolEnvironment", "EnvironmentSession", "OutsideEnvironmentError", "function_tools",
           "langchain_tools", "adk_tools"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool an environment answers: what a model is shown of it."""

    name: str
    """The tool's name, as the agent calls it."""
    description: str
    """Its docstring: what it does, its arguments and what it returns."""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of its arguments (an object schema)."""
    signature: inspect.Signature | None = None
    """The Python signature a plain-function shape wears (None: keyword arguments from ``parameters``)."""


@runtime_checkable
class EnvironmentSession(Protocol):
    """One run's state: it answers that run's calls and says what is kept of it at the end."""

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        """The answer to one call (what the agent's tool returns); raising is the tool raising."""

    def close(self) -> dict[str, Any] | None:
        """The run is over: what its record keeps of the final state (JSON-able, small)."""


@runtime_checkable
class ToolEnvironment(Protocol):
    """A stateful world for ``tools=``: its tools, and a fresh session for each run."""

    name: str

    def tool_specs(self) -> Sequence[ToolSpec]:
        """The tools the environment answers."""

    def reset(self, case_id: str, trial: int) -> EnvironmentSession:
        """A fresh state for one run of ``case_id`` (its ``trial``-th)."""


class OutsideEnvironmentError(RuntimeError):
    """An environment's tool called outside an evaluation run levelled by that environment."""


def _outside(env_name: str, tool: str) -> OutsideEnvironmentError:
    return OutsideEnvironmentError(
        f"tool {tool!r} of environment {env_name!r} answers only inside lf.evaluate / lf.compare given "
        f"tools=<the environment>: called outside such a run (or from code levelfield cannot intercept: call tools "
        "through a ToolNode, an ADK agent's tools or a function agent's 'tools' parameter)")


_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


def _signature(spec: ToolSpec) -> inspect.Signature:
    if spec.signature is not None:
        return spec.signature
    props = dict(spec.parameters.get("properties") or {})
    required = set(spec.parameters.get("required") or [])
    params = []
    for name, schema in props.items():
        annotation = _JSON_TYPES.get(str(schema.get("type")) if isinstance(schema, Mapping) else "", Any)
        default = inspect.Parameter.empty if name in required else (schema.get("default") if isinstance(schema, Mapping) else None)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    params.sort(key=lambda p: p.default is not inspect.Parameter.empty)
    return inspect.Signature(params)


def _stub(env_name: str, spec: ToolSpec) -> Any:
    def tool(*args: Any, **kwargs: Any) -> Any:
        raise _outside(env_name, spec.name)

    tool.__name__ = tool.__qualname__ = spec.name
    tool.__doc__ = spec.description
    sig = _signature(spec)
    tool.__signature__ = sig  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()
                            if p.annotation is not inspect.Parameter.empty}
    if sig.return_annotation is not inspect.Signature.empty:
        tool.__annotations__["return"] = sig.return_annotation
    return tool


def function_tools(env: ToolEnvironment) -> dict[str, Any]:
    """The environment's tools as plain functions ``{name: fn}`` with the specs' names, signatures and
    docstrings: the default of a function agent's ``tools`` parameter (``def agent(prompt, tools=...)``)."""
    return {spec.name: _stub(env.name, spec) for spec in env.tool_specs()}


def langchain_tools(env: ToolEnvironment) -> list[Any]:
    """The environment's tools as LangChain ``StructuredTool``s (the specs' JSON schemas as ``args_schema``)."""
    from langchain_core.tools import StructuredTool

    return [StructuredTool.from_function(func=_stub(env.name, spec), name=spec.name, description=spec.description,
                                         args_schema=dict(spec.parameters), infer_schema=False)
            for spec in env.tool_specs()]


def adk_tools(env: ToolEnvironment) -> list[Any]:
    """The environment's tools as ADK tools, each declared with its spec's JSON schema."""
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types

    class EnvironmentTool(BaseTool):
        def __init__(self, spec: ToolSpec) -> None:
            super().__init__(name=spec.name, description=spec.description)
            self._spec = spec

        def _get_declaration(self) -> Any:
            return types.FunctionDeclaration(name=self._spec.name, description=self._spec.description,
                                             parameters_json_schema=dict(self._spec.parameters))

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            raise _outside(env.name, self._spec.name)

    return [EnvironmentTool(spec) for spec in env.tool_specs()]
