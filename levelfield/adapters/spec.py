"""Agent specs as the CLI writes them: ``module:attr``, an ``http(s)://`` A2A URL, or an
Agent Engine resource name."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from .._core.data.protocol import AgentRequest, AgentRunnable
from .._core.data.types import AgentOutput
from .._core.errors import AgentSpecError
from .schemeless import looks_like_url

__all__ = ["load_agent_spec", "agent_from_spec", "SpecAgent", "AgentSpecError"]


def load_agent_spec(spec: str) -> Any:
    """Resolve a spec to an object ``as_agent`` accepts.

    ``pkg.module:attr`` imports ``attr`` from the module (the current directory is importable);
    if ``attr`` is a zero-argument factory function named ``make_*``/``build_*``/``create_*``, it is
    called. URLs and ``projects/.../reasoningEngines/...`` names are returned as they are.
    """
    if spec.startswith(("http://", "https://")) or spec.startswith("projects/"):
        return spec
    if looks_like_url(spec):
        raise AgentSpecError(f"agent spec {spec!r} looks like a URL without its scheme; write "
                             f"http://{spec} (or https://{spec}) for an A2A agent there")
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AgentSpecError(
            f"agent spec {spec!r}: expected module:attr (e.g. mypkg.agents:agent), an http(s):// A2A URL, "
            "or projects/P/locations/L/reasoningEngines/ID"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"agent spec {spec!r}: cannot import module {module_name!r} ({exc})") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AgentSpecError(f"agent spec {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if callable(obj) and getattr(obj, "__name__", "").startswith(("make_", "build_", "create_")):
        obj = obj()
    return obj


def agent_from_spec(spec: str, *, name: str | None = None, isolation: str | None = "none") -> AgentRunnable:
    """The agent a spec names, wrapped by ``as_agent``; for ``isolation="process"`` a :class:`SpecAgent`."""
    if isolation == "process":
        return SpecAgent(spec, name=name)
    from .auto import as_agent

    return as_agent(load_agent_spec(spec), name=name)


class SpecAgent:
    """An agent known by its spec string, so it can be sent to a worker process as that string.

    It is loaded at once (so a bad spec fails before any run), and pickles as ``(spec, name)``: a
    worker process imports the agent itself (``isolation="process"``), whatever the agent's
    own picklability.
    """

    def __init__(self, spec: str, *, name: str | None = None) -> None:
        self.spec = spec
        self._agent: AgentRunnable | None = self._load(name)
        self.name = self._agent.name

    def _load(self, name: str | None) -> AgentRunnable:
        from .auto import as_agent

        return as_agent(load_agent_spec(self.spec), name=name)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.spec = state["spec"]
        self.name = state["name"]
        self._agent = None  # loaded on the first run, in the process that runs it

    async def arun(self, request: AgentRequest) -> AgentOutput:
        if self._agent is None:
            self._agent = self._load(self.name)
        return await self._agent.arun(request)

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What the loaded agent can say about a run cut short, if it tracks that."""
        partial = getattr(self._agent, "partial_output", None)
        return partial(request) if callable(partial) else None

    def __repr__(self) -> str:
        return f"SpecAgent({self.spec!r}, name={self.name!r})"
