"""``as_agent``: pick the adapter for whatever the user passed, without importing frameworks."""

from __future__ import annotations

import re
from typing import Any

from .._core.data.protocol import AgentRunnable
from .._core.errors import ConfigTypeError

__all__ = ["as_agent", "register_adapter"]

_RESOURCE = re.compile(r"^projects/[^/]+/locations/[^/]+/reasoningEngines/[^/]+$")
_DETECTORS: list[tuple[Any, Any]] = []


def register_adapter(detect, wrap) -> None:
    """Teach ``as_agent`` a new kind of object: ``detect(obj) -> bool``, ``wrap(obj, name) -> AgentRunnable``."""
    _DETECTORS.append((detect, wrap))


def _modules(obj: Any) -> set[str]:
    return {(getattr(k, "__module__", "") or "").split(".")[0] for k in type(obj).__mro__}


def _is_langchain(obj: Any) -> bool:
    return bool(_modules(obj) & {"langchain_core", "langgraph", "langchain", "langchain_classic"}) and hasattr(
        obj, "invoke"
    )


_AGENT_ENGINE_OPERATIONS = ("query", "async_query", "stream_query", "async_stream_query")


def _is_agent_engine(obj: Any) -> bool:
    mods = {getattr(k, "__module__", "") or "" for k in type(obj).__mro__}
    # agentplatform: google-cloud-aiplatform 2.x's new name for the same templates and clients.
    if any(m.startswith(("vertexai", "google.cloud.aiplatform", "agentplatform")) for m in mods):
        return True
    # Custom Agent Engine classes (and stand-ins of deployed agents) carry the operation
    # interface whatever their module: checked on the class, so mocks do not match.
    interface = hasattr(type(obj), "operation_schemas") or hasattr(type(obj), "register_operations")
    return interface and any(callable(getattr(obj, op, None)) for op in _AGENT_ENGINE_OPERATIONS)


def _is_adk(obj: Any) -> bool:
    # is_adk_agent reads the class's modules first: google.adk is imported only for its own objects.
    from .adk import is_adk_agent

    return is_adk_agent(obj)


def _is_a2a_card(obj: Any) -> bool:
    return type(obj).__name__ == "AgentCard" and "a2a" in (type(obj).__module__ or "")


def as_agent(obj: Any, *, name: str | None = None) -> AgentRunnable:
    """Wrap ``obj`` in the adapter it needs.

    An ``AgentRunnable`` is used as is; a LangChain Runnable or compiled graph -> LangChainAgent;
    an ADK agent (``LlmAgent``, a workflow agent, any ``BaseAgent``) or ADK ``App`` -> AdkAgent (ADK's
    own Runner, no Vertex AI project needed); an Agent Engine template (``vertexai`` or
    ``agentplatform``), deployed agent or ``projects/.../reasoningEngines/...`` name -> AgentEngineAgent; an ``http(s)://`` URL or an A2A AgentCard -> A2AAgent; any other callable ->
    FunctionAgent.
    """
    for detect, wrap in _DETECTORS:
        if detect(obj):
            return wrap(obj, name)
    if isinstance(obj, str):
        if obj.startswith(("http://", "https://")):
            from .a2a.agent import A2AAgent

            return A2AAgent(obj, name=name)
        if _RESOURCE.match(obj):
            from .agent_engine import AgentEngineAgent

            return AgentEngineAgent(obj, name=name)
        from .schemeless import looks_like_url

        if looks_like_url(obj):
            raise ConfigTypeError(f"cannot make an agent of the string {obj!r}: it looks like a URL without its scheme; "
                                  f"write http://{obj} (or https://{obj}) for an A2A agent there")
        raise ConfigTypeError(
            f"cannot make an agent of the string {obj!r}: expected an http(s):// A2A URL or an Agent Engine "
            "resource name projects/P/locations/L/reasoningEngines/ID"
        )
    if _is_a2a_card(obj):
        from .a2a.agent import A2AAgent

        return A2AAgent(obj, name=name)
    if _is_adk(obj):
        from .adk import AdkAgent

        return AdkAgent(obj, name=name)
    if _is_langchain(obj):
        from .langchain import LangChainAgent

        return LangChainAgent(obj, name=name)
    if _is_agent_engine(obj):
        from .agent_engine import AgentEngineAgent

        return AgentEngineAgent(obj, name=name)
    if isinstance(obj, AgentRunnable) and not isinstance(obj, type):
        if name and name != obj.name:
            return _Renamed(obj, name)
        return obj
    if callable(obj):
        from .function import FunctionAgent

        return FunctionAgent(obj, name=name)
    raise ConfigTypeError(
        f"cannot make an agent of {type(obj).__name__}: expected a function, an AgentRunnable, a LangChain "
        "runnable, an ADK agent or App, an Agent Engine agent, or an A2A URL"
    )


class _Renamed:
    """An AgentRunnable under another name (compare() keys agents by the names the user gave)."""

    def __init__(self, inner: AgentRunnable, name: str) -> None:
        self.inner = inner
        self.name = name

    async def arun(self, request):
        return await self.inner.arun(request)

    _PASSED_ON = frozenset({"partial_output", "classify_failure", "preflight", "apreflight", "observed", "redact", "warn_blocking"})
    """What the runner and the evaluation ask of an agent besides ``arun``: passed on to the agent renamed."""

    def __getattr__(self, attr: str):
        if attr in _Renamed._PASSED_ON:
            return getattr(self.inner, attr)
        raise AttributeError(attr)
