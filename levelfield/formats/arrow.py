"""Parquet and Arrow IPC (Feather) files, and pyarrow Tables, read as dataset rows.

Reading gives plain Python rows (dicts, lists, ints), like the JSON formats. A nested column a
DataFrame wrote (a trajectory as ``list<struct>``) comes back without the keys Arrow added to
make its rows one struct type: Arrow stores the union of every row's keys and fills the missing
ones with null, so ``{"device": "lamp"}`` beside ``{"room": "hall"}`` would read back as
``{"device": "lamp", "room": None}``. Inside a struct a null therefore reads as an absent key.
Result tables are written by ``levelfield._core.results.result.table_to_parquet``, which stores list and
dict cells as JSON text (as the CSV writer does) and so keeps them exactly: null values, mixed
types across rows, any nesting.

Needs pyarrow (``pip install 'levelfield[parquet]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._core.errors import DatasetError, MissingExtraError

__all__ = ["ARROW_SUFFIXES", "require_pyarrow", "is_arrow_table", "read_arrow_rows", "table_rows"]

ARROW_SUFFIXES = (".parquet", ".arrow", ".feather")
"""File suffixes read here: Parquet, and Arrow IPC files (Feather v2 is the same format)."""


def require_pyarrow(what: str) -> Any:
    """The pyarrow module, or a MissingExtraError saying that ``what`` needs ``levelfield[parquet]``."""
    try:
        import pyarrow
    except ImportError:
        raise MissingExtraError("parquet", "pyarrow", what) from None
    return pyarrow


def is_arrow_table(data: Any) -> bool:
    """Whether ``data`` is a pyarrow Table or RecordBatch (checked without importing pyarrow)."""
    kind = type(data)
    return kind.__module__.startswith("pyarrow") and kind.__name__ in ("Table", "RecordBatch")


def read_arrow_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``.parquet``, ``.arrow`` or ``.feather`` file, as plain Python dicts."""
    pa = require_pyarrow(f"{path}: reading {path.suffix[1:].title()}")
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            import pyarrow.feather as feather

            table = feather.read_table(path)  # Arrow IPC files, Feather v1 and v2
    except (OSError, pa.ArrowException) as exc:
        kind = "Parquet" if path.suffix == ".parquet" else "Arrow IPC (Feather)"
        raise DatasetError(f"{path}: not a readable {kind} file ({type(exc).__name__}: {exc})") from None
    return table_rows(table)


def table_rows(table: Any) -> list[dict[str, Any]]:
    """The rows of a pyarrow Table (or RecordBatch) as dicts; struct cells lose Arrow's null-filled keys."""
    columns = []
    for name, column in zip(table.column_names, table.columns):
        values = column.to_pylist()
        if _has_nested(column.type) and _needs_plain(column, column.type):
            values = [_plain(v, column.type) for v in values]
        columns.append((name, values))
    return [dict(zip((name for name, _ in columns), row)) for row in zip(*(values for _, values in columns))] if columns else []


def _has_nested(kind: Any) -> bool:
    import pyarrow.types as t

    return t.is_struct(kind) or t.is_map(kind) or t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind)


def _needs_plain(array: Any, kind: Any) -> bool:
    """Whether a nested column holds a map or a null inside a struct (else ``to_pylist`` is already plain)."""
    import pyarrow.types as t

    for chunk in getattr(array, "chunks", [array]):
        if t.is_map(kind):
            return True
        if t.is_struct(kind):
            for i in range(kind.num_fields):
                child = chunk.field(i)
                if child.null_count or _needs_plain(child, kind.field(i).type):
                    return True
        elif t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
            if _needs_plain(chunk.flatten(), kind.value_type):
                return True
    return False


def _plain(value: Any, kind: Any) -> Any:
    """``value`` (from ``to_pylist``) with struct nulls dropped and maps as dicts, following the Arrow type."""
    if value is None:
        return None
    import pyarrow.types as t

    if t.is_struct(kind):
        fields = {kind.field(i).name: kind.field(i).type for i in range(kind.num_fields)}
        return {k: _plain(v, fields[k]) for k, v in value.items() if v is not None}
    if t.is_map(kind):
        return {k: _plain(v, kind.item_type) for k, v in value}
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return [_plain(v, kind.value_type) for v in value]
    return value
