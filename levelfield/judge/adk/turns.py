"""How a turn, its tool calls and a whole conversation are written out for ADK's judged criteria.

``dialogue_text`` and ``calls_json`` are also what Vertex's criteria show their judge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..._core.score.metrics.base import TurnContext

__all__ = ["dialogue_text", "calls_json"]


def _calls_json(calls: Sequence[Any]) -> str:
    """The tool calls of a turn as numbered steps with their outputs (or errors), as indented JSON."""
    if not calls:
        return "(no tool calls)"
    steps = []
    for i, call in enumerate(calls):
        step: dict[str, Any] = {"step": i, "tool": call.tool_name, "args": call.tool_input}
        if call.agent:
            step["agent"] = call.agent
        if call.error is not None:
            step["error"] = call.error
        elif call.tool_output is not None:
            step["output"] = call.tool_output
        steps.append(step)
    return json.dumps(steps, indent=2, ensure_ascii=False, default=str)


def _own(calls: Sequence[Any]) -> list[Any]:
    """The turn's own calls, as ADK's invocation holds them: not those an ``AgentTool``'s agent made inside one
    (``ToolCall.within``), which ADK's judged criteria never show their judge."""
    return [c for c in calls if getattr(c, "within", None) is None]


def _answer_text(turn: TurnContext, with_intermediate: bool) -> str:
    """The turn's final answer, after the texts it produced before it when ``with_intermediate``."""
    parts = list(turn.intermediate_responses) if with_intermediate else []
    if turn.response:
        parts.append(turn.response)
    return "\n".join(p for p in parts if p)


def _dialogue_text(turns: Sequence[TurnContext], *, own: bool = False) -> str:
    """A whole conversation, turn by turn: the user's message, each tool call and output, the agent's answer
    (``own``: the turns' own calls only, as ADK's criteria show them)."""
    lines = []
    for n, turn in enumerate(turns, start=1):
        lines.append(f"[turn {n}] user: {turn.prompt}")
        for call in (_own(turn.predicted_trajectory) if own else turn.predicted_trajectory):
            who = f"agent ({call.agent})" if call.agent else "agent"
            lines.append(f"[turn {n}] {who} calls {call.tool_name}({json.dumps(call.tool_input, ensure_ascii=False, default=str)})")
            result = f"error: {call.error}" if call.error is not None else json.dumps(call.tool_output, ensure_ascii=False, default=str)
            lines.append(f"[turn {n}] tool {call.tool_name} returns: {result}")
        for text in turn.intermediate_responses:
            lines.append(f"[turn {n}] agent (before answering): {text}")
        lines.append(f"[turn {n}] agent: {turn.response or ''}")
    return "\n".join(lines)


dialogue_text = _dialogue_text
calls_json = _calls_json
