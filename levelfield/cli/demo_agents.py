"""The demo's fixtures: the same careful home-automation agent built with every framework that
can run here (function, LangGraph, Agent Engine local template, A2A served on 127.0.0.1), plus a
hasty function agent for contrast. ``levelfield demo`` compares them on the sample dataset."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from .._core.errors import MissingExtraError
from .._core.score.metrics.registry import DEFAULT_METRICS
from ..adapters.auto import as_agent

__all__ = ["DEMO_METRICS", "demo_agents"]

DEMO_METRICS = [*DEFAULT_METRICS, "bleu", "exact_match"]
"""The default metrics, plus BLEU and exact match on the response."""


def demo_agents(stack: contextlib.ExitStack, notes: list[str]) -> dict[str, Any]:
    """An agent of each framework that can run here, all following the same careful policy, plus a hasty one."""
    from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

    agents: dict[str, Any] = {"function": careful_agent}
    builders: list[tuple[str, str, Callable[[], Any]]] = [
        ("langgraph", "langchain", _demo_langgraph),
        ("agent-engine", "vertex", _demo_agent_engine),
        ("a2a", "a2a", lambda: _demo_a2a(stack, careful_agent)),
    ]
    for name, extra, build in builders:
        try:
            agent = as_agent(build(), name=name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith(("samples.", "levelfield.")):
                notes.append(f"{name}: skipped (its sample is not part of this version)")
            else:
                notes.append(f"{name}: skipped (install it with: pip install 'levelfield[{extra}]')")
            continue
        except MissingExtraError as exc:
            notes.append(f"{name}: skipped ({exc})")
            continue
        except Exception as exc:  # a framework that cannot start here must not stop the demo
            notes.append(f"{name}: skipped ({type(exc).__name__}: {exc})")
            continue
        agents[name] = agent
    agents["function-hasty"] = hasty_agent
    return agents


def _demo_langgraph() -> Any:
    try:
        from samples.home_automation.agents.langgraph_agent import agent
    except ImportError as exc:
        raise ModuleNotFoundError(str(exc), name=getattr(exc, "name", None) or "langgraph") from None
    return agent


def _demo_agent_engine() -> Any:
    import warnings

    with warnings.catch_warnings():
        # The Vertex SDK warns about its own dependency versions on import; not the user's concern here.
        warnings.simplefilter("ignore", FutureWarning)
        from samples.home_automation.agents import agent_engine_agent as module

    for attr in ("agent", "app"):
        if hasattr(module, attr):
            return getattr(module, attr)
    for attr in ("make_agent", "make_app", "build_agent"):
        if hasattr(module, attr):
            return getattr(module, attr)()
    raise AttributeError("the Agent Engine sample exposes no 'agent'")


def _demo_a2a(stack: contextlib.ExitStack, agent: Any) -> str:
    import logging

    from ..adapters.a2a import server as a2a_server

    # The conformance preflight sends the demo's own server bad requests on purpose (an unknown method,
    # bad params) to check its error codes; a2a-sdk logs each as a warning, which is no news here.
    dispatcher = logging.getLogger("a2a.server.routes.jsonrpc_dispatcher")
    level = dispatcher.level
    dispatcher.setLevel(logging.ERROR)
    stack.callback(dispatcher.setLevel, level)
    server = a2a_server.start_server(agent, name="home-automation (A2A)")
    stack.callback(server.stop)
    return server.url
