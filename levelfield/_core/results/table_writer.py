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

Where the rows were made while the runs ran (:class:`~.table_ahead.TableAhead`), their CSV lines were
made with them (:class:`LineMaker`), and the save writes those it can use rather than format every
cell again: at 2,000 runs of a 20 ms async agent it took 31-34 ms where it took 43-44 ms
(``bench/bench_rows_ahead.py``).
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

__all__ = ["write_rows", "LineMaker", "Lines"]

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

Lines = Mapping[int, tuple[dict[str, Any], tuple[str, ...], str]]
"""Rows' CSV lines made before (by ``id`` of the row, with the row, which keeps the id its own, and
the columns the line holds): see :class:`LineMaker`."""

_DROPPED_WHEN_EMPTY = frozenset(_EMPTY_DROPPED)


class LineMaker:
    """Makes a row's line of ``metrics_table.csv`` on its own, before the table is whole (the rows made
    ahead, :class:`~.table_ahead.TableAhead`).

    A line holds the columns the table is expected to keep (:meth:`names`: the row's keys less the
    optional ones it leaves empty, and less ``trial`` for one trial), each cell written as
    :func:`_csv_cells` writes a cell of its own kind. :func:`write_rows` takes a line only where the
    table kept exactly those columns and no column's kind writes a cell otherwise (whole numbers in a
    float column, written ``12.0``), and makes the others then: a guess that missed costs time, never
    a byte."""

    def __init__(self, *, trials: int) -> None:
        self._trials = trials
        self._lines = io.StringIO()
        self._writer = csv.writer(self._lines, lineterminator=CSV_OPTIONS["lineterminator"])
        self._names: dict[tuple[str, ...], tuple[str, ...]] = {}

    def names(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """The columns the table is expected to keep of this row (one tuple for each kind of row)."""
        empty = tuple(k for k in row if k in _DROPPED_WHEN_EMPTY and _gap(row[k]))
        key = (*row, "", *empty)  # the keys, then those left empty: "" is no column of a table
        names = self._names.get(key)
        if names is None:
            drop = set(empty)
            if "total_tokens" not in row or "total_tokens" in drop:
                drop.add("cost_usd")
            if self._trials <= 1:
                drop.add("trial")
            names = self._names[key] = tuple(k for k in row if k not in drop)
        return names

    def header(self, names: Sequence[str]) -> str:
        """The table's first line: its column names, made safe for spreadsheets."""
        self._writer.writerow([spreadsheet_cell(name) for name in names])
        return self._taken()

    def _taken(self) -> str:
        line = self._lines.getvalue()
        self._lines.seek(0)
        self._lines.truncate()
        return line

    def __call__(self, row: Mapping[str, Any], names: Sequence[str], encoded: Encoded) -> str:
        """The CSV line of ``row``'s ``names`` (a key it lacks is a gap, as pandas fills it)."""
        cells = []
        for name in names:
            v = row.get(name, _MISSING)
            t = type(v)
            if t is str:
                if v[:1] in _FORMULA_CHARS:
                    v = spreadsheet_cell(v)
            elif t is list or t is dict:
                v = _json(v, encoded)
            elif v is None or (t is float and v != v):
                v = ""
            cells.append(v)
        self._writer.writerow(cells)
        return self._taken()


def _json(value: list[Any] | dict[str, Any], encoded: Encoded) -> str:
    """The JSON text of a list or dict cell: as made before, if it was (of this very cell), else now."""
    known = encoded.get(id(value))
    return known[1] if known is not None and known[0] is value else dumps(value)


def _gap(value: Any) -> bool:
    """Whether a cell is empty as pandas sees it (None or NaN)."""
    return value is None or (type(value) is float and value != value)


def write_rows(rows: Sequence[dict[str, Any]], csv_path: Path, parquet_path: Path | None = None, *,
               trials: int | None = None, encoded: Encoded | None = None, lines: Lines | None = None) -> dict[str, Path]:
    """``metrics_table.csv`` (and, when given, ``.parquet``) of a metrics table's ``rows``: what
    ``write_table_files(trimmed(pd.DataFrame(rows), trials=trials), ...)`` writes, without the
    DataFrame (see the module's docstring). ``trials``: as :func:`~.tables.trimmed`'s; ``encoded``:
    the JSON of some list and dict cells, made already; ``lines``: some rows' CSV lines, made already
    (:class:`LineMaker`)."""
    columns = _columns(rows)
    if columns is None:
        import pandas as pd

        return write_table_files(trimmed(pd.DataFrame(list(rows)), trials=trials), csv_path, parquet_path)
    kept = _trimmed(columns, trials)
    encoded = encoded or {}
    if lines and not any(c.kind == "float" and int in c.types for c in kept):
        # The lines made ahead are this table's where they hold its columns: each of its cells is
        # written as its own kind is (no whole number in a float column is written 12.0).
        names = tuple(c.name for c in kept)
        maker = LineMaker(trials=1)
        body = []
        for row in rows:
            known = lines.get(id(row))
            body.append(known[2] if known is not None and known[0] is row and known[1] == names
                        else maker(row, names, encoded))
        with replacing(csv_path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(maker.header(names))
            f.write("".join(body))
        cells = [_parquet_cells(c, encoded) for c in kept] if parquet_path is not None else []
    else:
        cells = [_csv_cells(c, encoded) for c in kept]
        with replacing(csv_path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as f:
            out = io.StringIO()
            writer = csv.writer(out, lineterminator=CSV_OPTIONS["lineterminator"])
            writer.writerow([spreadsheet_cell(c.name) for c in kept])
            table = zip(*cells)
            while True:
                # Many rows formatted at a time, then one write: the file's encoder called once a batch.
                writer.writerows(itertools.islice(table, _LINES))
                if not out.tell():
                    break
                f.write(out.getvalue())
                out.seek(0)
                out.truncate()
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
            cell = _json(v, encoded)
        elif v is None or (t is float and v != v):
            cell = ""
        else:
            continue
        if out is None:
            out = list(values)
        out[i] = cell
    return values if out is None else out


def _parquet_cells(column: _Column, encoded: Encoded) -> Sequence[Any]:
    """What :func:`_write_parquet` takes of :func:`_csv_cells`' cells, made alone: a float column's
    gaps, and the JSON of list and dict cells (the rest of an object column it takes from the values)."""
    values, kind = column.values, column.kind
    if kind == "float":
        return _csv_cells(column, encoded)
    if kind != "object" or not (list in column.types or dict in column.types):
        return values
    out = list(values)
    for i, v in enumerate(values):
        t = type(v)
        if t is list or t is dict:
            out[i] = _json(v, encoded)
    return out


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
