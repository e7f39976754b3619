"""Final-state checks: a user function says whether the world the agent left behind is right.

Many valid agents take paths no reference trajectory foresaw; checking the end state (the
booking exists, the thermostat reads 22) is objective where strict call matching is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...errors import MetricError
from .base import NAN, Metric, Score, ScoringContext

__all__ = ["StateCheck"]

StateFunction = Callable[[Mapping[str, Any], ScoringContext], Any]
"""``fn(state, case) -> bool | float | (score, reason) | Score``."""


class StateCheck(Metric):
    """``state_check``: ``fn(state, case)`` judges the run's final state.

    ``state`` is the session state the run ended with (ADK session state, LangGraph's final
    state without its ``messages``, the ``state`` a function agent returned); ``case`` is the
    :class:`ScoringContext` (prompt, reference, metadata, the calls made with their
    ``tool_output``). ``fn`` returns True/False, a score in [0, 1], a ``(score, reason)`` pair
    or a :class:`Score`. A run whose agent exposes no final state is not scored (NaN), with a
    note, unless ``needs_state=False`` (then ``state`` is ``{}`` and ``fn`` can read the tool
    outputs instead).

    >>> check = StateCheck(lambda state, case: (state.get("temp") == 22, f"temp is {state.get('temp')}"), name="thermostat_22")
    """

    def __init__(self, fn: StateFunction, *, name: str = "state_check", needs_state: bool = True) -> None:
        if not callable(fn):
            raise MetricError(f"StateCheck {name!r} needs a function fn(state, case), got {type(fn).__name__}")
        self.fn = fn
        self.name = name
        self.needs_state = needs_state

    def score(self, ctx: ScoringContext) -> Score:
        if ctx.state is None and self.needs_state:
            return Score(NAN, "the agent reported no final state; give StateCheck(..., needs_state=False) to check tool outputs instead")
        return _as_score(self.fn(ctx.state or {}, ctx), self.name)


def _as_score(value: Any, name: str) -> Score:
    reason = None
    if isinstance(value, Score):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        value, reason = value
        reason = None if reason is None else str(reason)
    if isinstance(value, bool):
        return Score(float(value), reason)
    if isinstance(value, (int, float)):
        return Score(float(value), reason)
    raise MetricError(
        f"state check {name!r} returned {type(value).__name__}; return True/False, a number, (score, reason) or a Score"
    )
