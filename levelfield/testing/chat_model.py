"""A deterministic, rule-based LangChain chat model for offline tests of agents.

``ScriptedChatModel(policy)`` answers every model call by asking ``policy(messages)`` what to
do next: a string is the final answer, a list of ``(tool_name, args)`` pairs is a set of tool
calls made in parallel in this model turn, an ``AIMessage`` is returned as given (copied). It
supports ``bind_tools`` so ``langchain.agents.create_agent``, ``create_react_agent`` and
hand-built graphs with a ``ToolNode`` can drive it, answers sync and async calls alike, and
keeps no state between calls, so any number of runs may share one instance.

Token usage is reported as whitespace-separated word counts: deterministic, and good enough to
test that usage is summed.

This module imports langchain-core; install it with ``pip install 'levelfield[langchain]'``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Union

from .._core.errors import ConfigError, ConfigTypeError, MissingExtraError

try:
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import Runnable
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("langchain", "langchain-core", "levelfield.testing.ScriptedChatModel") from exc

__all__ = ["ScriptedChatModel", "Policy", "Decision", "last_human_text", "tool_outputs_by_turn", "count_tokens"]

Decision = Union[str, Sequence[tuple[str, dict[str, Any]]], AIMessage]  # noqa: UP007 (runtime alias; 3.10 cannot | a typing generic alias)
"""What a policy returns: a final answer, parallel tool calls, or a ready message."""

Policy = Callable[[list[BaseMessage]], Decision]
"""``policy(messages) -> Decision``: the model's whole behaviour, a pure function of the conversation."""


def count_tokens(text: str) -> int:
    """The scripted model's token count of a text: its whitespace-separated words."""
    return len(text.split())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return " ".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
    return str(content)


def _message_text(message: BaseMessage) -> str:
    text = _text(message.content)
    calls = getattr(message, "tool_calls", None)
    if calls:
        text += " " + json.dumps([{"name": c["name"], "args": c["args"]} for c in calls], sort_keys=True)
    return text


def last_human_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the last human message of a conversation ("" if there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message.content)
    return ""


def tool_outputs_by_turn(messages: Sequence[BaseMessage]) -> list[list[str]]:
    """Tool results since the last human message, one list per AI turn that asked for them.

    Within a turn, results follow the order of that turn's ``tool_calls`` (not the order the
    tools finished in), so a policy sees the same thing however parallel calls were scheduled.
    """
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            start = index + 1
            break
    results = {m.tool_call_id: _text(m.content) for m in messages[start:] if isinstance(m, ToolMessage)}
    turns: list[list[str]] = []
    for message in messages[start:]:
        if isinstance(message, AIMessage) and message.tool_calls:
            turns.append([results[str(c["id"])] for c in message.tool_calls if c.get("id") in results])
    return turns


class ScriptedChatModel(BaseChatModel):
    """A chat model whose every reply is ``policy(messages)``; no network, no randomness, no state.

    Example::

        def policy(messages):
            if not tool_outputs_by_turn(messages):
                return [("get_weather", {"city": "Paris"})]
            return "It is sunny in Paris."

        agent = create_agent(ScriptedChatModel(policy), tools=[get_weather])
    """

    policy: Policy
    """Decides each reply from the conversation so far."""
    model_name: str = "scripted"
    """Reported in ``response_metadata["model_name"]``."""
    check_tools: bool = True
    """When tools are bound, refuse tool calls to tools that are not among them."""

    def __init__(self, policy: Policy | None = None, **kwargs: Any) -> None:
        if policy is not None:
            kwargs["policy"] = policy
        super().__init__(**kwargs)

    @property
    def _llm_type(self) -> str:
        return "levelfield-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        """Bind tools as a real provider would: their schemas travel with each call."""
        schemas = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=schemas, **kwargs)

    def _reply(self, messages: list[BaseMessage], tools: Sequence[dict[str, Any]] | None) -> AIMessage:
        decision = self.policy(list(messages))
        # Ids depend on the model and the conversation only: reruns give the same ids, and two
        # scripted models answering the same conversation (agent and sub-agent) do not collide.
        seed = f"{self.model_name}|{getattr(self.policy, '__qualname__', '')}|"
        digest = hashlib.sha1((seed + "\n".join(_message_text(m) for m in messages)).encode()).hexdigest()[:10]
        if isinstance(decision, AIMessage):
            message = decision.model_copy(deep=True)  # a fresh message, whatever the policy reuses
            for index, call in enumerate(message.tool_calls):
                call["id"] = call.get("id") or f"call_{digest}_{index}"
        elif isinstance(decision, str):
            message = AIMessage(content=decision)
        elif isinstance(decision, (list, tuple)):
            calls = []
            for index, item in enumerate(decision):
                try:
                    name, args = item
                except (TypeError, ValueError):
                    raise ConfigTypeError(
                        f"ScriptedChatModel policy returned {item!r} in its list of tool calls; "
                        "expected (tool_name, args) pairs"
                    ) from None
                calls.append({"name": name, "args": dict(args), "id": f"call_{digest}_{index}", "type": "tool_call"})
            message = AIMessage(content="", tool_calls=calls)
        else:
            raise ConfigTypeError(
                f"ScriptedChatModel policy returned {type(decision).__name__}; expected a str (final answer), "
                "a list of (tool_name, args) pairs, or an AIMessage"
            )
        if tools is not None and self.check_tools and message.tool_calls:
            bound = {t.get("function", {}).get("name", t.get("name")) for t in tools}
            unknown = [c["name"] for c in message.tool_calls if c["name"] not in bound]
            if unknown:
                raise ConfigError(
                    f"ScriptedChatModel policy called tool(s) {unknown} that are not bound; bound tools: {sorted(bound)}"
                )
        if message.usage_metadata is None:
            input_tokens = sum(count_tokens(_message_text(m)) for m in messages)
            output_tokens = count_tokens(_message_text(message))
            message.usage_metadata = {  # type: ignore[assignment]  # LangChain's UsageMetadata is this TypedDict
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            }
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs.get("tools")))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The policy is pure computation: answer on the loop rather than in a worker thread.
        return self._generate(messages, stop, None, **kwargs)
