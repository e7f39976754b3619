"""ADK events read into an ``AgentOutput``: shared by every adapter that runs or calls an ADK agent.

An ADK run is a stream of events (``google.adk.events.Event``, or the dicts Agent Engine's
``AdkApp`` streams: ``json.loads(event.model_dump_json(exclude_none=True))``) whose
``content.parts`` hold ``function_call``, ``function_response`` and ``text``, with
``usage_metadata``, ``author``, ``branch`` and ``actions.state_delta``. :func:`output_from_events`
reads them into the trajectory (each call attributed to its author), the texts, usage, hand-offs,
model calls and the state changes. The AgentTool plugin (:func:`install_inner_calls`) recovers the
calls ADK runs in an AgentTool's own runner, which its event stream drops.

google.adk is imported only inside :func:`install_inner_calls`.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Mapping
from typing import Any

from .._core.data.token_counts import genai_usage
from .._core.data.types import AgentOutput, Handoff, ToolCall, Usage
from .._core.errors import AdapterError, AgentOutputError, TransientAgentError

__all__ = [
    "TRANSIENT_CODES",
    "CURRENT_RUN",
    "RunCalls",
    "Team",
    "event_dict",
    "event_error",
    "install_inner_calls",
    "is_adk_event",
    "is_transient",
    "output_from_events",
    "quiet_adk_errors",
    "session_state",
    "with_inner_calls",
    "with_tool_errors",
]

# HTTP and gRPC names of the errors worth retrying: rate limits, overload, deadlines.
TRANSIENT_CODES = {429, 503, 504, "429", "503", "504", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED"}


def event_dict(event: Any) -> Any:
    """An ADK ``Event`` as the dict Agent Engine's ``AdkApp`` streams (a dict is returned as it is)."""
    if isinstance(event, Mapping) or not hasattr(event, "model_dump_json"):
        return event
    return json.loads(event.model_dump_json(exclude_none=True))


def session_state(prior: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """The session's state after a turn: ``prior`` then the turn's changes, without ``temp:`` keys
    (they last one invocation in ADK)."""
    state = {**prior, **delta}
    return {k: v for k, v in state.items() if not str(k).startswith("temp:")}


def event_error(event: Mapping[str, Any]) -> tuple[str, Any] | None:
    if event.get("error_code") or event.get("error_message"):
        return str(event.get("error_message") or ""), event.get("error_code")
    if "error" in event and not event.get("content"):
        error = event["error"]
        if isinstance(error, Mapping):
            return str(error.get("message") or error), error.get("code") or error.get("status")
        return str(error), event.get("code")
    return None


def output_from_events(events: list[Any], agent: str, *, strict: bool = True) -> AgentOutput:
    """An ADK event stream: tool calls with their responses, the texts, usage and authors.

    ``strict=False`` reads as much as it can (for the partial output of a failed run).
    """
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    texts: list[str] = []
    usage: Usage | None = None
    team = Team()
    for index, event in enumerate(events):
        if not isinstance(event, Mapping):
            if not strict:
                continue
            raise AgentOutputError(f"agent {agent!r} streamed event {index} of type {type(event).__name__}; expected a dict")
        error = event_error(event)
        if error is not None and strict:
            message, code = error
            partial = output_from_events(events[:index], agent, strict=False)
            text = f"agent {agent!r} streamed an error event" + (f" ({code})" if code else "") + f": {message}"
            if code in TRANSIENT_CODES:
                raise TransientAgentError(text, partial=partial)
            raise AdapterError(text, error_type="agent_error", partial=partial)
        if event.get("partial"):
            continue  # streamed fragments; the complete event follows
        author = event.get("author")
        team.add(event)
        text = ""
        for part in (event.get("content") or {}).get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            if part.get("function_call"):
                fc = part["function_call"]
                call = ToolCall(tool_name=fc.get("name") or "", tool_input=fc.get("args") or {}, id=fc.get("id"), agent=author)
                calls.append(call)
                if call.id:
                    by_id[call.id] = call
            elif part.get("function_response"):
                fr = part["function_response"]
                target = by_id.get(fr.get("id") or "") or next(
                    (c for c in calls if c.tool_name == fr.get("name") and c.tool_output is None), None
                )
                if target is not None:
                    response = fr.get("response")
                    # ADK wraps a tool's non-dict return value as {"result": value}.
                    if isinstance(response, Mapping) and set(response) == {"result"}:
                        response = response["result"]
                    elif isinstance(response, Mapping) and set(response) == {"error"}:
                        target.error = str(response["error"])
                    target.tool_output = response
            elif part.get("text") and not part.get("thought"):
                text += part["text"]
        if text and author != "user":
            texts.append(text)
        counts = event.get("usage_metadata")
        if isinstance(counts, Mapping):
            model = event.get("model_version")  # the LlmResponse's model, on ADK's events
            spent = genai_usage(counts, str(model) if model else None)  # cache and thinking tokens too
            usage = spent + usage if spent is not None else usage
    return AgentOutput(
        response=texts[-1] if texts else "",
        trajectory=calls,
        intermediate_responses=texts[:-1],
        usage=usage,
        handoffs=team.handoffs,
        model_calls=team.model_calls,
        state=team.state_delta,
        raw=events,
    )


class Team:
    """What ADK events say about the agents of a run: who had control when, how many model
    answers they gave, and the session state changes (``actions.state_delta``)."""

    def __init__(self) -> None:
        self.handoffs: list[Handoff] = []
        self.model_calls = 0
        self.state_delta: dict[str, Any] = {}
        self._current: tuple[str, str] | None = None  # (author, branch)
        self._had_control: set[str] = set()

    def add(self, event: Mapping[str, Any]) -> None:
        author = event.get("author")
        if not isinstance(author, str) or not author or author == "user":
            return
        parts = [p for p in (event.get("content") or {}).get("parts") or [] if isinstance(p, Mapping)]
        # One model answer is one event with text or calls (a tool's response is an event of its own).
        if any(p.get("function_call") or p.get("text") for p in parts) or event.get("usage_metadata"):
            self.model_calls += 1
        actions = event.get("actions") or {}
        delta = actions.get("state_delta") if isinstance(actions, Mapping) else None
        if isinstance(delta, Mapping):
            self.state_delta.update(delta)
        self._control(author, str(event.get("branch") or ""))

    def _control(self, author: str, branch: str) -> None:
        current = self._current
        self._current = (author, branch)
        if current is None:
            self._had_control.add(author)
            return
        if current[0] == author:
            return
        # Sub-agents of a ParallelAgent interleave their events (sibling branches): control
        # passes to each once, the first time it acts, not at every interleaving.
        siblings = branch and current[1] and not branch.startswith(current[1]) and not current[1].startswith(branch)
        if siblings and author in self._had_control:
            return
        self._had_control.add(author)
        self.handoffs.append(Handoff(from_agent=current[0], to_agent=author))


def is_adk_event(item: Any) -> bool:
    return isinstance(item, Mapping) and bool(
        {"content", "author", "invocation_id", "error_code", "error_message"} & set(item)
    )



# --- calls inside AgentTools ---------------------------------------------------------------
#
# ADK runs an AgentTool's agent in a runner of its own and forwards none of its events (only its
# last answer), so its tool calls never reach the event stream (adk-python #3493). A plugin on
# the local app's runner, which ADK hands down to nested runners, sees them; a context variable
# set around each run tells it whose run a call belongs to and which outer call encloses it.


class RunCalls:
    """The calls made inside one run's AgentTools, by the outer call id that encloses them."""

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id
        self.calls: dict[str, list[ToolCall]] = {}
        self.model_calls = 0
        self.tool_errors: dict[str, str] = {}
        """What each tool that raised raised, by its call id (ADK fails the run unless a callback answers for it)."""


CURRENT_RUN: contextvars.ContextVar[RunCalls | None] = contextvars.ContextVar("levelfield_adk_run", default=None)
_ENCLOSING: contextvars.ContextVar[str | None] = contextvars.ContextVar("levelfield_adk_enclosing", default=None)
_PLUGIN_NAME = "levelfield_inner_calls"


def install_inner_calls(managers: list[Any]) -> bool:
    """Register the plugin that records AgentTool inner calls on these runners' plugin managers (once each).

    False when there is no manager to register it on.
    """
    managers = [m for m in managers if m is not None and callable(getattr(m, "register_plugin", None))]
    if not managers:
        return False
    from google.adk.plugins.base_plugin import BasePlugin

    class InnerCallsPlugin(BasePlugin):
        async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> None:
            run = CURRENT_RUN.get()
            if run is None:
                return None
            if tool_context.session.id == run.session_id:
                # An outer call: calls made while it runs (in this task) belong under it.
                _ENCLOSING.set(tool_context.function_call_id)
                return None
            enclosing = _ENCLOSING.get()
            if enclosing is not None:
                call = ToolCall(tool_name=tool.name, tool_input=dict(tool_args or {}), id=tool_context.function_call_id,
                                agent=tool_context.agent_name)
                run.calls.setdefault(enclosing, []).append(call)
            return None

        async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any) -> None:
            run = CURRENT_RUN.get()
            enclosing = _ENCLOSING.get()
            if run is None or enclosing is None or tool_context.session.id == run.session_id:
                return None
            for call in run.calls.get(enclosing, []):
                if call.id == tool_context.function_call_id and call.tool_output is None:
                    call.tool_output = result.get("result", result) if isinstance(result, Mapping) and set(result) == {"result"} else result
            return None

        async def on_tool_error_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any,
                                         error: Exception) -> None:
            run = CURRENT_RUN.get()
            if run is not None and tool_context.function_call_id:
                run.tool_errors[tool_context.function_call_id] = f"{type(error).__name__}: {error}"
            return None  # the agent's own callbacks, if any, decide what the model sees

        async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
            run = CURRENT_RUN.get()
            if run is not None and callback_context.session.id != run.session_id and not getattr(llm_response, "partial", False):
                run.model_calls += 1
            return None

    for manager in managers:
        if manager.get_plugin(_PLUGIN_NAME) is None:
            manager.register_plugin(InnerCallsPlugin(name=_PLUGIN_NAME))
    return True


def with_tool_errors(output: AgentOutput, run: RunCalls) -> AgentOutput:
    """``output`` with the exception of each tool that raised as its call's ``error`` (where none is recorded)."""
    for call in output.trajectory:
        if call.error is None and call.id in run.tool_errors:
            call.error = run.tool_errors[call.id]
    return output


def with_inner_calls(output: AgentOutput, inner: RunCalls) -> AgentOutput:
    """``output`` with each AgentTool's inner calls after the call that ran it (each marked
    ``within`` that call's id and attributed to the AgentTool's agent: ADK-named metrics leave them
    out, as ADK's event stream does), the hand-offs to and back from the AgentTool's agent where that
    call was made, and its model calls counted (``inner_model_calls`` says how many of them)."""
    output.model_calls = (output.model_calls or 0) + inner.model_calls
    if inner.model_calls:
        output.inner_model_calls = inner.model_calls
    if not inner.calls:
        return output
    trajectory: list[ToolCall] = []
    for call in output.trajectory:
        trajectory.append(call)
        trajectory.extend(c.model_copy(update={"within": call.id}) for c in inner.calls.get(call.id or "", []))
    # Where each outer call was made among the hand-offs: the events read again, call by call.
    team, at = Team(), {}
    for event in output.raw if isinstance(output.raw, list) else []:
        if isinstance(event, Mapping) and not event.get("partial"):
            team.add(event)
            for part in (event.get("content") or {}).get("parts") or []:
                if isinstance(part, Mapping) and isinstance(part.get("function_call"), Mapping):
                    at.setdefault(part["function_call"].get("id"), len(team.handoffs))
    handoffs = list(output.handoffs)
    outer_agents = {c.id: c.agent for c in output.trajectory}
    for call_id in sorted(inner.calls, key=lambda k: at.get(k, len(handoffs)), reverse=True):
        outer, inside = outer_agents.get(call_id), inner.calls[call_id][0].agent
        if outer and inside and outer != inside:
            index = at.get(call_id, len(handoffs))
            handoffs[index:index] = [Handoff(from_agent=outer, to_agent=inside), Handoff(from_agent=inside, to_agent=outer)]
    output.trajectory, output.handoffs = trajectory, handoffs
    return output


# --- ADK's own error logs -----------------------------------------------------------------

_ADK_ERROR_LOGGERS = (
    "google_adk.google.adk.runners",
    "google_adk.google.adk.workflow._node_runner",
    "google_adk.google.adk.plugins.plugin_manager",
)


class _RecordedByTheRun(logging.Filter):
    """Leaves out ADK's error logs with a traceback while a levelfield run is in progress: the run
    records the failure (its error and the whole traceback, ``AgentRun.traceback``), so one fault
    is one line on the terminal, not some 200 lines of ADK's tracebacks for each run it fails."""

    def filter(self, record: logging.LogRecord) -> bool:
        from .._core.run.scope import CURRENT_SCOPE

        return not (record.exc_info and CURRENT_SCOPE.get() is not None)


def quiet_adk_errors() -> None:
    """Install :class:`_RecordedByTheRun` on the loggers ADK reports a failed run on (once each)."""
    for name in _ADK_ERROR_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RecordedByTheRun) for f in logger.filters):
            logger.addFilter(_RecordedByTheRun())


# --- errors -------------------------------------------------------------------------------


def is_transient(exc: BaseException) -> bool:
    """Google API errors worth retrying: 429 (quota), 503 (unavailable), deadlines."""
    try:
        from google.api_core import exceptions as api
    except ImportError:  # pragma: no cover - google-api-core comes with google-cloud-aiplatform
        api = None
    if api is not None and isinstance(
        exc, (api.TooManyRequests, api.ResourceExhausted, api.ServiceUnavailable, api.DeadlineExceeded, api.GatewayTimeout)
    ):
        return True
    # google-genai's APIError (raised by ADK's Gemini calls) carries the HTTP status as ``code``.
    module = type(exc).__module__ or ""
    return module.startswith("google.genai") and getattr(exc, "code", None) in TRANSIENT_CODES

