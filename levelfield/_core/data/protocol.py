"""The one protocol every adapter implements, and the request it receives."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from .types import AgentOutput, Message

__all__ = ["AgentRequest", "AgentRunnable"]


class AgentRequest(BaseModel):
    """One turn asked of an agent."""

    prompt: str
    """The user's message for this turn."""
    history: list[Message] = Field(default_factory=list)
    """Messages that came before, oldest first."""
    case_id: str = ""
    """The dataset case this request belongs to."""
    session_id: str | None = None
    """Stable for all turns of one case and trial; adapters map it to a thread, session or context."""
    turn: int = 0
    """Index of this turn within the case."""
    state: dict[str, Any] = Field(default_factory=dict)
    """The case's initial session state (ADK ``session_input.state``, a ``state`` column).
    Adapters hand it to the framework's own notion of state; it is the same on every turn."""


@runtime_checkable
class AgentRunnable(Protocol):
    """Anything with a ``name`` and an async ``arun(request) -> AgentOutput``."""

    name: str

    async def arun(self, request: AgentRequest) -> AgentOutput: ...
