"""LangChain and LangGraph agents, evaluated in process: ``LangChainAgent(runnable)``.

Works with anything that is a LangChain ``Runnable``: graphs from ``langchain.agents.create_agent``,
hand-built ``StateGraph``s, the deprecated ``langgraph.prebuilt.create_react_agent``,
``AgentExecutor`` (``langchain_classic``), and plain chains (response only).

The trajectory comes from a callback handler passed with each call rather than from the final
state (``levelfield.adapters.langchain_recorder``); this module turns a prompt into the
runnable's input, runs it, and reads its result into an ``AgentOutput``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .._core.data.jsonsafe import to_jsonable
from .._core.data.protocol import AgentRequest
from .._core.data.types import AgentOutput, Message, content_text
from .._core.errors import (
    AdapterError,
    AgentOutputError,
    ConfigError,
    ConfigTypeError,
    MissingExtraError,
    exception_text,
)
from .langchain_recorder import TrajectoryRecorder

try:
    from langchain_core.language_models import BaseLanguageModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
    from langchain_core.runnables import Runnable
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("langchain", "langchain-core", "LangChainAgent") from exc

__all__ = ["LangChainAgent"]

_RESPONSE_KEYS = ("output", "answer", "response", "result", "text", "final_answer")
_PROMPT_KEYS = ("input", "question", "query", "prompt", "request")
_HISTORY_KEYS = ("chat_history", "history")


def _to_messages(history: Sequence[Message]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in history:
        if message.role == "assistant":
            out.append(AIMessage(content=message.content))
        elif message.role == "system":
            out.append(SystemMessage(content=message.content))
        else:  # a bare tool result has no call to answer; the model sees it as user-provided text
            out.append(HumanMessage(content=message.content))
    return out


def _error_type(exc: BaseException, recorder: TrajectoryRecorder) -> str:
    names = {k.__name__ for k in type(exc).__mro__}
    if "GraphRecursionError" in names:
        return "recursion_limit"
    if any(exc is e or type(exc) is type(e) for e in recorder.model_errors):
        return "model_error"
    if any(exc is e or type(exc) is type(e) for e in recorder.tool_errors):
        return "tool_error"
    return getattr(exc, "error_type", None) or type(exc).__name__


class LangChainAgent:
    """Any LangChain ``Runnable`` or compiled LangGraph graph as a levelfield agent.

    Args:
        runnable: the graph, agent executor or chain to evaluate.
        name: the agent's name in results (default: the runnable's name).
        input_key: for chains taking a dict, the key that receives the prompt (guessed from the
            input schema when not given: ``messages``, ``input``, ``question``, ...).
        recursion_limit: LangGraph's step limit per run; hitting it fails the run with
            ``error_type="recursion_limit"``.
        config: a ``RunnableConfig`` merged into every call (tags, metadata, configurable, ...).
    """

    def __init__(
        self,
        runnable: Any,
        *,
        name: str | None = None,
        input_key: str | None = None,
        recursion_limit: int = 50,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(runnable, Runnable):
            raise ConfigTypeError(
                f"LangChainAgent needs a LangChain Runnable or compiled graph, got {type(runnable).__name__}; "
                "wrap plain functions with FunctionAgent instead"
            )
        if recursion_limit < 1:
            raise ConfigError("recursion_limit must be >= 1")
        self.runnable = runnable
        self.name = name or getattr(runnable, "name", None) or type(runnable).__name__
        self.input_key = input_key
        self.recursion_limit = recursion_limit
        self.config = dict(config or {})
        self._mode, self._key, self._history_key = self._input_shape()
        self._state_keys = self._schema_keys()
        self._inflight: dict[tuple[str, str | None, int], TrajectoryRecorder] = {}

    # -- input ----------------------------------------------------------------------------
    def _input_shape(self) -> tuple[str, str | None, str | None]:
        """How prompts are passed: ("messages"|"dict"|"text"|"model", key, history key)."""
        runnable = self.runnable
        if type(runnable).__name__ == "AgentExecutor":
            keys = list(getattr(runnable, "input_keys", None) or [])
            history = next((k for k in _HISTORY_KEYS if k in keys), None)
            return "dict", self.input_key or "input", history
        if isinstance(runnable, BaseLanguageModel):
            return "model", None, None
        try:
            schema = runnable.get_input_jsonschema()
        except Exception:  # some runnables cannot describe their input
            schema = {}
        props = schema.get("properties") if isinstance(schema, dict) else None
        props = props if isinstance(props, dict) else {}
        history = next((k for k in _HISTORY_KEYS if k in props), None)
        if self.input_key:
            return ("messages" if self.input_key == "messages" else "dict"), self.input_key, history
        if "messages" in props:
            return "messages", "messages", None
        if props:
            key = next((k for k in _PROMPT_KEYS if k in props), None)
            others = [k for k in props if k != history]
            if key is None and len(others) == 1:
                key = others[0]
            if key is None:
                raise ConfigError(
                    f"LangChainAgent {self.name!r}: cannot tell which input key takes the prompt "
                    f"(input keys: {sorted(props)}); pass input_key=..."
                )
            return "dict", key, history
        return "text", None, None

    def _schema_keys(self) -> frozenset[str]:
        """The top-level keys of the input schema: where a case's session state can go."""
        if self._mode not in ("messages", "dict"):
            return frozenset()
        try:
            schema = self.runnable.get_input_jsonschema()
        except Exception:
            return frozenset()
        props = schema.get("properties") if isinstance(schema, dict) else None
        return frozenset(props) if isinstance(props, dict) else frozenset()

    def _with_state(self, payload: dict[str, Any], request: AgentRequest) -> dict[str, Any]:
        # Session state joins the input where the graph's state has those keys; a threaded graph
        # keeps it in its checkpoint, so it is given on the first turn only.
        if not request.state or (request.turn > 0 and self._has_checkpointer()):
            return payload
        extra = {k: v for k, v in request.state.items() if k in self._state_keys and k not in payload}
        return {**payload, **extra} if extra else payload

    def _has_checkpointer(self) -> bool:
        saver = getattr(self.runnable, "checkpointer", None)
        return saver is not None and not isinstance(saver, bool)

    async def _payload(self, request: AgentRequest, config: dict[str, Any]) -> Any:
        history = _to_messages(request.history)
        prompt = HumanMessage(content=request.prompt)
        if self._mode == "messages":
            if history and self._has_checkpointer():
                # Later turns of a threaded conversation: the checkpoint already holds them.
                state = await self.runnable.aget_state(config)  # type: ignore[attr-defined]  # a compiled graph: it has a checkpointer
                if (getattr(state, "values", None) or {}).get("messages"):
                    history = []
            return self._with_state({str(self._key): [*history, prompt]}, request)  # messages mode: a key
        if self._mode == "model":
            return [*history, prompt]
        if self._mode == "dict":
            payload: dict[str, Any] = {str(self._key): request.prompt}  # dict mode: a key
            if self._history_key:
                payload[self._history_key] = history
            return self._with_state(payload, request)
        return request.prompt

    def _config(self, request: AgentRequest, recorder: TrajectoryRecorder) -> dict[str, Any]:
        config = dict(self.config)
        callbacks = config.get("callbacks")
        if callbacks is None:
            config["callbacks"] = [recorder]
        elif isinstance(callbacks, (list, tuple)):
            config["callbacks"] = [*callbacks, recorder]
        else:  # a callback manager
            manager = callbacks.copy()
            manager.add_handler(recorder, inherit=True)
            config["callbacks"] = manager
        config.setdefault("recursion_limit", self.recursion_limit)
        if self._has_checkpointer():
            configurable = dict(config.get("configurable") or {})
            # One thread per case and trial: trials never see each other's conversation.
            configurable["thread_id"] = request.session_id or f"lf-{uuid.uuid4().hex}"
            config["configurable"] = configurable
        metadata = dict(config.get("metadata") or {})
        metadata.setdefault("levelfield_case_id", request.case_id)
        config["metadata"] = metadata
        return config

    # -- output ---------------------------------------------------------------------------
    def _flatten(self, result: Any, recorder: TrajectoryRecorder) -> AgentOutput:
        if isinstance(result, Mapping) and isinstance(result.get("messages"), list):
            messages = result["messages"]
            start = max((i + 1 for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
            texts = [content_text(m.content) for m in messages[start:] if isinstance(m, AIMessage)]
            texts = [t for t in texts if t]
            if not any(isinstance(m, AIMessage) for m in messages):
                raise AgentOutputError(f"agent {self.name!r} ended without an AI message in its 'messages'")
            response = content_text(next(m for m in reversed(messages) if isinstance(m, AIMessage)).content)
            intermediate = texts[:-1] if texts and texts[-1] == response else texts
            return AgentOutput(
                response=response,
                trajectory=recorder.trajectory(messages),
                intermediate_responses=intermediate,
                usage=recorder.usage,
                handoffs=recorder.handoffs(),
                model_calls=recorder.model_calls,
                state=self._final_state(result),
                raw=result,
            )
        if isinstance(result, BaseMessage):
            response = content_text(result.content)
        elif isinstance(result, str):
            response = result
        elif isinstance(result, Mapping):
            key = next((k for k in _RESPONSE_KEYS if isinstance(result.get(k), (str, BaseMessage))), None)
            strings = [v for v in result.values() if isinstance(v, str)]
            if key is not None:
                value = result[key]
                response = value if isinstance(value, str) else content_text(value.content)
            elif len(strings) == 1:
                response = strings[0]
            else:
                raise AgentOutputError(
                    f"agent {self.name!r} returned a dict with keys {sorted(map(str, result))}; expected 'messages', "
                    f"one of {list(_RESPONSE_KEYS)}, or a single string value"
                )
        else:
            raise AgentOutputError(
                f"agent {self.name!r} returned {type(result).__name__}; expected a str, a message, "
                "or a dict with 'messages' or 'output'"
            )
        return AgentOutput(
            response=response,
            trajectory=recorder.trajectory(),
            usage=recorder.usage,
            handoffs=recorder.handoffs(),
            model_calls=recorder.model_calls,
            state=self._final_state(result),
            raw=result,
        )

    def _final_state(self, result: Any) -> dict[str, Any] | None:
        """A graph's final state without its messages (the conversation is the response and the
        trajectory already), as JSON-safe data; None for runnables that are not graphs."""
        if not isinstance(result, Mapping) or not callable(getattr(self.runnable, "aget_state", None)):
            return None
        return {str(k): to_jsonable(v) for k, v in result.items() if k != "messages"}

    @staticmethod
    def _partial(recorder: TrajectoryRecorder) -> AgentOutput:
        return AgentOutput(
            response="", trajectory=recorder.trajectory(), usage=recorder.usage,
            handoffs=recorder.handoffs(), model_calls=recorder.model_calls,
        )

    # -- protocol -------------------------------------------------------------------------
    @staticmethod
    def _request_key(request: AgentRequest) -> tuple[str, str | None, int]:
        return (request.case_id, request.session_id, request.turn)

    async def arun(self, request: AgentRequest) -> AgentOutput:
        """Run one turn; failures raise AdapterError with the partial trajectory attached."""
        recorder = TrajectoryRecorder(root=self.name)
        key = self._request_key(request)
        self._inflight[key] = recorder
        config = self._config(request, recorder)
        try:
            payload = await self._payload(request, config)
            result = await self.runnable.ainvoke(payload, config)  # type: ignore[arg-type]  # a RunnableConfig, built as a dict
        except asyncio.CancelledError:
            # Timed out: the runner asks partial_output() for what the run had done.
            raise
        except Exception as exc:
            self._inflight.pop(key, None)
            error_type = _error_type(exc, recorder)
            what = {
                "recursion_limit": f"hit the recursion limit of {config['recursion_limit']} steps",
                "model_error": "model call failed",
                "tool_error": "a tool raised and the agent did not handle it",
            }.get(error_type, "raised")
            raise AdapterError(
                f"agent {self.name!r} on case {request.case_id!r}: {what}: {exception_text(exc)}",
                error_type=error_type,
                partial=self._partial(recorder),
            ) from exc
        self._inflight.pop(key, None)
        return self._flatten(result, recorder)

    def partial_output(self, request: AgentRequest) -> AgentOutput | None:
        """What a run that was cancelled (timed out) had done: its tool calls and usage so far."""
        recorder = self._inflight.pop(self._request_key(request), None)
        return None if recorder is None else self._partial(recorder)

    def __repr__(self) -> str:
        return f"LangChainAgent({self.name!r})"
