"""Agent specs as the CLI writes them: ``module:attr``, an ``http(s)://`` A2A URL, or an
Agent Engine resource name."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ..core.errors import AgentSpecError

__all__ = ["load_agent_spec", "AgentSpecError"]


def load_agent_spec(spec: str) -> Any:
    """Resolve a spec to an object ``as_agent`` accepts.

    ``pkg.module:attr`` imports ``attr`` from the module (the current directory is importable);
    if ``attr`` is a zero-argument factory function named ``make_*``/``build_*``/``create_*``, it is
    called. URLs and ``projects/.../reasoningEngines/...`` names are returned as they are.
    """
    if spec.startswith(("http://", "https://")) or spec.startswith("projects/"):
        return spec
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
