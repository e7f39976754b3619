"""Reading an A2A answer: its tasks, messages, status and artifact events gathered into one turn,
and that turn as the normalized output (response, trajectory from ADK-marked data parts, usage,
hand-offs between the agents that authored it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..._core.data.token_counts import usage_from_counts
from ..._core.data.types import AgentOutput, Handoff, ToolCall, Usage

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import StreamResponse, Task

__all__ = [
    "TrajectoryExtractor",
    "adk_trajectory",
    "restore_ints",
    "ADK_TYPE_KEY",
    "FUNCTION_CALL",
    "FUNCTION_RESPONSE",
    "LEVELFIELD_KEY",
    "TOOL_ERROR_KEY",
    "ERROR_TYPE_KEY",
    "USAGE_KEY",
    "MODEL_KEY",
    "AUTHOR_KEYS",
]

ADK_TYPE_KEY = "adk_type"
"""Part-metadata key ADK uses to say what a data part holds."""
FUNCTION_CALL = "function_call"
"""``adk_type`` of a tool call: data ``{name, args, id}``."""
FUNCTION_RESPONSE = "function_response"
"""``adk_type`` of a tool result: data ``{name, response, id}``."""
LEVELFIELD_KEY = "levelfield"
"""Metadata key levelfield's own client and server use to pass what A2A has no field for."""
TOOL_ERROR_KEY = "levelfield_tool_error"
"""Part-metadata key of a tool error (function_response parts of ``levelfield serve``)."""
ERROR_TYPE_KEY = "levelfield_error_type"
"""Status-message metadata key with the error type of a failed run (``levelfield serve``)."""
USAGE_KEY = "adk_usage_metadata"
"""Metadata key ADK uses for token counts."""
MODEL_KEY = "adk_model_version"
"""Metadata key naming the model that spent the tokens, when a server sends it."""
AUTHOR_KEYS = ("adk_author", "levelfield_agent", "agent_name", "author", "agent")
"""Metadata keys that name the (sub-)agent behind a part, message or artifact, most specific first:
ADK's ``adk_author``, levelfield's own, then the spellings other servers use."""

TrajectoryExtractor = Callable[[list[dict[str, Any]]], list[ToolCall]]
"""``fn(parts) -> trajectory``: every agent part of one turn, in order, as JSON dicts
(``{"text": ...}`` or ``{"data": ..., "metadata": {...}}``), whole floats already restored to ints."""


def restore_ints(value: Any) -> Any:
    """``value`` with every whole float turned back into an int, recursively.

    A2A data parts are protobuf ``Value``s, which store every number as a double, so ``23``
    arrives as ``23.0``. A genuine ``1.0`` comes back as ``1`` too; the matcher treats them alike.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: restore_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_ints(v) for v in value]
    return value


def _unwrap_result(response: Any) -> Any:
    # ADK wraps a tool's non-dict return value as {"result": value}; give back the value.
    if isinstance(response, dict) and set(response) == {"result"}:
        return response["result"]
    return response


def adk_trajectory(parts: list[dict[str, Any]]) -> list[ToolCall]:
    """The tool calls in ``parts`` marked the ADK way, outputs attached, deduplicated by call id.

    A ``function_response`` goes to the call with the same id, else to the earliest call of the
    same name still without an output; a response with no call at all is kept as a call.
    """
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    answered: set[int] = set()
    for part in parts:
        meta = part.get("metadata") or {}
        kind = meta.get(ADK_TYPE_KEY)
        data = part.get("data")
        if kind not in (FUNCTION_CALL, FUNCTION_RESPONSE) or not isinstance(data, dict) or not data.get("name"):
            continue
        call_id = data.get("id") or None
        if kind == FUNCTION_CALL:
            if call_id and call_id in by_id:
                continue  # the same call seen again (status update, then task history)
            args = data.get("args")
            call = ToolCall(
                tool_name=data["name"],
                tool_input=args if isinstance(args, dict) else {},
                id=call_id,
                agent=_author(meta),
            )
            calls.append(call)
            if call_id:
                by_id[call_id] = call
            continue
        target = by_id.get(call_id) if call_id else None
        if target is None:
            target = next(
                (c for c in calls if c.tool_name == data["name"] and id(c) not in answered and (not call_id or not c.id)),
                None,
            )
        if target is None:
            target = ToolCall(tool_name=data["name"], id=call_id)
            calls.append(target)
            if call_id:
                by_id[call_id] = target
        if id(target) in answered:
            continue  # a response seen twice
        answered.add(id(target))
        target.tool_output = _unwrap_result(data.get("response"))
        if meta.get(TOOL_ERROR_KEY):
            target.error = str(meta[TOOL_ERROR_KEY])
    return calls


def _author(meta: Mapping[str, Any]) -> str | None:
    for key in AUTHOR_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _usage_from(meta: Mapping[str, Any] | None) -> Usage | None:
    raw = (meta or {}).get(USAGE_KEY)
    if not isinstance(raw, dict):
        return None

    # The model: levelfield's server names it in the counts; ADK events carry ``model_version``.
    model = raw.get("model") or (meta or {}).get(MODEL_KEY) or (meta or {}).get("model_version")
    # Gemini's counts (ADK's ``usageMetadata``) or levelfield's own ``{input_tokens, cache_read_tokens, ...}``.
    usage = usage_from_counts(raw, str(model) if model else None) or Usage(model=str(model) if model else None)
    shares = raw.get("by_model")
    if isinstance(shares, dict):
        try:
            usage.by_model = {str(k): Usage.model_validate(v) for k, v in shares.items()}
        except ValueError:
            pass  # an unreadable breakdown leaves the tokens unattributed (unknown cost), not a failed run
    return usage


class _Turn:
    """Everything one turn's events said, deduplicated: messages by id, artifacts by id."""

    def __init__(self, extractor: TrajectoryExtractor) -> None:
        self.extractor = extractor
        # (kind, id) -> parts; insertion order is the order things were first seen.
        self.items: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
        self.artifact_usage: dict[str, Usage] = {}
        self.event_usage: Usage | None = None
        self.state: str | None = None
        self.status_text = ""
        self.status_meta: dict[str, Any] = {}
        self.task_id: str | None = None
        self.message_only = False
        self.answered = False
        """Whether the answer had a text part or a data part that is not a tool call (set by output())."""
        self.ended_running = False
        """The answer (a blocking send, or the stream) ended while the task was still submitted or working."""
        self.empty_parts = 0
        """Parts with no content at all (none of text, raw, url, data): a shape the spec does not allow."""
        self._anon = 0

    # -- reading events -------------------------------------------------------------------
    def add(self, event: StreamResponse) -> None:
        from google.protobuf.json_format import MessageToDict

        if event.HasField("task"):
            self.add_task(event.task)
        elif event.HasField("message"):
            self.message_only = True
            self._add_message(event.message)
        elif event.HasField("status_update"):
            update = event.status_update
            self.task_id = update.task_id or self.task_id
            meta = MessageToDict(update.metadata) if update.HasField("metadata") else {}
            # ADK names the author on the event, not on its message.
            self._set_status(update.status, _author(meta))
            usage = _usage_from(meta) if meta else None
            if usage is not None:
                self.event_usage = usage + self.event_usage
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            self.task_id = update.task_id or self.task_id
            self._add_artifact(update.artifact, append=update.append)

    def add_task(self, task: Task) -> None:
        self.task_id = task.id or self.task_id
        for message in task.history:
            self._add_message(message)
        for artifact in task.artifacts:
            self._add_artifact(artifact, append=False)
        self._set_status(task.status)

    def _set_status(self, status: Any, author: str | None = None) -> None:
        from a2a.types.a2a_pb2 import TaskState

        self.state = TaskState.Name(status.state)
        if status.HasField("message"):
            self._add_message(status.message, author)
            parts = _parts(status.message.parts)
            self.status_text = _text(parts)
            self.status_meta = _struct(status.message, "metadata")
        else:
            self.status_text, self.status_meta = "", {}

    def _key(self, kind: str, item_id: str) -> tuple[str, str]:
        if item_id:
            return kind, item_id
        self._anon += 1
        return kind, f"#{self._anon}"

    def _add_message(self, message: Any, author: str | None = None) -> None:
        from a2a.types.a2a_pb2 import Role

        if message.role == Role.ROLE_USER:
            return
        key = self._key("message", message.message_id)
        if key not in self.items:
            self.items[key] = [self._counted(_parts(message.parts, _author(_struct(message, "metadata")) or author))]

    def _counted(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.empty_parts += sum(1 for p in parts if not any(k in p for k in _CONTENT_KEYS))
        return parts

    def _add_artifact(self, artifact: Any, *, append: bool) -> None:
        key = self._key("artifact", artifact.artifact_id)
        meta = _struct(artifact, "metadata")
        chunk = self._counted(_parts(artifact.parts, _author(meta)))
        if append and key in self.items:
            self.items[key].append(chunk)
        else:
            self.items[key] = [chunk]
        usage = _usage_from(meta)
        if usage is not None:
            self.artifact_usage[key[1]] = usage

    # -- the turn's output ------------------------------------------------------------------
    def output(self, raw: Any = None) -> AgentOutput:
        parts = [p for chunks in self.items.values() for chunk in chunks for p in chunk]
        trajectory = self.extractor(parts)
        message_texts: list[str] = []
        artifact_texts: list[str] = []
        data: dict[str, Any] = {}  # kind -> the last data part that is not a tool call
        self.answered = False
        for (kind, _), chunks in self.items.items():
            text = "".join(_text(chunk) for chunk in chunks)
            if text:
                (artifact_texts if kind == "artifact" else message_texts).append(text)
            for part in (p for chunk in chunks for p in chunk):
                if "text" in part:
                    self.answered = True
                elif "data" in part and (part.get("metadata") or {}).get(ADK_TYPE_KEY) not in _TOOL_KINDS:
                    data[kind] = part["data"]
        if artifact_texts:
            response, intermediate = artifact_texts[-1], message_texts + artifact_texts[:-1]
        elif message_texts:
            response, intermediate = message_texts[-1], message_texts[:-1]
        elif data:
            # A reply with only structured data: its JSON is the answer.
            self.answered = True
            answer = data.get("artifact", data.get("message"))
            response, intermediate = json.dumps(answer, ensure_ascii=False, sort_keys=True), []
        else:
            response, intermediate = "", []
        if intermediate and intermediate[-1] == response:
            intermediate = intermediate[:-1]  # a server that repeats its answer in the final status
        usage: Usage | None = self.event_usage
        for u in self.artifact_usage.values():
            usage = u + usage
        return AgentOutput(
            response=response,
            trajectory=trajectory,
            intermediate_responses=intermediate,
            usage=usage,
            handoffs=_handoffs(parts),
            raw=raw,
        )


def _handoffs(parts: list[dict[str, Any]]) -> list[Handoff]:
    """Each change of author along the parts (ADK names the author of each streamed event; a
    non-streamed ADK task names none, so it shows no hand-offs)."""
    out: list[Handoff] = []
    current: str | None = None
    for part in parts:
        author = _author(part.get("metadata") or {})
        if author is None or author == current:
            continue
        if current is not None:
            out.append(Handoff(from_agent=current, to_agent=author))
        current = author
    return out


def _struct(message: Any, field: str) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return restore_ints(MessageToDict(getattr(message, field))) if message.HasField(field) else {}


def _parts(parts: Any, author: str | None = None) -> list[dict[str, Any]]:
    """The parts as JSON dicts; the author of their message or artifact, if any, put on each."""
    from google.protobuf.json_format import MessageToDict

    out = [restore_ints(MessageToDict(p)) for p in parts]
    if author:
        for part in out:
            meta = part.setdefault("metadata", {})
            if _author(meta) is None:
                meta[AUTHOR_KEYS[0]] = author
    return out


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(
        p["text"]
        for p in parts
        if isinstance(p.get("text"), str) and not (p.get("metadata") or {}).get("adk_thought")
    )


def _progress(turn: _Turn) -> str:
    calls = sum(
        1
        for chunks in turn.items.values()
        for chunk in chunks
        for p in chunk
        if (p.get("metadata") or {}).get(ADK_TYPE_KEY) == FUNCTION_CALL
    )
    state = f"task {turn.state.removeprefix('TASK_STATE_').lower()}" if turn.state else ""
    if not turn.items:
        return f" ({state})" if state else ""
    return f" (after {len(turn.items)} message(s) or artifact(s), {calls} tool call(s){', ' + state if state else ''})"


_CONTENT_KEYS = ("text", "raw", "url", "data")
_TOOL_KINDS = (FUNCTION_CALL, FUNCTION_RESPONSE)
