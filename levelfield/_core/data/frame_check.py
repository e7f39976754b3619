"""A DataFrame's rows checked by columns (issue #56): what ``load_dataset(df)`` checks row by row, at the DataFrame's rate.

``deferred_dataset`` checks each row as a dict (``rows._row_checked``): one row at a time, every cell read
through a JSON encoding (lone surrogates, depth) and a plain row's plan. A DataFrame's rows all have its
columns for keys, so the plan is made once, and each column is read once, as a list: text columns by the
type of their cells, trajectory columns call by call (a tool's input nesting a few levels at most), every
other column by the type of its cells. Of a plain row the check keeps only its case id (the case is made
later, where a lone surrogate is replaced anyway), so only the id column is searched for lone surrogates.
A row the columns cannot clear (a cell that is not plain text, a number or a flat list of calls, a lone
surrogate in its id, an id that is not one line of text) is checked row by row, as before: so every error
names the same row and field, and the first row that fails is the one raised, as before (a property test
compares the two routes: tests/core/data/test_dataset_deferred.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dataset import _CONTROL, _check_id, _refuse_repeats, _where
from .jsonsafe import SURROGATE
from .rows import _OPTIONAL_TEXT, _plan, _row_checked

__all__ = ["frame_checked"]

_SCALARS = frozenset((str, int, float, bool, type(None)))
"""Cell types that nest nothing: a row of these (and flat calls) is as shallow as the writers need."""


def frame_checked(frame: Any, label: str) -> tuple[list[str], list[str]]:
    """The case ids and columns of ``frame``'s rows (``"{label} row N"``), every row checked as
    ``rows.deferred_dataset`` checks it, raising the same error at the same row."""
    n = len(frame)
    keys = tuple(frame.columns)
    slow, ids = _marks(keys, (frame[name].tolist() for name in keys), n)
    ids = [str(i) if case_id is None else case_id for i, case_id in enumerate(ids)]
    columns: list[str] = list(keys) if not all(slow) else []
    wheres: dict[int, str] = {}
    if any(slow):
        records: list[dict[str, Any]] = []
        start = 0
        for index in (i for i in range(n) if slow[i]):
            if not start <= index < start + len(records):  # the rows of its chunk, as records (to_dict boxes cells)
                start = index - index % 2000
                records = frame.iloc[start:start + 2000].to_dict("records")
            where = f"{label} row {index + 1}"
            case = _row_checked(records[index - start], where, index, columns)
            _check_id(case, index, label)  # type: ignore[arg-type] - reads case_id, location, columns
            ids[index] = case.case_id
            wheres[index] = _where(case, index, label)  # type: ignore[arg-type]
    if not n:
        from ..errors import DatasetError

        raise DatasetError(f"{label}: the dataset has no rows")
    _refuse_repeats(ids, lambda i: wheres.get(i) or f"{label} row {i + 1}", label)  # type: ignore[arg-type]
    return ids, columns  # type: ignore[return-value]


def _marks(keys: tuple[Any, ...], columns: Any, n: int) -> tuple[bytearray, list[str | None]]:
    """Which of ``n`` rows with ``keys`` (``columns``: each key's cells, in order) the columns cannot clear (1: the
    row is checked row by row), and the case id of the others (None: no id cell, the row's number)."""
    plan = _plan(keys) if n else None
    ids: list[str | None] = [None] * n
    if plan is None or any(SURROGATE.search(k) for k in keys):
        return bytearray(b"\x01" * n), ids
    slow = bytearray(n)
    used = set(plan.used.values())
    for name, values in zip(keys, columns):
        if name in plan.missing:
            check: Callable[[Any], bool] = _missing
        elif name in plan.trajectories:
            check = _flat_calls
        elif name == plan.used.get("prompt"):
            check = _plain_prompt
        elif name in used and name != plan.case_id:
            check = _plain_text
        else:
            check = _flat_cell  # a case id is checked below; a metadata cell nests nothing
        _check_column(slow, values, check)
        if name == plan.case_id:
            # The one cell a plain row's check keeps: a lone surrogate in it ("\\ud800") is replaced by the
            # row's check (elsewhere it is replaced where the case is made, and the check keeps nothing).
            joined = "".join([v for v in values if type(v) is str])
            if not joined.isascii() and SURROGATE.search(joined) is not None:
                for i, value in enumerate(values):
                    if type(value) is str and SURROGATE.search(value) is not None:
                        slow[i] = 1
            for i, value in enumerate(values):
                if value is None or (type(value) is float and value != value):
                    pass  # the row's number
                elif type(value) is str and value.strip() and _CONTROL.search(value) is None:
                    ids[i] = value
                else:
                    slow[i] = 1  # a number, an empty or multi-line id: the row's own check says
    return slow, ids


def _check_column(slow: bytearray, values: list[Any], check: Callable[[Any], bool]) -> None:
    """Mark the rows whose cell ``check`` cannot clear."""
    for i in [i for i, value in enumerate(values) if not check(value)]:
        slow[i] = 1


def _missing(value: Any) -> bool:
    return value is None or (type(value) is float and value != value)


def _plain_text(value: Any) -> bool:
    return type(value) is str or value is None or (type(value) is float and value != value)


def _plain_prompt(value: Any) -> bool:
    if type(value) is str:
        return not value.lstrip().startswith("{")  # a request object as JSON text: its row's own check reads it
    return _missing(value)


def _flat_cell(value: Any) -> bool:
    return type(value) in _SCALARS


_DEEPEST = 16
"""Levels a tool's input may nest, checked here (the writers keep ``MAX_DEPTH``: a deeper one is read row by row)."""


def _flat_calls(value: Any) -> bool:
    """A trajectory cell that is empty, or a list of ``{tool_name, tool_input}`` calls ``ToolCall`` takes as
    they are (``rows._plain_calls``), every other field text or a number, the input nesting ``_DEEPEST`` levels
    at most."""
    if type(value) is not list:
        return _missing(value)
    for item in value:
        if type(item) is not dict or type(item.get("tool_name")) is not str:
            return False
        args = item.get("tool_input")
        if args is not None:
            if type(args) is not dict:
                return False
            for name, arg in args.items():
                if type(name) is not str or (type(arg) not in _SCALARS and not _shallow(arg, _DEEPEST)):
                    return False
        if len(item) > (2 if "tool_input" in item else 1):
            for key, cell in item.items():
                if key != "tool_input" and type(cell) is not str and (
                        type(cell) not in _SCALARS or (cell is not None and key in _OPTIONAL_TEXT)):
                    return False
    return True


def _shallow(value: Any, levels: int) -> bool:
    """Whether ``value`` (JSON-like: dicts, lists, text, numbers) nests ``levels`` levels at most."""
    if levels <= 0:
        return False
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    else:
        return False
    for item in items:
        if type(item) not in _SCALARS and not _shallow(item, levels - 1):
            return False
    return True
