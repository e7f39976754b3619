"""The record of one LangChain run, kept by a callback handler: its tool calls, token usage, model calls and hand-offs.

The trajectory comes from callbacks passed with each call rather than from the final state:
callbacks see every tool call, including those of sub-agents running inside a tool or a
subgraph, those of agents that keep no message state (``AgentExecutor``), and those made before
a run failed. Each run gets its own :class:`TrajectoryRecorder`, so concurrent runs cannot mix
their calls; ``LangChainAgent`` (``levelfield.adapters.langchain``) makes one per run.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from .._core.data.token_counts import chat_message_usage, openai_usage
from .._core.data.types import Handoff, ToolCall, Usage, content_text
from .._core.errors import MissingExtraError

try:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import BaseMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("langchain", "langchain-core", "LangChainAgent") from exc

__all__ = ["TrajectoryRecorder"]


def _jsonable(value: Any) -> Any:
    """A tool output as something a results table can hold."""
    if isinstance(value, BaseMessage):
        return content_text(value.content)
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return str(value)


@dataclass
class _Call:
    """One tool run as the callbacks saw it."""

    run_id: UUID
    parent_run_id: UUID | None
    tool_name: str
    tool_input: dict[str, Any]
    tool_call_id: str | None
    checkpoint_ns: str
    start_seq: int
    models_done: int
    """Model calls finished when this tool started: places calls no model asked for."""
    output: Any = None
    error: str | None = None
    done: bool = False


@dataclass
class _Run:
    parent: UUID | None
    kind: str
    name: str
    checkpoint_ns: str = ""
    seq: int = 0
    node: str = ""
    """The graph node the run belongs to (LangGraph's ``langgraph_node``)."""
    step: int = -1
    """The graph step the run belongs to (LangGraph's ``langgraph_step``)."""


def _ns(metadata: Mapping[str, Any] | None) -> str:
    return str((metadata or {}).get("langgraph_checkpoint_ns") or "")


def _segments(checkpoint_ns: str) -> list[str]:
    """The node names of a checkpoint namespace: LangGraph nests them as ``outer:id|inner:id``."""
    return [s.split(":")[0] for s in checkpoint_ns.split("|") if s]


def _model_name(response: Any) -> str | None:
    """The model an ``LLMResult`` names in ``llm_output`` (older integrations put it only there)."""
    output = getattr(response, "llm_output", None) or {}
    name = output.get("model_name") or output.get("model") if isinstance(output, Mapping) else None
    return str(name) if name else None


class TrajectoryRecorder(BaseCallbackHandler):
    """Callback handler that records one run's tool calls and token usage.

    Safe to call from several threads (sync tools run in a pool); one instance per run.
    """

    run_inline = True  # called on the event loop, in event order, not in an executor
    raise_error = False

    def __init__(self, root: str | None = None) -> None:
        self.root = root
        """The name given to the top-level agent (its calls' ``agent``, its side of hand-offs)."""
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._runs: dict[UUID, _Run] = {}
        self._calls: dict[UUID, _Call] = {}
        self._origin: dict[str, tuple[int, int]] = {}
        self._asked_by: dict[str, UUID] = {}
        """Tool call id -> the model run that asked for it."""
        self._models_done = 0
        self._usage: Usage | None = None
        self.model_errors: list[BaseException] = []
        self.tool_errors: list[BaseException] = []

    # -- run tree -------------------------------------------------------------------------
    def _add_run(self, run_id: UUID, parent: UUID | None, kind: str, name: str, metadata: Mapping[str, Any] | None) -> _Run:
        meta = metadata or {}
        step = meta.get("langgraph_step")
        run = _Run(parent, kind, name, _ns(meta), next(self._seq), str(meta.get("langgraph_node") or ""),
                   step if isinstance(step, int) else -1)
        with self._lock:
            self._runs[run_id] = run
        return run

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        name = kwargs.get("name") or (serialized or {}).get("name") or ""
        self._add_run(run_id, parent_run_id, "chain", str(name), kwargs.get("metadata"))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._add_run(run_id, parent_run_id, "model", "", kwargs.get("metadata"))

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._add_run(run_id, parent_run_id, "model", "", kwargs.get("metadata"))

    # -- models ---------------------------------------------------------------------------
    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        usage: Usage | None = None
        calls: list[str] = []
        for generations in getattr(response, "generations", None) or []:
            for generation in generations:
                message = getattr(generation, "message", None)
                spent = chat_message_usage(message, _model_name(response))
                if spent is not None:
                    usage = spent + usage if usage is not None else spent
                calls += [c.get("id") for c in getattr(message, "tool_calls", None) or []]
        if usage is None:  # older integrations report usage in llm_output only
            token_usage = (getattr(response, "llm_output", None) or {}).get("token_usage") or {}
            if token_usage:
                usage = openai_usage(token_usage, _model_name(response))
        with self._lock:
            self._models_done += 1
            for position, call_id in enumerate(calls):
                if call_id:
                    self._origin[call_id] = (self._models_done, position)
                    self._asked_by[call_id] = run_id
            if usage is not None:
                self._usage = usage + self._usage if self._usage else usage

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.model_errors.append(error)

    # -- tools ----------------------------------------------------------------------------
    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        if isinstance(inputs, Mapping):
            tool_input = dict(inputs)
        else:
            try:
                parsed = json.loads(input_str)
            except (TypeError, ValueError):
                parsed = None
            tool_input = parsed if isinstance(parsed, dict) else {"input": input_str}
        run = self._add_run(run_id, parent_run_id, "tool", str(name), metadata)
        with self._lock:
            self._calls[run_id] = _Call(
                run_id=run_id,
                parent_run_id=parent_run_id,
                tool_name=str(name),
                tool_input=tool_input,
                tool_call_id=kwargs.get("tool_call_id"),
                checkpoint_ns=run.checkpoint_ns,
                start_seq=run.seq,
                models_done=self._models_done,
            )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            call = self._calls.get(run_id)
            if call is None:
                return
            call.done = True
            call.output = _jsonable(output)
            # A tool that handled its own error (ToolException + handle_tool_error) ends normally
            # with an error-status message.
            if isinstance(output, ToolMessage) and getattr(output, "status", "success") == "error":
                call.error = content_text(output.content)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.tool_errors.append(error)
            call = self._calls.get(run_id)
            if call is not None:
                call.done = True
                call.error = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__

    # -- results --------------------------------------------------------------------------
    @property
    def usage(self) -> Usage | None:
        """Tokens of every model call of the run, nested ones included (None if none reported)."""
        with self._lock:
            return self._usage

    @property
    def model_calls(self) -> int:
        """How many model calls the run started, sub-agents' included."""
        with self._lock:
            return sum(1 for r in self._runs.values() if r.kind == "model")

    def _scope_of(self, run_id: UUID) -> tuple[UUID | None, str | None]:
        """(enclosing tool run, the sub-agent that tool runs) of a run; (None, None) outside any tool."""
        child: UUID | None = run_id
        parent = self._runs[run_id].parent if run_id in self._runs else None
        while parent is not None:
            run = self._runs.get(parent)
            if run is None:
                break
            if run.kind == "tool":
                inner = self._runs.get(child) if child is not None else None
                # The outermost runnable the tool started is the sub-agent (its graph's name).
                return parent, (inner.name if inner is not None and inner.kind == "chain" and inner.name else run.name)
            child, parent = parent, run.parent
        return None, None

    def _model_nodes(self) -> set[str]:
        """Top-level graph nodes that call a model themselves; two or more make the graph a team of agents."""
        nodes = {r.node for r in self._runs.values() if r.kind == "model" and len(_segments(r.checkpoint_ns)) == 1 and r.node}
        return nodes if len(nodes) > 1 else set()

    def _agent_of_run(self, run_id: UUID, model_nodes: set[str]) -> tuple[UUID | None, str | None]:
        """(enclosing tool run, agent name) of a model or tool run; the agent is None for the top-level agent."""
        scope, agent = self._scope_of(run_id)
        if scope is not None:
            return scope, agent
        run = self._runs[run_id]
        segments = _segments(run.checkpoint_ns)
        if len(segments) > 1:  # inside a subgraph used as a node: that node is the agent
            return None, segments[-2]
        if run.kind == "tool":
            asker = self._asked_by.get(self._calls[run_id].tool_call_id or "") if run_id in self._calls else None
            if asker is not None and asker in self._runs:
                return None, self._agent_of_run(asker, model_nodes)[1]
        if segments and segments[0] in model_nodes:
            return None, segments[0]
        return None, None

    def handoffs(self) -> list[Handoff]:
        """Control passing between agents: each change of the agent at work, in a deterministic order.

        The agent at work is the one making each model and tool call, and, in a graph of agents,
        a node that calls neither (a router). Runs are ordered by graph step, then node name
        (parallel nodes of one step, such as ``Send`` fan-outs, finish in any order), then start.
        """
        with self._lock:
            model_nodes = self._model_nodes()
            activity: list[tuple[tuple[int, str, int], str | None]] = []
            busy_nodes: set[str] = set()
            for run_id, run in self._runs.items():
                if run.kind in ("model", "tool"):
                    agent = self._agent_of_run(run_id, model_nodes)[1]
                    activity.append((self._order(run), agent))
                    segments = _segments(run.checkpoint_ns)
                    if segments:
                        busy_nodes.add(segments[0])
            agents = {a for _, a in activity if a is not None}
            if agents:
                # A node of a team that calls no model and no tool routes: it is an agent at work too.
                for run in self._runs.values():
                    segments = _segments(run.checkpoint_ns)
                    if len(segments) == 1 and run.kind == "chain" and run.name == run.node == segments[0] and segments[0] not in busy_nodes:
                        activity.append((self._order(run), segments[0]))
        out: list[Handoff] = []
        current: str | None = None
        for _, agent in sorted(activity, key=lambda item: item[0]):
            name = agent or self.root
            if name is None or name == current:
                continue
            if current is not None:
                out.append(Handoff(from_agent=current, to_agent=name))
            current = name
        return out

    def _order(self, run: _Run) -> tuple[int, str, int]:
        # The step and name of the top-level node the run belongs to: its own, or its nearest ancestor's.
        top: _Run | None = run
        while top is not None and not (len(_segments(top.checkpoint_ns)) == 1 and top.step >= 0):
            top = self._runs.get(top.parent) if top.parent is not None else None
        if top is None:
            return (-1, "", run.seq)
        return (top.step, _segments(top.checkpoint_ns)[0], run.seq)

    def trajectory(self, final_messages: Sequence[Any] = ()) -> list[ToolCall]:
        """The calls so far, in a deterministic order.

        Calls are ordered by (the model call that asked for them, their position in its
        ``tool_calls``), which does not depend on which parallel call started first; a call
        made by a sub-agent inside a tool follows that tool's call. Calls no model asked for
        (``AgentExecutor``, tools called by chains) are placed by start order.
        """
        with self._lock:
            calls = list(self._calls.values())
            origin = dict(self._origin)
            model_nodes = self._model_nodes()
            placed = [(c, *self._agent_of_run(c.run_id, model_nodes)) for c in calls]
        # Outputs of calls whose error the graph turned into a ToolMessage.
        handled = {
            m.tool_call_id: content_text(m.content) for m in final_messages if isinstance(m, ToolMessage)
        }

        def key(call: _Call) -> tuple[int, int, int]:
            if call.tool_call_id in origin:
                seq, position = origin[call.tool_call_id]
                return (seq, 0, position)
            return (call.models_done, 1, call.start_seq)

        children: dict[UUID | None, list[tuple[_Call, str | None]]] = {}
        for call, scope, agent in placed:
            # A call inside a tool that no recorded run encloses still belongs under that tool.
            children.setdefault(scope, []).append((call, agent))
        ordered: list[ToolCall] = []

        def visit(scope: UUID | None) -> None:
            for call, agent in sorted(children.get(scope, []), key=lambda item: key(item[0])):
                output = call.output
                if output is None and call.error is not None and call.tool_call_id in handled:
                    output = handled[call.tool_call_id]
                ordered.append(
                    ToolCall(
                        tool_name=call.tool_name,
                        tool_input=call.tool_input,
                        tool_output=output,
                        id=call.tool_call_id,
                        agent=agent or self.root,
                        error=call.error,
                    )
                )
                visit(call.run_id)

        visit(None)
        return ordered
