"""What a Vertex AI Agent Engine operation returned (or streamed), read into an ``AgentOutput``.

Each template has its own output shape:

- ``LangchainAgent``: ``{"input", "output"[, "intermediate_steps"]}``, the steps holding
  serialized ``AgentAction``s (read exactly as Vertex's own evaluation reads them);
- ``LanggraphAgent``: ``{"messages": [serialized messages]}`` (calls from AI messages, outputs
  from tool messages), or the per-node chunks of its ``stream_query``;
- ``AdkApp``: a stream of ADK event dicts whose ``content.parts`` hold ``function_call``,
  ``function_response`` and ``text``, with ``usage_metadata`` and ``author``
  (read by ``levelfield.adapters.adk_events``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.data.token_counts import langchain_usage
from .._core.data.types import AgentOutput, ToolCall, Usage, content_text
from .._core.errors import AdapterError, AgentOutputError, TransientAgentError
from .adk_events import TRANSIENT_CODES, event_error, is_adk_event, output_from_events
from .function import output_from_value

__all__ = ["parse_agent_engine_output"]

_EXPECTED = (
    "a LangchainAgent dict {'output', 'intermediate_steps'}, a LanggraphAgent dict {'messages': [...]}, "
    "a stream of ADK event dicts, or Vertex's {'response', 'predicted_trajectory'}"
)


def _lc(obj: Any) -> tuple[str, dict[str, Any]]:
    """(class or type name, fields) of a LangChain object serialized by ``dumpd`` or given as a plain dict."""
    if isinstance(obj, Mapping):
        if obj.get("lc") is not None and isinstance(obj.get("id"), list):
            return str(obj["id"][-1]), dict(obj.get("kwargs") or {})
        return str(obj.get("type") or obj.get("role") or ""), dict(obj)
    return type(obj).__name__, dict(getattr(obj, "__dict__", {}))


def _kind(name: str) -> str:
    name = name.lower()
    for kind, names in (
        ("human", ("humanmessage", "humanmessagechunk", "human", "user")),
        ("ai", ("aimessage", "aimessagechunk", "ai", "assistant")),
        ("tool", ("toolmessage", "toolmessagechunk", "tool")),
    ):
        if name in names:
            return kind
    return name


def _tool_input(value: Any) -> Any:
    # LangChain passes a single-string tool input as a plain string (``__arg1``); a JSON-object
    # string is parsed by ToolCall itself.
    if isinstance(value, str):
        stripped = value.strip()
        if not (stripped.startswith("{") and stripped.endswith("}")):
            return {"__arg1": value}
    return value


def _from_executor(result: Mapping[str, Any], agent: str) -> AgentOutput:
    """A LangchainAgent (AgentExecutor) result: the output, and the trajectory from its steps."""
    calls = []
    for index, step in enumerate(result.get("intermediate_steps") or []):
        try:
            action, observation = step[0], step[1]
            _, fields = _lc(action)
            # The same fields Vertex's parse_intermediate_steps reads: kwargs.tool, kwargs.tool_input.
            calls.append(
                ToolCall(
                    tool_name=fields["tool"],
                    tool_input=_tool_input(fields.get("tool_input")),
                    tool_output=observation,
                    id=fields.get("tool_call_id"),
                )
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise AgentOutputError(
                f"agent {agent!r} returned intermediate step {index} that is not a serialized "
                f"(AgentAction, observation) pair: {exc!s:.200}"
            ) from None
    return AgentOutput(response=content_text(result.get("output")), trajectory=calls, raw=result)


def _from_messages(messages: list[Any]) -> AgentOutput:
    """A LanggraphAgent state: the messages after the last human one are this turn's."""
    parsed = [_lc(m) for m in messages]
    start = 0
    for index, (name, _) in enumerate(parsed):
        if _kind(name) == "human":
            start = index + 1
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    texts: list[str] = []
    last_ai_text = ""
    usage: Usage | None = None
    for name, fields in parsed[start:]:
        kind = _kind(name)
        if kind == "ai":
            last_ai_text = content_text(fields.get("content"))
            if last_ai_text:
                texts.append(last_ai_text)
            for call in fields.get("tool_calls") or []:
                tool_call = ToolCall(tool_name=call["name"], tool_input=call.get("args") or {}, id=call.get("id"))
                calls.append(tool_call)
                if tool_call.id:
                    by_id[tool_call.id] = tool_call
            counts = fields.get("usage_metadata")
            if isinstance(counts, Mapping):
                meta = fields.get("response_metadata") or {}
                model = meta.get("model_name") or meta.get("model") if isinstance(meta, Mapping) else None
                spent = langchain_usage(counts, str(model) if model else None)
                usage = spent + usage if spent is not None else usage
        elif kind == "tool":
            target = by_id.get(fields.get("tool_call_id") or "")
            if target is not None:
                target.tool_output = content_text(fields.get("content"))
                if fields.get("status") == "error":
                    target.error = target.tool_output
    intermediate = texts[:-1] if texts and texts[-1] == last_ai_text else texts
    return AgentOutput(
        response=last_ai_text, trajectory=calls, intermediate_responses=intermediate, usage=usage, raw=messages
    )


def _from_chunks(chunks: list[Any], agent: str) -> AgentOutput:
    """The chunks of a LangChain or LangGraph ``stream_query``."""
    if any(isinstance(c, Mapping) and "output" in c for c in chunks):
        # AgentExecutor: the last chunk holds the output (and the steps, when it returns them);
        # otherwise the "actions" chunks say which tools were called.
        final = dict(next(c for c in reversed(chunks) if isinstance(c, Mapping) and "output" in c))
        if "intermediate_steps" not in final:
            actions = [a for c in chunks if isinstance(c, Mapping) for a in c.get("actions") or []]
            final["intermediate_steps"] = [[a, None] for a in actions]
        return _from_executor(final, agent)
    messages: list[Any] = []
    for chunk in chunks:
        if not isinstance(chunk, Mapping):
            raise AgentOutputError(f"agent {agent!r} streamed a {type(chunk).__name__}; expected {_EXPECTED}")
        if "messages" in chunk:  # stream_mode="values": the whole state each time
            messages = list(chunk["messages"])
            continue
        for update in chunk.values():  # stream_mode="updates": {node: {"messages": [...]}}
            if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
                messages.extend(update["messages"])
    if not messages:
        raise AgentOutputError(f"agent {agent!r} streamed chunks with no messages (keys {_keys(chunks)}); expected {_EXPECTED}")
    return _from_messages(messages)


def _keys(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(sorted(map(str, value))[:10])
    if isinstance(value, list):
        return str(sorted({k for item in value if isinstance(item, Mapping) for k in map(str, item)})[:10])
    return type(value).__name__


def parse_agent_engine_output(value: Any, agent: str = "agent") -> AgentOutput:
    """Read what an Agent Engine operation returned (or streamed, as a list) into an ``AgentOutput``.

    Anything that is not a known shape raises ``AgentOutputError`` naming what was received.
    """
    if isinstance(value, AgentOutput):
        return value
    if isinstance(value, str):
        return AgentOutput(response=value, raw=value)
    if isinstance(value, list):
        if not value:
            raise AgentOutputError(f"agent {agent!r} streamed nothing; expected {_EXPECTED}")
        if any(is_adk_event(item) for item in value):
            return output_from_events(value, agent)
        return _from_chunks(value, agent)
    if isinstance(value, Mapping):
        if "output" in value:
            return _from_executor(value, agent)
        if isinstance(value.get("messages"), list):
            return _from_messages(value["messages"])
        if is_adk_event(value):
            return output_from_events([value], agent)
        if "response" in value:
            return output_from_value(dict(value), agent)
        error = event_error(value)
        if error is not None:
            text = f"agent {agent!r} returned an error" + (f" ({error[1]})" if error[1] else "") + f": {error[0]}"
            if error[1] in TRANSIENT_CODES:
                raise TransientAgentError(text)
            raise AdapterError(text, error_type="agent_error")
        raise AgentOutputError(f"agent {agent!r} returned a dict with keys {_keys(value)}; expected {_EXPECTED}")
    raise AgentOutputError(f"agent {agent!r} returned {type(value).__name__}; expected {_EXPECTED}")
