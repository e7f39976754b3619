"""A metrics table's files written straight from its rows, with no DataFrame between them: the CSV
by the csv module, the Parquet by pyarrow from one list a column.

The files are those the DataFrame route writes (:func:`~.tables.write_table_files` of
``trimmed(pd.DataFrame(rows))``), byte for byte and value for value: this module reads each
column as pandas would (a column of whole numbers with a gap is a float column, written ``12.0``; a
column of booleans with a gap is text), and lets the csv module and pyarrow see the very values
pandas would hand them. A table holding a value pandas reads its own way (a date, a NumPy scalar,
a Decimal, a key that is not text) takes the DataFrame route instead. The DataFrame route costs a
save at the end of a run most of its time (issue #56): building the frame, finding its empty
columns, and its CSV writer's formatting a column at a time.
"""

from __future__ import annotations

import csv
import io
import itertools
import operator
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data.jsonsafe import dumps
from .tables import (
    _EMPTY_DROPPED,
    _FORMULA_CHARS,
    CSV_OPTIONS,
    _arrow_column,
    spreadsheet_cell,
    trimmed,
    write_table_files,
)
from .writing import replacing

__all__ = ["write_rows"]

_PLAIN = frozenset({str, int, float, bool, type(None), list, dict})
"""The kinds of cell this module writes itself; any other sends the table the DataFrame route."""
_MISSING = float("nan")
"""A key a row lacks: NaN, as pandas fills it."""
_INT64 = (-(2**63), 2**63 - 1)


class _Column:
    """One column of the table: its values (NaN where a row lacks the key) and how pandas reads them."""

    __slots__ = ("name", "values", "kind", "types")

    def __init__(self, name: str, values: Sequence[Any], kind: str, types: set[type]) -> None:
        self.name = name
        self.values = values
        self.kind = kind
        """``int``, ``float``, ``bool`` (NumPy columns in pandas) or ``object`` (text, mixed, lists, empty)."""
        self.types = types

    def filled(self) -> bool:
        """Whether some row has a value here (pandas' ``notna().any()``)."""
        values = self.values
        if float not in self.types:  # no NaN: a gap is None
            return values.count(None) < len(values)
        return any(v is not None and v == v for v in values)  # v != v: NaN


Encoded = Mapping[int, tuple[Any, str]]
"""The JSON text of list and dict cells made before (by ``id`` of the cell, with the cell itself,
which keeps the id its own): see :class:`~.table_ahead.TableAhead`."""

_LINES = 2_000
"""Rows the csv module writes into memory at a time, each batch then written to the file at once."""


def write_rows(rows: Sequence[dict[str, Any]], csv_path: Path, parquet_path: Path | None = None, *,
               trials: int | None = None, encoded: Encoded | None = None) -> dict[str, Path]:
    """``metrics_table.csv`` (and, when given, ``.parquet``) of a metrics table's ``rows``: what
    ``write_table_files(trimmed(pd.DataFrame(rows), trials=trials), ...)`` writes, without the
    DataFrame (see the module's docstring). ``trials``: as :func:`~.tables.trimmed`'s; ``encoded``:
    the JSON of some list and dict cells, made already."""
    columns = _columns(rows)
    if columns is None:
        import pandas as pd

        return write_table_files(trimmed(pd.DataFrame(list(rows)), trials=trials), csv_path, parquet_path)
    kept = _trimmed(columns, trials)
    cells = [_csv_cells(c, encoded or {}) for c in kept]
    with replacing(csv_path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
        lines = io.StringIO()
        writer = csv.writer(lines, lineterminator=CSV_OPTIONS["lineterminator"])
        writer.writerow([spreadsheet_cell(c.name) for c in kept])
        table = zip(*cells)
        while True:
            # Many rows formatted at a time, then one write: the file's encoder called once a batch.
            writer.writerows(itertools.islice(table, _LINES))
            if not lines.tell():
                break
            f.write(lines.getvalue())
            lines.seek(0)
            lines.truncate()
    paths = {"metrics_table": csv_path}
    if parquet_path is not None:
        paths["metrics_table_parquet"] = _write_parquet(kept, cells, parquet_path)
    return paths


def _columns(rows: Sequence[dict[str, Any]]) -> list[_Column] | None:
    """The table's columns in pandas' order (each key where a row first has it), each with its kind;
    None when a key is not text or a cell is not of :data:`_PLAIN` (the DataFrame route then)."""
    if not rows:
        return None
    first = rows[0]
    names = list(first)
    if len(set(map(tuple, rows))) == 1:
        # Every row has the same keys in the same order (the common case): a column is one pass of C.
        if len(names) == 1:
            values: list[Sequence[Any]] = [[r[names[0]] for r in rows]]
        else:
            values = list(zip(*map(operator.itemgetter(*names), rows)))
    else:
        names = list(dict.fromkeys(k for r in rows for k in r))
        values = [[r.get(name, _MISSING) for r in rows] for name in names]
    columns = []
    for name, column in zip(names, values):
        if type(name) is not str:
            return None
        types = set(map(type, column))
        kind = _kind(column, types)
        if kind is None:
            return None
        columns.append(_Column(name, column, kind, types))
    return columns


def _kind(values: Sequence[Any], types: set[type]) -> str | None:
    """How pandas reads a column of these values (see :class:`_Column`); None: not :data:`_PLAIN`,
    or a whole number NumPy cannot hold (pandas makes those columns its own way)."""
    if not types <= _PLAIN:
        return None
    if int in types and types <= {int, float, type(None)}:
        low, high = _INT64
        ints = values if types == {int} else [v for v in values if type(v) is int]
        if min(ints) < low or max(ints) > high:
            return None
        return "int" if types == {int} else "float"
    if types <= {float, type(None)} and float in types:
        return "float"  # NaN and None alike: a gap in a float column
    if types == {bool}:
        return "bool"
    return "object"


def _trimmed(columns: list[_Column], trials: int | None) -> list[_Column]:
    """The columns :func:`~.tables.trimmed` keeps (its rules, on these columns)."""
    by_name = {c.name: c for c in columns}
    drop = {key for key in _EMPTY_DROPPED if key in by_name and not by_name[key].filled()}
    if "cost_usd" in by_name and ("total_tokens" not in by_name or "total_tokens" in drop):
        drop.add("cost_usd")
    trial = by_name.get("trial")
    if trial is not None:
        count = len({v for v in trial.values if v is not None and v == v}) if trials is None else trials
        if 0 <= count <= 1:
            drop.add("trial")
    return [c for c in columns if c.name not in drop]


def _csv_cells(column: _Column, encoded: Encoded) -> Sequence[Any]:
    """A column's cells as pandas hands them to the csv module: a gap empty, a float column's whole
    numbers as floats (``12.0``), list and dict cells as JSON, text made safe for spreadsheets."""
    values, kind = column.values, column.kind
    if kind in ("int", "bool"):
        return values
    if kind == "float":
        if all(type(v) is float and v == v for v in values):
            return values
        return ["" if v is None or v != v else float(v) for v in values]
    out = None
    for i, v in enumerate(values):
        t = type(v)
        if t is str:
            if v[:1] in _FORMULA_CHARS:
                cell = spreadsheet_cell(v)
            else:
                continue
        elif t is list or t is dict:
            known = encoded.get(id(v))
            cell = known[1] if known is not None and known[0] is v else dumps(v)
        elif v is None or (t is float and v != v):
            cell = ""
        else:
            continue
        if out is None:
            out = list(values)
        out[i] = cell
    return values if out is None else out


def _write_parquet(columns: list[_Column], cells: list[Sequence[Any]], path: Path) -> Path:
    """The Parquet file of the kept columns, each as :func:`~.tables._arrow_table` makes it of the
    DataFrame (a float column's gaps null; list and dict cells as the JSON text the CSV holds)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("parquet", "pyarrow", "writing Parquet") from None
    arrays = []
    for column, cell in zip(columns, cells):
        kind, values = column.kind, column.values
        if kind == "int":
            arrays.append(pa.array(values, pa.int64()))
        elif kind == "bool":
            arrays.append(pa.array(values, pa.bool_()))
        elif kind == "float":
            floats = pa.array([None if v == "" else v for v in cell] if cell is not values else values, pa.float64(),
                              from_pandas=True)
            arrays.append(pa.array([None] * len(values), pa.string()) if floats.null_count == len(floats) else floats)
        else:
            # The JSON text of list and dict cells, every other cell as the row holds it (text as it
            # was, not as the CSV's spreadsheet-safe form).
            raw = values if cell is values else [c if type(v) is list or type(v) is dict else v for v, c in zip(values, cell)]
            arrays.append(_arrow_column(pa, raw, False))
    table = pa.Table.from_arrays(arrays, names=[c.name for c in columns])
    with replacing(path) as tmp:
        pq.write_table(table, tmp)
    return path
