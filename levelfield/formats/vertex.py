"""Vertex AI's ``agent_data`` dataset rows: a multi-agent conversation (agents, turns, events) read as a case.

A Vertex GenAI evaluation dataset may describe a case by an ``agent_data`` cell (the shape of
``vertexai.types.evals.AgentData``, as an object or JSON text): ``agents`` (agent id -> its
configuration) and ``turns``, each with ``events`` that have an ``author`` (``"user"`` for the
end user, else the id of the agent that acted) and a ``content`` (google-genai parts: text,
function_call, function_response). Read here, without vertexai installed, as:

- each turn: the user's text is the turn's prompt; the agents' function calls are its tool calls,
  ``ToolCall.agent`` being the event's author, each with its function response as output (matched
  by call id, else by name); the agents' last text is the turn's saved response, so the case can
  be scored without running an agent (or run live on the same prompts);
- a change of author between agent events is a hand-off (``lf.Handoff``); the case's
  ``predicted_handoffs`` are its last turn's, as its ``predicted_trajectory`` is the last turn's;
- a trace that ends with a user event (Vertex's "N+1" case: the agent is to answer it) is a case
  to run: that message is the prompt, the conversation before it the history;
- ``agents`` is kept in the case's metadata (id -> type, description, instruction, sub-agents).

The row's other columns (``reference``, ``rubric_groups``, a case id...) are read as for any row;
a field the row gives itself wins over the one derived from ``agent_data``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from .._core.data.types import Handoff, ToolCall
from .._core.errors import DatasetError
from .adk import Event, content_text, tool_call

__all__ = ["COLUMN", "row_from_agent_data", "fill_located", "agent_data_rows"]

COLUMN = "agent_data"
"""The dataset column Vertex AI keeps a multi-agent conversation in."""
USER = "user"
"""The author of the end user's events (Vertex's convention)."""


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class _Turn(_Model):
    turn_index: int | None = None
    turn_id: str | None = None
    events: list[Event] | None = None


class _AgentData(_Model):
    agents: dict[str, Any] | None = None
    turns: list[_Turn] | None = None


def _parsed(value: Any, where: str) -> _AgentData:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}, field '{COLUMN}': not valid JSON ({exc.msg})") from None
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")  # vertexai's own AgentData object
    try:
        data = _AgentData.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(to_snake(x) if isinstance(x, str) else str(x) for x in first["loc"])
        raise DatasetError(f"{where}, field '{COLUMN}{'.' + loc if loc else ''}': {first['msg']}") from None
    if not data.turns or not any(t.events for t in data.turns):
        raise DatasetError(f"{where}, field '{COLUMN}': has no turns with events; give turns: [{{events: [...]}}]")
    return data


class _Reader:
    """Reads the events of a conversation in order; who has control carries over from turn to turn."""

    def __init__(self) -> None:
        self.current: str | None = None

    def turn(self, events: Sequence[Event]) -> dict[str, Any]:
        """One turn: the user's text, the agents' tool calls (with outputs), their last text, the hand-offs."""
        prompts: list[str] = []
        calls: list[ToolCall] = []
        texts: list[str] = []
        handoffs: list[Handoff] = []
        for event in events:
            parts = (event.content.parts or []) if event.content is not None else []
            for part in parts:
                if part.function_response is not None:
                    _attach(calls, part.function_response)
            if event.author == USER:
                text = content_text(event.content)
                if text:
                    prompts.append(text)
                continue
            author = event.author or None
            if author is not None and author != self.current:
                if self.current is not None:
                    handoffs.append(Handoff(from_agent=self.current, to_agent=author))
                self.current = author
            calls += [tool_call(p.function_call, author) for p in parts if p.function_call is not None]
            text = content_text(event.content)
            if text:
                texts.append(text)
        return {"prompt": "\n".join(prompts), "texts": texts, "calls": calls, "handoffs": handoffs}


def _attach(calls: list[ToolCall], response: Any) -> None:
    """A function response as the output of its call: the call with its id, else the first of its name without one."""
    target = next((c for c in calls if response.id and c.id == response.id), None) or next(
        (c for c in calls if c.tool_name == response.name and c.tool_output is None and c.error is None), None
    )
    if target is None:
        return
    output = response.response
    # ADK wraps a tool's non-dict return value as {"result": value} and a raised error as {"error": ...}.
    if isinstance(output, Mapping) and set(output) == {"error"}:
        target.error = str(output["error"])
    elif isinstance(output, Mapping) and set(output) == {"result"}:
        output = output["result"]
    target.tool_output = output


def _last_is_user(data: _AgentData) -> bool:
    events = [e for t in data.turns or [] for e in t.events or []]
    return bool(events) and events[-1].author == USER


def row_from_agent_data(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``row`` with its ``agent_data`` cell read into prompt, turns, saved answers and hand-offs; the cell dropped.

    Errors name ``where``, the field and the turn.
    """
    data = _parsed(row[COLUMN], where)
    reader = _Reader()
    turns = [reader.turn(t.events or []) for t in data.turns or [] if t.events]
    derived: dict[str, Any] = {}
    if data.agents:
        derived["agents"] = data.agents
    if _last_is_user(data):
        *before, last = turns
        history = []
        for turn in before:
            history += [{"role": "user", "content": turn["prompt"]}] if turn["prompt"] else []
            history += [{"role": "assistant", "content": turn["texts"][-1]}] if turn["texts"] else []
        derived.update(prompt=last["prompt"], history=history)
    else:
        for n, turn in enumerate(turns, start=1):
            if not turn["prompt"]:
                raise DatasetError(
                    f"{where}, field '{COLUMN}', turn {n}: has no user message with text; each turn starts with the "
                    f"user's event (author '{USER}')"
                )
        saved = [
            {"prompt": t["prompt"], "response": t["texts"][-1] if t["texts"] else "", "predicted_trajectory": t["calls"]}
            for t in turns
        ]
        if len(saved) == 1:
            derived.update(saved[0])
        else:
            derived["turns"] = saved
        derived["predicted_handoffs"] = turns[-1]["handoffs"]
    out = {k: v for k, v in row.items() if k != COLUMN}
    for key, value in derived.items():
        if key not in out or out[key] is None:
            out[key] = value
    return out


def _given(row: Any) -> bool:
    if not isinstance(row, Mapping):
        return False
    value = row.get(COLUMN)
    # A DataFrame row without agent_data holds NaN there; an empty cell in a CSV is None.
    return value is not None and not (isinstance(value, float) and value != value) and value != ""


def fill_located(located: Sequence[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """``(row, location)`` pairs with every row that has an ``agent_data`` cell read from it."""
    return [(row_from_agent_data(row, where), where) if _given(row) else (row, where) for row, where in located]


def agent_data_rows(data: Any, source: str | None) -> tuple[list[tuple[Any, str]], str] | None:
    """In-memory rows (a DataFrame or a list of dicts) with an ``agent_data`` column, located and read; else None."""
    if hasattr(data, "columns") and hasattr(data, "to_dict"):
        if COLUMN not in data.columns:
            return None
        rows, label = data.to_dict("records"), source or "DataFrame"
    elif isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        if not any(isinstance(r, Mapping) and COLUMN in r for r in data):
            return None
        rows, label = list(data), source or "dataset"
    else:
        return None
    return fill_located([(r, f"{label} row {i + 1}") for i, r in enumerate(rows)]), label
