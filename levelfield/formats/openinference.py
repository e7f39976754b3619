"""OpenInference spans (Arize Phoenix and its instrumentations) read into the common span model.

OpenInference marks a span's role with ``openinference.span.kind`` (TOOL, AGENT, RETRIEVER, LLM,
CHAIN...), puts what went in and out in ``input.value`` / ``output.value`` (JSON when the
``*.mime_type`` says so), names tools with ``tool.name``, lists retrieved documents as
``retrieval.documents.<i>.document.{content,id,metadata}`` and counts tokens in
``llm.token_count.{prompt,completion,total}``. The spans travel as OpenTelemetry spans, so
:mod:`levelfield.formats.otel` reads the files and hands each span here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._core.data.token_counts import counted_usage
from .spans import AGENT, LLM, OTHER, RETRIEVER, TOOL, Span, count_of, parse_json

__all__ = ["SPAN_KIND", "classify", "documents_from_attributes"]

SPAN_KIND = "openinference.span.kind"
_KINDS = {"TOOL": TOOL, "AGENT": AGENT, "RETRIEVER": RETRIEVER, "LLM": LLM}
_CALL = re.compile(r"^llm\.output_messages\.\d+\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.arguments)$")
_DOC = re.compile(r"^retrieval\.documents\.(\d+)\.document\.(content|id|metadata|score)$")


def documents_from_attributes(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``retrieval.documents.<i>.document.*`` attributes as ``[{content, doc_uri}]``, in index order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _DOC.match(key)
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    docs = []
    for _, doc in sorted(found.items()):
        metadata = parse_json(doc.get("metadata")) or {}
        if not isinstance(metadata, Mapping):
            metadata = {}
        uri = metadata.get("doc_uri") or metadata.get("source") or metadata.get("uri") or doc.get("id")
        docs.append({"content": doc.get("content"), "doc_uri": None if uri is None else str(uri)})
    return docs


def _tool_output(value: Any) -> tuple[Any, str | None]:
    """A LangChain ToolMessage dumped as ``{"type": "tool", "data": {...}}``: its content and call id."""
    value = parse_json(value)
    if isinstance(value, Mapping) and value.get("type") == "tool" and isinstance(value.get("data"), Mapping):
        data = value["data"]
        return data.get("content"), data.get("tool_call_id")
    return value, None


def classify(span: Span, attrs: Mapping[str, Any]) -> Span:
    """Fill ``span`` from OpenInference attributes."""
    kind = _KINDS.get(str(attrs.get(SPAN_KIND, "")).upper(), OTHER)
    span.kind = kind
    span.inputs = attrs.get("input.value")
    span.outputs = attrs.get("output.value")
    if kind == TOOL:
        span.tool_name = attrs.get("tool.name") or span.name
        span.outputs, call_id = _tool_output(span.outputs)
        span.tool_call_id = attrs.get("tool_call.id") or attrs.get("tool.id") or call_id
        status = parse_json(attrs.get("output.value"))
        if isinstance(status, Mapping) and isinstance(status.get("data"), Mapping) and status["data"].get("status") == "error":
            span.error = span.error or str(span.outputs)  # a tool error the agent was handed back
    elif kind == AGENT:
        span.agent_name = attrs.get("agent.name") or span.name
    elif kind == RETRIEVER:
        span.documents = documents_from_attributes(attrs)
    elif kind == LLM:
        # Parts of the prompt and completion counts.
        span.usage = counted_usage(
            int(attrs.get("llm.token_count.prompt") or 0), int(attrs.get("llm.token_count.completion") or 0),
            int(attrs.get("llm.token_count.total") or 0),
            cache_read=count_of(attrs, "llm.token_count.prompt_details.cache_read"),
            cache_write=count_of(attrs, "llm.token_count.prompt_details.cache_write"),
            reasoning=count_of(attrs, "llm.token_count.completion_details.reasoning"),
            model=attrs.get("llm.model_name"))
        span.extra["requested"] = _requested_calls(attrs)
    return span


def _requested_calls(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Call id -> arguments of the tool calls a model span asked for (a tool span may record only a bare string)."""
    calls: dict[str, dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _CALL.match(key)
        if match:
            calls.setdefault(match.group(1), {})[match.group(2)] = value
    return {c["id"]: parse_json(c.get("function.arguments")) for c in calls.values() if c.get("id")}
