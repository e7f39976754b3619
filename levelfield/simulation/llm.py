"""``UserSimulator``: a chat model plays the user of a conversation scenario."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core.data.dataset import Scenario
from .._core.data.token_counts import chat_message_usage
from .._core.data.types import content_text
from .._core.errors import ConfigError, ConfigTypeError, MissingExtraError
from .._core.run.conversation import DEFAULT_MAX_TURNS, Exchange, UserTurn

__all__ = ["UserSimulator", "DEFAULT_STOP_PHRASE"]

DEFAULT_STOP_PHRASE = "</finished>"
"""What the simulated user writes when its plan is done (ADK's user simulator uses the same)."""

_INSTRUCTIONS = """You are playing the USER in a conversation with an AI agent, to test that agent.
Write only the user's next message: no labels, no quotes, no commentary.

Follow this plan, one step at a time, as a real user would:
{plan}
{persona}
Rules:
- Say only what the plan and the conversation give you; if the agent asks for something the plan
  does not say, answer as the user plausibly would, without inventing new goals.
- Do not do the agent's work and do not repeat yourself.
- When every step of the plan is done (or the agent clearly cannot do it), reply with exactly
  {stop} and nothing else."""


def _chat_model(model: Any) -> Any:
    if not isinstance(model, str):
        if not hasattr(model, "ainvoke"):
            raise ConfigTypeError(
                f"UserSimulator(model={model!r}): expected a LangChain chat model or a 'provider:model' string"
            )
        return model
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise MissingExtraError("langchain", "langchain", f"UserSimulator({model!r})") from None
    try:
        return init_chat_model(model)
    except Exception as exc:  # a missing provider package, an unknown provider, a missing API key
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ConfigError(
            f"UserSimulator(model={model!r}) could not create the chat model: {first}. "
            "Write it as 'provider:model' (e.g. 'openai:gpt-4o-mini'), install the provider's LangChain package, "
            "or pass a chat model object"
        ) from exc


class UserSimulator:
    """A simulated user driven by a chat model: it follows the scenario's conversation plan (and
    persona) turn by turn until it writes ``stop_phrase`` or the conversation reaches ``max_turns``.

    ``model``: any LangChain chat model, or a ``"provider:model"`` string (as for judges).
    ``persona``: who the user is, used when a scenario gives none. ``max_turns``: agent turns at
    most, the scenario's starting prompt included (it is sent as is, without a model call).
    The model sees the plan and the conversation as text; tool calls are not shown (a user does
    not see them).
    """

    def __init__(
        self,
        model: Any,
        *,
        persona: str | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        stop_phrase: str = DEFAULT_STOP_PHRASE,
    ) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError(f"UserSimulator(max_turns={max_turns!r}): must be a whole number >= 1")
        if not isinstance(stop_phrase, str) or not stop_phrase.strip():
            raise ConfigError(f"UserSimulator(stop_phrase={stop_phrase!r}): must be non-empty text")
        if persona is not None and not isinstance(persona, str):
            raise ConfigTypeError(f"UserSimulator(persona={persona!r}): must be text describing the user")
        self.model = _chat_model(model)
        self.persona = persona
        self.max_turns = max_turns
        self.stop_phrase = stop_phrase

    def __repr__(self) -> str:
        return f"UserSimulator(model={self._model_name()!r}, max_turns={self.max_turns})"

    def _model_name(self) -> str:
        name = getattr(self.model, "model_name", None) or getattr(self.model, "model", None)
        return name if isinstance(name, str) else type(self.model).__name__

    @property
    def endpoint(self) -> str:
        """What the simulated user's calls go to, for their rate limits: ``simulator <model>``."""
        return f"simulator {self._model_name()}"

    def messages(self, scenario: Scenario, transcript: Sequence[Exchange]) -> list[Any]:
        """The messages the model is given for the user's next turn."""
        from langchain_core.messages import HumanMessage, SystemMessage

        persona = scenario.persona_text or self.persona or ""
        system = _INSTRUCTIONS.format(
            plan=scenario.conversation_plan or "(no plan given: pursue what your first message asks)",
            persona=f"\nWho you are:\n{persona}\n" if persona else "",
            stop=self.stop_phrase,
        )
        lines = []
        for exchange in transcript:
            lines.append(f"user: {exchange.user}")
            lines.append(f"agent: {exchange.agent.response}")
        conversation = "\n".join(lines)
        return [
            SystemMessage(system),
            HumanMessage(f"The conversation so far:\n{conversation}\n\nWrite the user's next message."),
        ]

    async def next_turn(self, scenario: Scenario, transcript: Sequence[Exchange]) -> UserTurn:
        """Ask the model for the user's next message; the stop phrase ends the conversation."""
        reply = await self.model.ainvoke(self.messages(scenario, transcript))
        text = content_text(getattr(reply, "content", reply)).strip()
        name = getattr(self.model, "model_name", None) or getattr(self.model, "model", None)
        usage = chat_message_usage(reply, name if isinstance(name, str) else None)
        if self.stop_phrase.lower() in text.lower():
            return UserTurn(None, usage=usage)
        return UserTurn(text, usage=usage)
