"""Saved rows as the batch scorer reads them: batches of rows, their cells read by ``ToolCall``'s
rules without building one, and where each shape of row keeps each field."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ...data.dataset import ALIASES

try:  # the fastest JSON we have; the standard library otherwise
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson ships with the 'parquet' and 'traces' extras
    _orjson = None

__all__ = ["RowBatch", "batches_of", "scored_rows"]

_FAILED = (True, 1, "1", "true", "True")
"""The ``failure`` cells that say a saved run failed."""
_NOT_FLAT = ("turns", "scenario", "conversation_scenario", "trace")
"""Columns that make a row more than one flat turn: such rows take the row path."""
_SCENARIO = ("scenario", "conversation_scenario")
_FIELD_AT = {"prompt": 0, "response": 1, "reference": 2, "reference_trajectory": 3, "predicted_trajectory": 4}
"""Where a light context's fields sit in the tuple the batch path checks ``requires`` against."""
_FIELDS = {name: field for field, names in ALIASES.items() for name in names}


class RowBatch(Protocol):
    """A batch of saved rows as a reader yields them; cheap to pickle (worker processes read it)."""

    start: int
    """Index of the batch's first row in the whole dataset (rows without an id are numbered by it)."""

    def rows(self) -> list[Mapping[str, Any]]:
        """The rows (read from the file when first asked, in the process that scores them)."""
        ...

    def where(self, i: int) -> str:
        """Where row ``i`` of the batch comes from (``"file.jsonl line 7"``), for error messages."""
        ...


@dataclass
class _ListBatch:
    """Rows already in memory."""

    rows_: list[Mapping[str, Any]]
    start: int = 0
    label: str = "dataset"

    def rows(self) -> list[Mapping[str, Any]]:
        return self.rows_

    def where(self, i: int) -> str:
        return f"{self.label} row {self.start + i + 1}"


class _Call:
    """A tool call as the batch path holds it: the two fields matching reads, and no validation."""

    __slots__ = ("tool_name", "tool_input")
    within = None  # never a call made inside another: such a row takes the row path

    def __init__(self, tool_name: str, tool_input: dict[str, Any]) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input

    def to_vertex(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "tool_input": self.tool_input}


class _Irregular(Exception):
    """A cell the batch path does not read itself; the row path reads it (and names the problem)."""


def _missing(value: Any) -> bool:
    return value is None or (type(value) is float and math.isnan(value))


def _loads(text: str) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:
            pass  # NaN and Infinity: Python's json reads them, as the row path does
    return json.loads(text)


def _calls(value: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """A trajectory cell as ``(tool_name, tool_input)`` pairs, by ``ToolCall``'s rules; None when empty."""
    if _missing(value):
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = _loads(value)
        except ValueError:
            raise _Irregular from None
    elif not isinstance(value, list):
        if hasattr(value, "tolist") and not isinstance(value, (tuple, dict)):
            value = value.tolist()  # Parquet and Arrow list cells
        elif not isinstance(value, tuple):
            raise _Irregular
    calls = []
    for item in value:
        if type(item) is not dict:
            raise _Irregular
        name = item.get("tool_name")
        if name is None:
            if "tool_name" in item or "name" not in item:
                raise _Irregular
            # ADK and OpenAI-style calls: {name, args} / {name, arguments} / {name, input}.
            name = item["name"]
            args = next((item[k] for k in ("tool_input", "args", "arguments", "input") if k in item), None)
        else:
            args = item.get("tool_input")
        if type(name) is not str or item.get("within") is not None:
            raise _Irregular  # a call made inside another (an AgentTool's): the row path keeps it apart
        if type(args) is not dict:
            if args is None:
                args = {}
            elif not isinstance(args, str):
                raise _Irregular
            else:
                try:
                    args = _loads(args) if args.strip() else {}
                except ValueError:
                    raise _Irregular from None
                if type(args) is not dict:
                    raise _Irregular
        calls.append((name, args))
    return calls


def _calls_absent(cell: Any) -> bool:
    return _missing(cell) or (isinstance(cell, str) and not cell.strip())


def _light_calls(calls: list[tuple[str, dict[str, Any]]] | None) -> list[_Call] | None:
    return None if calls is None else [_Call(name, args) for name, args in calls]


def _text(value: Any) -> str | None:
    if _missing(value):
        return None
    if type(value) is str:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _Irregular


class _Layout(NamedTuple):
    """Where one shape of row keeps each field (None: not there)."""

    case_id: str | None
    prompt: str | None
    response: str | None
    reference: str | None
    predicted_trajectory: str | None
    reference_trajectory: str | None
    flat: bool
    has_predictions: bool


def scored_rows(batches: Iterable[RowBatch]) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """The rows a scorer scores, in the order of its table, each with its index in the dataset and
    where it comes from (conversation-scenario rows, which it skips, left out)."""
    for batch in batches:
        for i, row in enumerate(batch.rows()):
            if isinstance(row, Mapping) and any(not _missing(row.get(c)) for c in _SCENARIO):
                continue
            yield batch.start + i, batch.where(i), row


def batches_of(rows: Sequence[Mapping[str, Any]], size: int, label: str = "dataset") -> Iterator[RowBatch]:
    """In-memory rows as batches of ``size``; ``label`` names them in errors (``"<label> row 7"``)."""
    for start in range(0, len(rows), size):
        yield _ListBatch(list(rows[start : start + size]), start, label)
