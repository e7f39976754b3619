"""The span model every trace format is read into, and one trace's spans turned into one dataset row.

Each trace reader (``mlflow``, ``otel`` with GenAI or OpenInference spans, ``langsmith``) turns its
spans into :class:`Span`; :func:`row_from_spans` turns one trace's spans into a row holding the
saved answer (response, trajectory, retrieved context, usage, latency), so a trace is scored
without running its agent again.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.data.token_counts import counted_usage
from .._core.data.types import ToolCall, Usage, content_text
from .._core.errors import TraceError

__all__ = [
    "Span",
    "TraceError",
    "row_from_spans",
    "failed_row",
    "check_complete",
    "check_parents",
    "documents_of",
    "text_of",
    "request_of",
    "parse_json",
    "hex_id",
    "json_loads",
    "count_of",
]

try:  # orjson parses trace JSON (attributes are JSON inside JSON) several times faster
    from orjson import loads as json_loads
except ImportError:  # pragma: no cover - orjson is optional
    json_loads = json.loads  # type: ignore[assignment]  # the standard library's, which takes the same text

TOOL, AGENT, RETRIEVER, LLM, OTHER = "tool", "agent", "retriever", "llm", "other"


@dataclass(slots=True)
class Span:
    """One span of a trace, whatever format it came from, with what scoring needs from it."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str = OTHER
    """``tool``, ``agent``, ``retriever``, ``llm`` or ``other``."""
    start: int = 0
    """Start time in nanoseconds since the epoch (orders tool calls)."""
    end: int | None = None
    """End time in nanoseconds; None for a span that never ended."""
    inputs: Any = None
    outputs: Any = None
    error: str | None = None
    """The error the span recorded (status ERROR or an exception event)."""
    tool_name: str | None = None
    tool_call_id: str | None = None
    agent_name: str | None = None
    documents: list[dict[str, Any]] | None = None
    """For retriever spans: the documents returned, as ``{content, doc_uri}``."""
    usage: Usage | None = None
    """For model spans: the tokens spent, in levelfield's meaning (what each format means is read into
    it by :func:`~levelfield._core.data.token_counts.counted_usage`), and the model when the span names it."""
    extra: dict[str, Any] = field(default_factory=dict)


def count_of(attrs: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` that holds a token count (OTLP JSON gives integers as strings); None when none does."""
    for key in keys:
        value = attrs.get(key)
        if value is None or isinstance(value, bool):
            continue
        try:
            return int(value)
        except (TypeError, ValueError):
            continue
    return None


def hex_id(value: Any, width: int) -> str | None:
    """A trace or span id as lowercase hex: from an int, hex text (OTLP JSON) or base64 (protobuf JSON)."""
    if type(value) is str and len(value) == width:  # the common case: already hex
        try:
            int(value, 16)
            return value.lower()
        except ValueError:
            pass
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, int):
        return f"{value:0{width}x}"
    if isinstance(value, bytes):
        return value.hex() or None
    text = str(value)
    # "0x" + hex of the width; a base64 id may itself start with "0x", so it is only stripped then
    bare = text[2:] if text[:2] in ("0x", "0X") else text
    if len(bare) == width:
        try:
            int(bare, 16)
            return bare.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) * 2 == width else text


def parse_json(value: Any) -> Any:
    """A JSON-encoded string decoded; anything else (or text that is not JSON) as it was."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[\"" or text in ("true", "false", "null") or text[:1].isdigit() or text[:1] == "-":
            try:
                return json_loads(text)
            except ValueError:  # json's and orjson's decode errors are ValueErrors
                return value
    return value


_TEXT_KEYS = ("response", "output", "answer", "content", "text", "result", "final_output", "output_text")
_REQUEST_KEYS = ("request", "query", "question", "input", "prompt", "user_input", "message")


def text_of(value: Any) -> str | None:
    """The text of a span's output: a string, the last assistant message, or a text-like field."""
    original = value if isinstance(value, str) else None
    value = _plain(parse_json(value))
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("data"), Mapping) and "content" in value["data"]:  # LangChain message_to_dict
            return text_of(value["data"])
        if isinstance(value.get("kwargs"), Mapping) and "content" in value["kwargs"]:  # LangChain dumpd
            return text_of(value["kwargs"])
        if "generations" in value and isinstance(value["generations"], list) and value["generations"]:
            last = value["generations"][-1]
            last = last[-1] if isinstance(last, list) and last else last
            if isinstance(last, Mapping):
                return text_of(last.get("message") or last.get("text"))
        if "messages" in value and isinstance(value["messages"], list) and value["messages"]:
            return text_of(value["messages"][-1])
        if "choices" in value and isinstance(value["choices"], list) and value["choices"]:
            choice = value["choices"][0]
            if isinstance(choice, Mapping):
                return text_of(choice.get("message") or choice.get("text"))
        if "parts" in value and isinstance(value["parts"], list):  # GenAI semconv message
            texts = [str(p.get("content", "")) for p in value["parts"] if isinstance(p, Mapping) and p.get("type") == "text"]
            return "".join(texts) if texts else None
        for key in _TEXT_KEYS:
            if key in value and value[key] is not None:
                inner = value[key]
                return content_text(inner) if isinstance(inner, list) else text_of(inner)
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1 and len(value) == 1:
            return strings[0]
        return original if original is not None else json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, list):
        if value and all(isinstance(m, Mapping) and ("role" in m or "type" in m) for m in value):
            return text_of(value[-1])
        if value and isinstance(value[-1], (list, tuple)) and len(value[-1]) == 2 and isinstance(value[-1][0], str):
            return content_text(value[-1][1])
        return original if original is not None else json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _plain(value: Any) -> Any:
    """A message object (LangChain's ``BaseMessage`` in a run tree) as ``{role, content}``."""
    if not isinstance(value, (Mapping, str, list, tuple)) and hasattr(value, "content") and hasattr(value, "type"):
        return {"role": value.type, "content": value.content}
    return value


def _message(m: Any) -> tuple[str, str] | None:
    """(role, text) of one message in any common shape: OpenAI/GenAI dicts, LangChain dumps, (role, text) pairs."""
    m = _plain(m)
    if isinstance(m, (list, tuple)) and len(m) == 2 and isinstance(m[0], str):
        return _ROLES.get(m[0], m[0]), content_text(m[1])
    if not isinstance(m, Mapping):
        return None
    if isinstance(m.get("data"), Mapping) and "content" in m["data"]:  # LangChain message_to_dict
        m = {**m["data"], "type": m.get("type", m["data"].get("type"))}
    elif isinstance(m.get("kwargs"), Mapping) and "content" in m["kwargs"]:  # LangChain dumpd
        m = m["kwargs"]
    role = m.get("role") or m.get("type") or "user"
    return _ROLES.get(role, role), text_of(m) or ""


_ROLES = {"human": "user", "ai": "assistant", "model": "assistant"}


def _messages(value: list[Any]) -> list[dict[str, str]] | None:
    if len(value) == 1 and isinstance(value[0], list) and value[0] and not isinstance(value[0][0], str):
        value = value[0]  # LangChain batches: [[message, ...]]
    read = [_message(m) for m in value]
    found = [f for f in read if f is not None]
    if not found or len(found) < len(read):
        return None
    users = [i for i, (role, _) in enumerate(found) if role == "user"]
    if not users:
        return None
    return [{"role": role, "content": text} for role, text in found[: users[-1] + 1]]


def request_of(value: Any) -> Any:
    """A root span's input as a dataset ``request``: text, ``{"messages": [...]}`` or ``{"query", "history"}``."""
    value = parse_json(value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        messages = _messages(value)
        if messages is not None:
            return messages[-1]["content"] if len(messages) == 1 else {"messages": messages}
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, Mapping):
        if "messages" in value and isinstance(value["messages"], list):
            return request_of(value["messages"])
        if "query" in value and "history" in value:
            return {"query": value["query"], "history": value["history"]}
        for key in _REQUEST_KEYS:
            if key in value and value[key] is not None:
                return request_of(value[key])
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1 and len(value) == 1:
            return strings[0]
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def documents_of(value: Any) -> list[dict[str, Any]] | None:
    """A retriever's output as ``[{content, doc_uri}]``: LangChain/MLflow documents or Databricks chunks."""
    value = parse_json(value)
    if isinstance(value, Mapping):
        for key in ("documents", "docs", "chunks", "retrieved_context", "output"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            return None
    if not isinstance(value, list):
        return None
    docs = []
    for item in value:
        item = parse_json(item)
        if isinstance(item, str):
            docs.append({"content": item, "doc_uri": None})
            continue
        if not isinstance(item, Mapping):
            continue
        if "kwargs" in item and isinstance(item["kwargs"], Mapping):  # LangChain's serialized Document
            item = item["kwargs"]
        metadata = parse_json(item.get("metadata")) or {}
        if not isinstance(metadata, Mapping):
            metadata = {}
        uri = item.get("doc_uri") or metadata.get("doc_uri") or metadata.get("source") or metadata.get("uri")
        uri = uri or metadata.get("url") or item.get("id") or metadata.get("id")
        content = item.get("content", item.get("page_content", item.get("text")))
        docs.append({"content": None if content is None else str(content), "doc_uri": None if uri is None else str(uri)})
    return docs


def _owner(span: Span, by_id: Mapping[str, Span]) -> str | None:
    """The name of the nearest agent span above ``span`` (the agent that made the call)."""
    seen = 0
    parent = by_id.get(span.parent_id) if span.parent_id else None
    while parent is not None and seen < 1000:
        if parent.kind == AGENT:
            return parent.agent_name or parent.name
        parent = by_id.get(parent.parent_id) if parent.parent_id else None
        seen += 1
    return span.agent_name if span.kind != AGENT else None


def _tool_input(value: Any) -> dict[str, Any]:
    value = parse_json(value)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return {"input": value}


def check_complete(trace_id: str, spans: Sequence[Span]) -> None:
    """Raise :class:`TraceError` naming the trace and span when the trace cannot be scored as it is."""
    if not spans:
        raise TraceError(f"trace {trace_id}: has no spans")
    for span in spans:
        if span.end is None:
            raise TraceError(
                f"trace {trace_id}, span {span.name!r} ({span.span_id}): never ended (no end time); "
                "export the trace after the agent has finished"
            )


def check_parents(trace_id: str, spans: Sequence[Span]) -> None:
    """Raise :class:`TraceError` when a span names a parent the trace does not hold: a span lost on the way
    (the trace is incomplete), whose calls and answer could be missing from what would be scored."""
    ids = {s.span_id for s in spans}
    for span in spans:
        if span.parent_id and span.parent_id not in ids:
            raise TraceError(
                f"trace {trace_id}, span {span.name!r} ({span.span_id}): its parent span {span.parent_id} is not in the "
                "trace, so the trace is incomplete (a span lost in export); export the whole trace, or log it again"
            )


def row_from_spans(trace_id: str, spans: Sequence[Span], *, check: bool = True) -> dict[str, Any]:
    """One trace's spans -> one dataset row holding the saved answer.

    ``request`` and ``response`` come from the root span (the earliest span without a parent in
    the trace), or from the outermost agent or model span when the root does not say; the
    trajectory is every tool span in start order; ``retrieved_context`` is the output of the last
    retriever span to start (the last retrieval step in time); usage sums the model spans.
    """
    if check:
        check_complete(trace_id, spans)
    by_id = {s.span_id: s for s in spans}
    ordered = sorted(spans, key=lambda s: s.start)
    roots = [s for s in ordered if not s.parent_id or s.parent_id not in by_id]
    root = roots[0] if roots else ordered[0]
    # A tool span may record its input as a bare string; the model span that asked for the call
    # holds the arguments by call id.
    requested: dict[str, Any] = {}
    for s in ordered:
        if s.kind == LLM and s.extra.get("requested"):
            requested.update(s.extra["requested"])
    trajectory = [
        ToolCall(
            tool_name=s.tool_name or s.name,
            tool_input=_tool_input(
                requested[s.tool_call_id]
                if s.tool_call_id in requested and isinstance(requested[s.tool_call_id], Mapping)
                and not isinstance(parse_json(s.inputs), Mapping)
                else s.inputs
            ),
            tool_output=parse_json(s.outputs),
            id=s.tool_call_id,
            agent=_owner(s, by_id),
            error=s.error,
        )
        for s in ordered
        if s.kind == TOOL
    ]
    retrievers = [s for s in ordered if s.kind == RETRIEVER]
    retrieved = None
    if retrievers:
        last = retrievers[-1]
        retrieved = last.documents if last.documents is not None else documents_of(last.outputs) or []
    agents = [s for s in ordered if s.kind == AGENT]
    llms = [s for s in ordered if s.kind == LLM]
    request = request_of(root.inputs)
    response = text_of(root.outputs)
    for candidate in (agents[0] if agents else None, llms[0] if llms else None):
        if request is None and candidate is not None:
            request = request_of(candidate.inputs)
    for candidate in (agents[0] if agents else None, llms[-1] if llms else None):
        if response is None and candidate is not None:
            response = text_of(candidate.outputs)
    row: dict[str, Any] = {
        "request_id": trace_id,
        "request": request,
        "response": response,
        "predicted_trajectory": trajectory,
        "retrieved_context": retrieved,
        "trace_id": trace_id,
        "span_id": root.span_id,
    }
    if root.end is not None and root.start:
        row["latency_in_seconds"] = (root.end - root.start) / 1e9
    if llms:
        usage: Usage | None = None
        for s in llms:
            spent = s.usage or counted_usage(0, 0)  # a model span that reported nothing counts as nothing spent
            usage = spent + usage if usage is not None else spent
        if usage is not None and (usage.input_tokens or usage.output_tokens or usage.total_tokens):
            row["usage"] = usage.model_dump(exclude_none=True)
    if root.error:
        row["failure"] = True
        row["error"] = f"trace {trace_id}, span {root.name!r}: {root.error}"
    return row


def failed_row(trace_id: str | None, error: BaseException | str, index: int) -> dict[str, Any]:
    """The row of a trace that could not be read: a failed run naming the trace and what was wrong."""
    return {
        "request_id": trace_id or f"trace-{index + 1}",
        "trace_id": trace_id,
        "failure": True,
        "error": str(error),
        "response": None,
    }


