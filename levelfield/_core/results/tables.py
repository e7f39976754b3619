"""A result's tables as files: the metrics table as CSV and Parquet (whole, or a page of rows at a
time), made safe for spreadsheets; ``summary.json``; and a table read back."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.jsonsafe import dumps, to_jsonable
from ..errors import MissingExtraError
from .writing import replacing, write_text

# pandas is loaded by the functions that make or write a table: a result whose summary alone is read
# (saved rows scored batch by batch) never needs it (issue #46).
if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TABLE_PAGE", "write_tables_in_pages", "write_table_files", "table_to_csv", "CSV_OPTIONS", "spreadsheet_cell",
           "spreadsheet_safe", "write_summary", "parquet_available", "table_to_parquet", "read_table", "trimmed"]


_EMPTY_DROPPED = ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens",
                  "reasoning_tokens", "cost_note", "simulator_error", "replayed_from",
                  "simulator_total_tokens")
"""Columns a metrics table leaves out when no row has a value there."""


def trimmed(table: pd.DataFrame, filled: set[str] | None = None, trials: int | None = None) -> pd.DataFrame:
    """A metrics table without its empty optional columns, and without ``trial`` for one trial.

    ``filled``: the columns with a value in some row, and ``trials`` the number of trials, of the
    whole table when ``table`` is one page of it (by default: this table's own; ``trials=-1``: keep
    ``trial`` whatever their number).
    """
    if filled is None:
        filled = {str(c) for c in table.columns if table[c].notna().any()}
    # ``error`` and ``error_type`` stay even when no run failed: a script that reads them
    # must not break on the day every run succeeds.
    # cost_usd stays while any run reported tokens: NaN there is an unknown price, not "no data".
    drop = [key for key in _EMPTY_DROPPED if key in table and key not in filled]
    if "total_tokens" not in filled and "cost_usd" in table:
        drop.append("cost_usd")
    if "trial" in table and 0 <= (table["trial"].nunique() if trials is None else trials) <= 1:
        drop.append("trial")
    return table.drop(columns=drop)


TABLE_PAGE = 5_000
"""Runs a page of a metrics table written from the journal holds (see :func:`write_tables_in_pages`)."""


def write_tables_in_pages(pages: Callable[[int], Iterable[list[dict[str, Any]]]], out: Path, *,
                          trials: int, size: int | None = None) -> dict[str, Path]:
    """``metrics_table.csv`` (and ``.parquet`` with pyarrow) from rows made a page at a time, in
    memory bounded by the page; the same table the rows make as a whole (one page is written so).

    One pass when the first page says what the whole table is (its columns, the Parquet type of
    each): pages of one evaluation are alike. When a later page differs (a column it alone has, a
    column empty so far, a type that does not fit), the files are written again in two passes: the
    whole table's columns and types first, then the pages. ``pages(size)`` gives the rows again
    each time it is called; ``trials``: as :func:`trimmed`'s.
    """
    import pandas as pd

    size = size or TABLE_PAGE
    parquet = parquet_available()
    paths = {"metrics_table": out / "metrics_table.csv"}
    if parquet:
        paths["metrics_table_parquet"] = out / "metrics_table.parquet"
    once = iter(pages(size))
    first = next(once, [])
    second = next(once, None)
    if second is None:  # one page: the whole table
        return write_table_files(trimmed(pd.DataFrame(first), trials=trials), paths["metrics_table"],
                                 paths.get("metrics_table_parquet"))
    try:
        _write_pages(itertools.chain([first, second], once), paths, _Layout.of_first(first, trials, parquet))
    except _Uneven:
        _write_pages(pages(size), paths, _Layout.of_all(pages(size), trials, parquet))
    return paths


class _Uneven(Exception):
    """A page of a table written a page at a time differs from what the first page said."""


@dataclasses.dataclass
class _Layout:
    """What a table written in pages is: its columns, and the Parquet type of each (None: no Parquet)."""

    names: list[str]
    dropped: set[str]
    """Columns left out for being empty: a page with a value there does not fit."""
    schema: Any = None
    checked: bool = False
    """Learnt from the first page alone: every other page is checked against it."""

    @classmethod
    def of_first(cls, rows: list[dict[str, Any]], trials: int, parquet: bool) -> _Layout:
        import pandas as pd

        page = pd.DataFrame(rows)
        names = list(trimmed(page, trials=trials).columns)
        schema = None
        if parquet:
            schema = _arrow_table(page[names]).schema  # a column empty in the first page is text (see _arrow_column)
        # Left out for being empty (``trial`` is left out for the number of trials, whatever it holds).
        return cls(names, {str(c) for c in page.columns} - set(names) - {"trial"}, schema, checked=True)

    @classmethod
    def of_all(cls, pages: Iterable[list[dict[str, Any]]], trials: int, parquet: bool) -> _Layout:
        import pandas as pd

        columns: dict[str, None] = {}
        filled: set[str] = set()
        schemas = []
        for rows in pages:
            page = pd.DataFrame(rows)
            columns.update(dict.fromkeys(map(str, page.columns)))
            here = [str(c) for c in page.columns if page[c].notna().any()]
            filled.update(here)
            if parquet:  # an empty column says nothing of the type (text unless some page says otherwise)
                schemas.append(_arrow_table(page[here]).schema)
        names = list(trimmed(pd.DataFrame(columns=list(columns)), filled, trials).columns)
        schema = None
        if parquet:
            import pyarrow as pa

            unified = pa.unify_schemas(schemas, promote_options="permissive")
            schema = pa.schema([unified.field(name) if name in unified.names else pa.field(name, pa.string())
                                for name in names])
        return cls(names, set(columns) - set(names), schema)

    def page(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        import pandas as pd

        if not self.checked:
            return pd.DataFrame(rows, columns=self.names)
        page = pd.DataFrame(rows)
        new = set(map(str, page.columns)) - set(self.names) - self.dropped - {"trial"}
        if new or any(page[c].notna().any() for c in self.dropped if c in page):
            raise _Uneven
        return page.reindex(columns=self.names)


def _write_pages(pages: Iterable[list[dict[str, Any]]], paths: Mapping[str, Path], layout: _Layout) -> None:
    with contextlib.ExitStack() as files:
        f = files.enter_context(files.enter_context(replacing(paths["metrics_table"])).open("w", encoding="utf-8", newline=""))
        writer = None
        if layout.schema is not None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            writer = files.enter_context(pq.ParquetWriter(files.enter_context(replacing(paths["metrics_table_parquet"])),
                                                          layout.schema))
        for n, rows in enumerate(pages):
            page = _json_cells(layout.page(rows))  # once for both files
            spreadsheet_safe(page).to_csv(f, header=n == 0, **CSV_OPTIONS)
            if writer is not None:
                try:
                    table = _arrow_table(page).cast(layout.schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                    if layout.checked:
                        raise _Uneven from None
                    raise
                writer.write_table(table)


def write_table_files(table: pd.DataFrame, csv: Path, parquet: Path | None = None) -> dict[str, Path]:
    """A results table as ``csv`` and, when given, ``parquet``: the one writer of both files, with list
    and dict cells turned to JSON text once for the two (see :func:`table_to_csv`, :func:`table_to_parquet`)."""
    table = _json_cells(table)
    table_to_csv(table, csv)
    paths = {"metrics_table": csv}
    if parquet is not None:
        paths["metrics_table_parquet"] = table_to_parquet(table, parquet)
    return paths


def _json_cells(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its list and dict cells as JSON text (the columns without any left as they are)."""
    import pandas as pd

    out = None
    for col in table.columns[[pd.api.types.is_object_dtype(dtype) for dtype in table.dtypes]]:
        values = table[col].tolist()
        if any(type(v) in (list, dict) for v in values):
            out = table.copy(deep=False) if out is None else out
            out[col] = pd.Series([dumps(v) if type(v) in (list, dict) else v for v in values], index=table.index, dtype=object)
    return table if out is None else out


def table_to_csv(table: pd.DataFrame, path: Path) -> None:
    """Write a results table as CSV, list and dict cells as JSON (so ``load_dataset`` reads them back),
    text cells made safe for spreadsheets (see :func:`spreadsheet_safe`)."""
    with replacing(path) as tmp:
        spreadsheet_safe(table).to_csv(tmp, **CSV_OPTIONS)


CSV_OPTIONS: dict[str, Any] = {"index": False, "lineterminator": "\r\n"}
"""How results are written as CSV: RFC 4180's CRLF line ends, so that a cell holding a bare
carriage return is quoted (Python's writer quotes only line-terminator characters) and cannot
split its row."""


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_CHARS = frozenset(_FORMULA_START)
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run: one starting with ``= + - @``, a tab or a carriage
    return (OWASP's CSV injection list) gets a leading ``'``, unless it is a plain number
    (``-0.5``). Other values are returned as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as CSV should hold it: list and dict cells as JSON text, text cells (and column
    names) through :func:`spreadsheet_cell`; numeric columns untouched. Parquet and JSON Lines
    keep the raw values."""
    import pandas as pd

    table = table.rename(columns=lambda name: spreadsheet_cell(name) if isinstance(name, str) else name)
    text = [pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype) for dtype in table.dtypes]
    for col in table.columns[text]:
        values = table[col].tolist()
        # Most cells need nothing: find the few that do (a list, a formula-like start) in one pass.
        touched = [i for i, v in enumerate(values) if (type(v) is str and v[:1] in _FORMULA_CHARS) or type(v) in (list, dict)]
        if touched:
            for i in touched:
                v = values[i]
                values[i] = spreadsheet_cell(dumps(v) if isinstance(v, (list, dict)) else v)
            table[col] = pd.Series(values, index=table.index, dtype=object)
    return table


def write_summary(path: Path, summary: Mapping[str, Any]) -> Path:
    """``summary.json``: a result's summary as JSON (NaN as null)."""
    return write_text(path, json.dumps(to_jsonable(dict(summary)), indent=2, ensure_ascii=False) + "\n")


def parquet_available() -> bool:
    """Whether pyarrow is installed (``save`` then writes the tables as Parquet too)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def table_to_parquet(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a results table as Parquet (needs pyarrow), list and dict cells as JSON text.

    JSON text rather than Arrow structs: Arrow would give every row of a column one struct
    type, the union of all rows' keys (with nulls for the missing ones), and refuse a key whose
    value is a number in one row and text in another; JSON keeps each cell as it was.
    """
    arrow = _arrow_table(table)
    import pyarrow.parquet as pq

    path = Path(path)
    with replacing(path) as tmp:
        pq.write_table(arrow, tmp)
    return path


def _arrow_table(table: pd.DataFrame) -> Any:
    """A results table as an Arrow table, list and dict cells as JSON text (see :func:`table_to_parquet`)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingExtraError("parquet", "pyarrow", "writing Parquet") from None
    arrays = [_arrow_column(pa, *_cells(table.iloc[:, k])) for k in range(table.shape[1])]
    return pa.Table.from_arrays(arrays, names=[str(name) for name in table.columns])


def _cells(column: pd.Series) -> tuple[Any, bool]:
    """A column's values for Arrow, and whether a cell may hold a list or dict: a column of numbers
    or booleans is given as its array (read by Arrow as its list would be, NaN as null), and holds none."""
    if str(column.dtype) in _PLAIN_NUMBERS:
        return column.to_numpy(), False
    return column.tolist(), True


_PLAIN_NUMBERS = frozenset({"float64", "int64", "bool"})
"""NumPy dtypes whose array Arrow reads as the column's list of Python values (same type, NaN as null)."""


def _arrow_column(pa: Any, values: Any, nested: bool = True) -> Any:
    if nested and any(isinstance(v, (list, dict, tuple)) for v in values):
        values = [dumps(v) if isinstance(v, (list, dict, tuple)) else v for v in values]
    try:
        column = pa.array(values, from_pandas=True)  # NaN -> null, as pandas writes object columns
        if column.null_count == len(column):
            # Empty (``error`` when no run failed): text, not Arrow's null type, so the column has the same
            # type in every table (and in every page of one: see write_tables_in_pages).
            return pa.array([None] * len(values), pa.string())
        return column
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        # Mixed kinds in one column (a metadata field that is a number in one row and text in
        # the next, a whole number past 64 bits) are kept as text rather than refused.
        return pa.array([None if _missing(v) else v if isinstance(v, str) else dumps(v) for v in values], pa.string())


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def read_table(path: Path) -> Any:
    """A metrics table written by a table writer, by its suffix."""
    import pandas as pd

    name = path.name.lower()
    if name.endswith(".parquet"):
        return pd.read_parquet(path)
    if name.endswith(".jsonl"):
        return pd.read_json(path, lines=True, dtype={"case_id": str})
