"""Simulated users: conversation-scenario cases played out against any agent, and their metrics.

``UserSimulator(model)`` plays the user with any LangChain chat model; ``lf.testing.ScriptedUser``
plays it by rules, offline and deterministic. ``TaskSuccess(judge=...)`` judges whether the
conversation reached the scenario's goal; ``"turns_used"`` counts the turns the agent took.
The conversation loop itself (turns, replay, simulator faults) is the run engine's, the one every case goes through.
"""

from __future__ import annotations

from typing import Any

from .._core.errors import ConfigTypeError
from .._core.run.conversation import DEFAULT_MAX_TURNS, Exchange, SimulatedUser
from .._core.score.metrics.conversation import TurnsUsed
from . import task_success  # noqa: F401  (registers the metric name "task_success" for the registry's hint)
from .llm import UserSimulator

__all__ = [
    "TurnsUsed",
    "Exchange",
    "SimulatedUser",
    "DEFAULT_MAX_TURNS",
    "as_simulator",
]


def as_simulator(simulator: Any) -> SimulatedUser | None:
    """A user simulator from what an entry point was given: None, a simulator, a chat model or a
    ``"provider:model"`` string (both become ``UserSimulator(model)``)."""
    if simulator is None or isinstance(simulator, SimulatedUser):
        return simulator
    if isinstance(simulator, str) or hasattr(simulator, "ainvoke"):
        return UserSimulator(simulator)
    raise ConfigTypeError(
        f"simulator={simulator!r}: expected lf.UserSimulator(model), lf.testing.ScriptedUser(rules), a LangChain "
        "chat model or a 'provider:model' string"
    )
