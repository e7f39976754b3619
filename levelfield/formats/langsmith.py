"""LangSmith run trees (``Run`` objects or their dicts, nested ``child_runs`` or flat with
``parent_run_id``) read into the common span model: ``run_type`` tool / retriever / llm / chain.

LangChain's tracers produce the same trees offline (``RunCollectorCallbackHandler``), so a tree
need not come from the LangSmith service.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from .._core.data.token_counts import counted_usage
from .spans import (
    AGENT,
    LLM,
    OTHER,
    RETRIEVER,
    TOOL,
    Span,
    TraceError,
    documents_of,
    failed_row,
    parse_json,
    row_from_spans,
)

__all__ = ["spans_from_run", "row_from_run", "rows_from_flat"]

_KINDS = {"tool": TOOL, "retriever": RETRIEVER, "llm": LLM, "chat_model": LLM}


def _as_dict(run: Any) -> dict[str, Any]:
    if isinstance(run, Mapping):
        return dict(run)
    if hasattr(run, "model_dump") or hasattr(run, "dict"):
        data = run.model_dump() if hasattr(run, "model_dump") else run.dict()
        # RunTree leaves its children out of the dump; they are the trajectory.
        data["child_runs"] = list(getattr(run, "child_runs", None) or [])
        return data
    raise TraceError(f"LangSmith run: expected a Run or a dict, got {type(run).__name__}")


def _ns(value: Any, where: str, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value * 1e9) if value < 1e12 else int(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise TraceError(f"{where}: {field} is not an ISO time: {value!r}") from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)  # LangSmith writes naive UTC times
        return int(value.timestamp() * 1e9)
    raise TraceError(f"{where}: {field} is not a time: {value!r}")


def _tool_input(inputs: Any) -> Any:
    """A tool run's inputs: LangChain records ``{"input": "<str of the args>"}``; recover the args."""
    if isinstance(inputs, Mapping) and set(inputs) == {"input"} and isinstance(inputs["input"], str):
        text = inputs["input"]
        parsed = parse_json(text)
        if isinstance(parsed, Mapping):
            return parsed
        try:
            literal = ast.literal_eval(text)  # str(dict) of the tool's arguments
        except (ValueError, SyntaxError):
            return {"input": text}
        return literal if isinstance(literal, Mapping) else {"input": text}
    return inputs


def _tool_output(outputs: Any) -> tuple[Any, str | None]:
    if isinstance(outputs, Mapping) and "output" in outputs:
        out = outputs["output"]
        content = getattr(out, "content", None)
        if content is not None:  # a ToolMessage object
            return content, getattr(out, "tool_call_id", None)
        if isinstance(out, Mapping) and "content" in out:
            return out["content"], out.get("tool_call_id")
        return out, None
    return outputs, None


def spans_from_run(run: Any) -> tuple[str, list[Span]]:
    """The trace id and the spans of one run tree (the root and every child run)."""
    root = _as_dict(run)
    trace_id = str(root.get("trace_id") or root.get("id") or "unknown")
    spans: list[Span] = []
    stack: list[tuple[dict[str, Any], str | None]] = [(root, None)]
    while stack:
        raw, parent = stack.pop()
        run_id = raw.get("id")
        name = raw.get("name") or "run"
        where = f"trace {trace_id}, run {name!r} ({run_id})"
        if not run_id:
            raise TraceError(f"{where}: no run id")
        run_type = str(raw.get("run_type") or "chain")
        kind = _KINDS.get(run_type, OTHER)
        metadata = (raw.get("extra") or {}).get("metadata") or {}
        if kind == OTHER and (metadata.get("agent") or run_type == "agent"):
            kind = AGENT
        span = Span(
            trace_id=trace_id,
            span_id=str(run_id),
            parent_id=str(raw.get("parent_run_id") or parent) if (raw.get("parent_run_id") or parent) else None,
            name=name,
            kind=kind,
            start=_ns(raw.get("start_time"), where, "start_time") or 0,
            end=_ns(raw.get("end_time"), where, "end_time"),
            inputs=raw.get("inputs"),
            outputs=raw.get("outputs"),
            error=raw.get("error"),
        )
        if kind == TOOL:
            span.tool_name = name
            span.inputs = _tool_input(span.inputs)
            span.outputs, span.tool_call_id = _tool_output(span.outputs)
        elif kind == RETRIEVER:
            span.documents = documents_of(span.outputs) or []
        elif kind == LLM:
            span.usage = counted_usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0),
                                       int(raw.get("total_tokens") or 0))
        elif kind == AGENT:
            span.agent_name = name
        spans.append(span)
        children = raw.get("child_runs") or []
        stack.extend((_as_dict(c), str(run_id)) for c in reversed(list(children)))
    return trace_id, spans


def row_from_run(run: Any, index: int = 0) -> dict[str, Any]:
    """One run tree as a dataset row; an unreadable tree is a failed row naming the trace and run."""
    trace_id = None
    try:
        trace_id, spans = spans_from_run(run)
        return row_from_spans(trace_id, spans)
    except TraceError as exc:
        return failed_row(trace_id, exc, index)


def rows_from_flat(runs: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows from a flat list of runs linked by ``parent_run_id`` (LangSmith's list_runs output)."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        raw = _as_dict(run)
        by_trace.setdefault(str(raw.get("trace_id") or raw.get("id")), []).append(raw)
    rows = []
    for i, (trace_id, members) in enumerate(by_trace.items()):
        try:
            spans = [s for raw in members for s in spans_from_run({**raw, "child_runs": [], "trace_id": trace_id})[1]]
            rows.append(row_from_spans(trace_id, spans))
        except TraceError as exc:
            rows.append(failed_row(trace_id, exc, i))
    return rows
