"""Adapters: one per framework, each importing its framework lazily.

``FunctionAgent`` is always available; ``LangChainAgent``, ``A2AAgent`` and ``AgentEngineAgent``
load on first use and name the extra to install when their framework is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .auto import register_adapter
    from .function import FunctionAgent

__all__ = ["register_adapter", "FunctionAgent", "LangChainAgent", "A2AAgent", "AgentEngineAgent", "TracedAgent"]

# All names load on first use, so that the command line (which registers ``serve`` from this
# package) starts without pydantic.
from .._lazy import lazy_members

_LAZY = {
    "register_adapter": ".auto",
    "FunctionAgent": ".function",
    "LangChainAgent": ".langchain",
    "A2AAgent": ".a2a.agent",
    "AgentEngineAgent": ".agent_engine",
    "TracedAgent": ".traced",
}


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
