"""What the A2A preflight's probes were answered, read: JSON-RPC framing, results normalized across
A2A 0.3 and 1.0 into events, and the shape of results and parts checked with a2a-sdk's own types."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

__all__: list[str] = []  # private to the preflight: the probes read answers with these helpers


@dataclass
class _Event:
    kind: str
    """task, message, status or artifact."""
    state: str | None = None
    """The task state it carries (0.3 spelling: completed, input-required, ...)."""
    parts: list[dict[str, Any]] = field(default_factory=list)
    task_id: str | None = None


def _state(raw: Any) -> str | None:
    if not isinstance(raw, str) or not raw:
        return None
    return raw.removeprefix("TASK_STATE_").lower().replace("_", "-").replace("cancelled", "canceled")


def _message_parts(message: Any) -> list[dict[str, Any]]:
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _task_parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for message in task.get("history") or []:
        if isinstance(message, dict) and message.get("role") not in ("user", "ROLE_USER"):
            parts += _message_parts(message)
    for artifact in task.get("artifacts") or []:
        parts += _message_parts(artifact)
    status = found if isinstance(found := task.get("status"), dict) else {}
    parts += _message_parts(status.get("message"))
    return parts


def _events_of(result: Any, version: str) -> list[_Event]:
    """The event(s) one JSON-RPC result holds, or [] when it has no recognizable shape."""
    if not isinstance(result, dict):
        return []
    if version == "0.3":
        kind = result.get("kind")
        payloads = {"task": "task", "message": "message", "status-update": "status", "artifact-update": "artifact"}
        wrapped = {payloads[kind]: result} if kind in payloads else {}
    else:
        keys = {"task": "task", "message": "message", "statusUpdate": "status", "artifactUpdate": "artifact"}
        wrapped = {keys[k]: v for k, v in result.items() if k in keys and isinstance(v, dict)}
    out = []
    for kind, body in wrapped.items():
        status = found if isinstance(found := body.get("status"), dict) else {}
        if kind == "task":
            out.append(_Event("task", _state(status.get("state")), _task_parts(body), body.get("id")))
        elif kind == "message":
            out.append(_Event("message", None, _message_parts(body), body.get("taskId")))
        elif kind == "status":
            out.append(_Event("status", _state(status.get("state")), _message_parts(status.get("message")), body.get("taskId")))
        else:
            out.append(_Event("artifact", None, _message_parts(body.get("artifact")), body.get("taskId")))
    return out


def _task_event(result: Any, version: str) -> _Event | None:
    """The task a GetTask / CancelTask result holds (1.0 answers the Task itself, 0.3 a task with kind)."""
    if not isinstance(result, dict):
        return None
    if version == "0.3":
        events = _events_of(result, version)
        return events[0] if events and events[0].kind == "task" else None
    if "status" not in result and "id" not in result:
        return None
    return _events_of({"task": result}, version)[0]


def _shape_error(result: Any, version: str, streaming: bool) -> str | None:
    """Why ``result`` is not a valid answer in ``version``, checked with a2a-sdk's own types."""
    if version == "0.3":
        from a2a.compat.v0_3 import types as v03
        from pydantic import ValidationError

        models: dict[str, Any] = {"task": v03.Task, "message": v03.Message, "status-update": v03.TaskStatusUpdateEvent,
                  "artifact-update": v03.TaskArtifactUpdateEvent}
        kind = result.get("kind") if isinstance(result, dict) else None
        allowed = models if streaming else {k: models[k] for k in ("task", "message")}
        if kind not in allowed:
            return f"the result's kind is {kind!r}, expected one of {', '.join(allowed)}"
        try:
            allowed[kind].model_validate(result)
        except ValidationError as exc:
            first = exc.errors()[0]
            return f"{kind}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        return None
    from a2a.types.a2a_pb2 import SendMessageResponse, StreamResponse
    from google.protobuf.json_format import ParseDict, ParseError

    if not isinstance(result, dict):
        return f"the result is a {type(result).__name__}, expected an object"
    try:
        parsed = ParseDict(copy.deepcopy(result), StreamResponse() if streaming else SendMessageResponse())
    except (ParseError, ValueError, TypeError) as exc:
        return str(exc).splitlines()[0][:300]
    if parsed.WhichOneof("payload") is None:
        return "the result holds none of " + ("task, message, statusUpdate, artifactUpdate" if streaming else "task, message")
    return None


def _part_error(part: dict[str, Any], version: str) -> str | None:
    """Why one part is not a valid part: it must hold exactly one kind of content."""
    if version == "0.3":
        kind = part.get("kind")
        need = {"text": "text", "data": "data", "file": "file"}
        if kind not in need:
            return f"a part's kind is {kind!r}, expected text, data or file"
        if need[kind] not in part:
            return f"a {kind} part has no {need[kind]!r} field"
        if kind == "text" and not isinstance(part["text"], str):
            return "a text part's text is not a string"
        if kind == "data" and not isinstance(part["data"], dict):
            return "a data part's data is not an object"
        return None
    held = [k for k in ("text", "raw", "url", "data") if k in part]
    if len(held) != 1:
        return f"a part holds {' and '.join(held) if held else 'no content'}; exactly one of text, raw, url, data is required"
    if "kind" in part:
        return "a part has a 'kind' field: that is the 0.3 shape, not 1.0's"
    return None


_CALL_ARG_KEYS = ("args", "arguments", "input", "parameters", "tool_input")


def _tool_calls_in(parts: list[dict[str, Any]]) -> str:
    """adk / data / none: how the parts carry tool calls."""
    plain = False
    for part in parts:
        meta = found if isinstance(found := part.get("metadata"), dict) else {}
        if meta.get("adk_type") in ("function_call", "function_response"):
            return "adk"
        data = part.get("data")
        if isinstance(data, dict) and (
            ("name" in data and any(k in data for k in _CALL_ARG_KEYS))
            or any(k in data for k in ("tool_calls", "function_call", "tool_call", "functionCall"))
        ):
            plain = True
    return "data" if plain else "none"



def _framing_error(body: Any, rid: Any) -> str | None:
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        return "the answer is not a JSON-RPC 2.0 response (no \"jsonrpc\": \"2.0\")"
    if ("result" in body) == ("error" in body):
        return "a JSON-RPC response must hold exactly one of result and error"
    if body.get("id") != rid:
        return f"the response id {body.get('id')!r} is not the request's {rid!r}"
    return None


def _sse_event(data: str, rid: Any) -> tuple[Any, str | None]:
    try:
        body = json.loads(data)
    except ValueError:
        return None, f"an SSE data field is not JSON: {data[:80]!r}"
    framing = _framing_error(body, rid)
    if framing:
        return None, framing
    if "error" in body:
        err = body["error"] if isinstance(body["error"], dict) else {}
        if err.get("code") not in _PROTOCOL_CODES:
            return None, f"{_AGENT_ERROR} {err.get('code')} ({err.get('message')})"
        return None, f"the stream carried JSON-RPC error {err.get('code')}: {err.get('message')}"
    return body["result"], None


_AGENT_ERROR = "the agent answered the probe with error"
_PROTOCOL_CODES = (-32700, -32600, -32601, -32602)
"""JSON-RPC errors to a well-formed probe that mean the server broke the protocol, not that the agent failed."""
