"""ADK agents as they are: an ``LlmAgent``, a workflow agent or an ADK ``App``, run by ADK's own ``Runner``.

    lf.evaluate("cases.evalset.json", root_agent)

``AdkAgent`` runs the agent with ``google.adk.runners.InMemoryRunner``: one in-memory session
per case and trial (created with the case's ``state``, reused for its turns), no Vertex AI
project and no ``vertexai.init``. Its events are read as the Agent Engine ``AdkApp`` path reads
them (:mod:`.adk_events`): tool calls attributed to the sub-agent that made them, hand-offs,
model calls, usage with the model's name; the calls an ``AgentTool`` makes inside its own runner
are recovered by a plugin. ``AgentOutput.state`` is the session's state after the turn, as the
session service holds it. A tool that raises fails the run, as it does under ADK; the call keeps
the exception as its ``error`` in the run's partial output.

google.adk is imported only here, and only when an ADK agent is given (extra ``levelfield[adk]``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._core.data.protocol import AgentRequest
from .._core.data.types import AgentOutput
from .._core.errors import AdapterError, ConfigTypeError, MissingExtraError, TransientAgentError, exception_text
from .adk_events import (
    CURRENT_RUN,
    RunCalls,
    event_dict,
    install_inner_calls,
    is_transient,
    output_from_events,
    quiet_adk_errors,
    with_inner_calls,
    with_tool_errors,
)

__all__ = ["AdkAgent", "is_adk_agent"]


def is_adk_agent(obj: Any) -> bool:
    """Whether ``obj`` is an ADK agent (``BaseAgent``) or ``App``; imports google.adk only for objects of its classes."""
    modules = {getattr(k, "__module__", "") or "" for k in type(obj).__mro__}
    if not any(m == "google.adk" or m.startswith("google.adk.") for m in modules):
        return False
    from google.adk.agents import BaseAgent
    from google.adk.apps import App

    return isinstance(obj, (BaseAgent, App))


def _require_adk(what: str) -> None:
    try:
        import google.adk.runners  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("adk", "google-adk", what) from exc


class AdkAgent:
    """Evaluates an ADK agent (``LlmAgent``, ``SequentialAgent``/``ParallelAgent``/``LoopAgent``, any
    ``BaseAgent``) or an ADK ``App`` (its plugins and settings kept) with ADK's ``InMemoryRunner``.

    Args:
        agent: the root agent, or an ``App`` holding it.
        name: the name results show (default: the agent's or the app's name).
        user_id: the ADK user the sessions belong to.
    """

    warn_blocking = False
    """No ``BlockingAgentWarning``: a step that blocks the event loop is ADK's own code (its runner, a
    plugin, the model client), which the warning's advice (make the agent sync, wrap the blocking call
    in ``asyncio.to_thread``) cannot reach; the watchdog still ends a run at its timeout."""

    def __init__(self, agent: Any, *, name: str | None = None, user_id: str = "levelfield") -> None:
        _require_adk("AdkAgent")
        if not is_adk_agent(agent):
            raise ConfigTypeError(
                f"AdkAgent needs an ADK agent (google.adk.agents.BaseAgent) or an ADK App, got {type(agent).__name__}"
            )
        from google.adk.apps import App
        from google.adk.runners import InMemoryRunner

        self.agent = agent
        self.user_id = user_id
        self.name = name or str(agent.name)
        if isinstance(agent, App):
            self.runner = InMemoryRunner(app=agent)
        else:
            self.runner = InMemoryRunner(agent=agent, app_name=_app_name(agent.name))
        # The runner's plugins reach the runners ADK makes for AgentTools: the plugin sees their calls.
        install_inner_calls([self.runner.plugin_manager])
        quiet_adk_errors()  # a failed run records ADK's traceback; ADK's log of it would repeat it on the terminal
        self._sessions: dict[str, str] = {}
        self._progress: dict[tuple[str | None, int], tuple[list[Any], RunCalls]] = {}

    async def _session(self, request: AgentRequest) -> str:
        """The ADK session of this case and trial: created (with the case's state) on its first turn."""
        if request.session_id is not None and request.session_id in self._sessions:
            return self._sessions[request.session_id]
        session = await self.runner.session_service.create_session(
            app_name=self.runner.app_name, user_id=self.user_id, state=dict(request.state) or None
        )
        if request.session_id is not None:
            self._sessions[request.session_id] = session.id
        return session.id

    async def arun(self, request: AgentRequest) -> AgentOutput:
        from google.genai import types

        key = (request.session_id, request.turn)
        events: list[Any] = []
        calls = RunCalls(None)
        # Kept if the run is cancelled (its timeout), so partial_output() can read what arrived.
        self._progress[key] = (events, calls)
        try:
            session_id = await self._session(request)
            calls.session_id = session_id
            CURRENT_RUN.set(calls)  # this task's context: the tasks ADK starts for this run copy it
            message = types.Content(role="user", parts=[types.Part(text=request.prompt)])
            async for event in self.runner.run_async(user_id=self.user_id, session_id=session_id, new_message=message):
                events.append(event_dict(event))
        except (Exception, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError):
                raise  # a timeout: the runner asks partial_output() for what arrived
            self._progress.pop(key, None)
            raise self._failure(exc, events, calls) from exc
        self._progress.pop(key, None)
        output = with_inner_calls(output_from_events(events, self.name), calls)
        output = with_tool_errors(output, calls)
        session = await self.runner.session_service.get_session(
            app_name=self.runner.app_name, user_id=self.user_id, session_id=session_id
        )
        if session is not None:
            output.state = {k: v for k, v in session.state.items() if not str(k).startswith("temp:")}
        return output

    def _partial(self, events: list[Any], calls: RunCalls) -> AgentOutput | None:
        if not events:
            return None
        return with_tool_errors(with_inner_calls(output_from_events(events, self.name, strict=False), calls), calls)

    def _failure(self, exc: Exception, events: list[Any], calls: RunCalls) -> AdapterError:
        partial = self._partial(events, calls)
        if isinstance(exc, AdapterError):
            if exc.partial is None:
                exc.partial = partial
            return exc
        text = f"agent {self.name!r} failed: {exception_text(exc)}"
        if is_transient(exc):
            return TransientAgentError(text, partial=partial)
        return AdapterError(text, error_type=type(exc).__name__, partial=partial)

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What a timed-out run had produced (the events received so far)."""
        progress = self._progress.pop((request.session_id, request.turn), None)
        return self._partial(*progress) if progress is not None else None

    def __repr__(self) -> str:
        return f"AdkAgent({self.name!r})"


def _app_name(agent_name: str) -> str:
    # ADK's app names start with a letter and hold letters, digits, '_' and '-' (and are not "user").
    return agent_name if agent_name and agent_name[0].isalpha() and agent_name != "user" else f"app_{agent_name}"
