"""Saved predictions read and written in batches: files larger than memory, row groups at a time.

Readers yield batches that are cheap to send to another process (a byte range of a JSON Lines
file, the row groups of a Parquet file, a slice of rows in memory); a batch is parsed where it
is scored (``levelfield._core.score.batch``). Writers take scored batches and stream the metrics
table out (Parquet, JSON Lines or CSV), into a temporary file renamed only when complete.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.data.lines import LineBlocks
from .._core.data.rows import too_deep_message
from .._core.errors import DatasetError, MissingExtraError
from .._core.results.tables import CSV_OPTIONS, spreadsheet_safe
from .._core.results.writing import writing
from .._core.score.batch.rows import batches_of
from .._core.score.batch.scorer import FIXED_COLUMNS, ScoredBatch

__all__ = [
    "BatchSource",
    "batch_source",
    "columnar_readable",
    "TableWriter",
    "table_writer",
    "BATCH_ROWS",
]

BATCH_ROWS = 5_000
"""Rows a batch holds: large enough that a batch costs little to hand over, small enough that a
few in flight stay well under a few hundred MB."""

_SUFFIXES = (".jsonl", ".parquet", ".arrow", ".feather", ".ipc", ".csv")


def _pyarrow(what: str):
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingExtraError("parquet", "pyarrow", what) from None
    return pyarrow


def _loads():
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - orjson ships with the parquet extra
        return json.loads


# --- batches --------------------------------------------------------------------------------------


@dataclass
class _JsonlBatch:
    """Lines of a JSON Lines file, as bytes, and the number of the first line."""

    path: str
    data: bytes
    first_line: int
    start: int
    _lines: list[int] | None = None

    def rows(self) -> list[Mapping[str, Any]]:
        loads = _loads()
        out: list[Mapping[str, Any]] = []
        lines: list[int] | None = None
        for n, line in enumerate(self.data.split(b"\n"), self.first_line):
            if not line.strip():
                if lines is None:  # a blank line: from here on, rows and lines part ways
                    lines = list(range(self.first_line, self.first_line + len(out)))
                continue
            try:
                out.append(loads(line))
            except ValueError:
                try:  # what orjson refuses and Python's json reads (NaN, Infinity), the row path reads too
                    out.append(json.loads(line))
                except ValueError as exc:
                    raise DatasetError(f"{self.path} line {n}: not valid JSON ({exc})") from None
                except RecursionError:
                    raise DatasetError(too_deep_message(f"{self.path} line {n}")) from None
            if lines is not None:
                lines.append(n)
        self._lines = lines
        return out

    def where(self, i: int) -> str:
        line = self._lines[i] if self._lines is not None else self.first_line + i
        return f"{os.path.basename(self.path)} line {line}"


@dataclass
class _ParquetBatch:
    """Row groups of a Parquet file (or record batches of an Arrow IPC file)."""

    path: str
    groups: list[int]
    start: int
    kind: str = "parquet"

    def _table(self):
        pa = _pyarrow(f"{self.path}: reading {self.kind}")
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(self.path).read_row_groups(self.groups)
        import pyarrow.ipc as ipc

        with pa.memory_map(self.path) as source:
            reader = ipc.open_file(source)
            return pa.Table.from_batches([reader.get_batch(i) for i in self.groups])

    def rows(self) -> list[Mapping[str, Any]]:
        from .arrow import table_rows

        return list(table_rows(self._table()))  # as load_dataset reads them: no null-filled struct keys

    def where(self, i: int) -> str:
        return f"{os.path.basename(self.path)} row {self.start + i + 1}"


@dataclass
class _CsvBatch:
    rows_: list[dict[str, Any]]
    path: str
    start: int
    lines: list[int]
    """The line each row starts on (a quoted cell may hold line breaks)."""

    def rows(self) -> list[Mapping[str, Any]]:
        return [{k: (None if v == "" else v) for k, v in r.items()} for r in self.rows_]

    def where(self, i: int) -> str:
        return f"{os.path.basename(self.path)} row {self.start + i + 1} (line {self.lines[i]})"


@dataclass
class _ArrowTableBatch:
    """A slice of a pyarrow Table."""

    table: Any
    start: int
    label: str

    def rows(self) -> list[Mapping[str, Any]]:
        from .arrow import table_rows

        return list(table_rows(self.table))

    def where(self, i: int) -> str:
        return f"{self.label} row {self.start + i + 1}"


@dataclass
class _FrameBatch:
    """A slice of a DataFrame."""

    frame: Any
    start: int
    label: str

    def rows(self) -> list[Mapping[str, Any]]:
        return self.frame.to_dict("records")

    def where(self, i: int) -> str:
        return f"{self.label} row {self.start + i + 1}"


@dataclass
class BatchSource:
    """Where saved rows come from: the batches, how many rows there are (None when unknown),
    the name errors use, and the rows' own columns for an in-memory table (else None)."""

    batches: Iterator[Any]
    total: int | None
    source: str
    frame: Any = None


def columnar_readable(data: Any) -> bool:
    """Whether ``data`` is saved rows this module reads in batches: a ``.jsonl``/``.parquet``/
    ``.arrow``/``.feather``/``.csv`` path, a DataFrame, a pyarrow Table or a list of dicts."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        return path.is_file() and path.name.lower().endswith(_SUFFIXES)
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return True
    if type(data).__module__.startswith("pyarrow") and type(data).__name__ == "Table":
        return True
    return isinstance(data, list) and bool(data) and all(type(r) is dict for r in data[:100])


_BLANK_INSIDE = re.compile(rb"\n[ \t\r]*\n")
_BLANK_FIRST = re.compile(rb"[ \t\r]*\n")


def _rows_in(piece: bytes) -> int:
    """The non-blank lines of a piece that ends at a line end (counted in C when none is blank)."""
    if _BLANK_INSIDE.search(piece) is None and _BLANK_FIRST.match(piece) is None:
        return piece.count(b"\n")
    return sum(1 for line in piece.split(b"\n") if line.strip())


def _jsonl_batches(path: Path, batch_rows: int) -> Iterator[_JsonlBatch]:
    # Cut the file at line ends into pieces of about batch_rows lines, estimated from the first.
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(1 << 20)
        lines_in_head = head.count(b"\n") or 1
        chunk = max(1 << 10, int(len(head) / lines_in_head * batch_rows))
        f.seek(0)
        line, start = 1, 0
        pieces = LineBlocks(f, chunk)
        for piece in pieces:
            yield _JsonlBatch(str(path), piece, line, start)
            line += piece.count(b"\n")
            start += _rows_in(piece)
        if pieces.rest.strip():  # a last line without its newline
            yield _JsonlBatch(str(path), pieces.rest, line, start)
    del size


def _arrow_batches(path: Path, kind: str, batch_rows: int) -> tuple[Iterator[_ParquetBatch], int]:
    pa = _pyarrow(f"{path}: reading {kind}")
    if kind == "parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(path).metadata
        except Exception as exc:  # pyarrow's errors for a file that is not Parquet
            raise DatasetError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    else:
        import pyarrow.ipc as ipc

        try:
            with pa.memory_map(str(path)) as source:
                reader = ipc.open_file(source)
                sizes = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
        except Exception as exc:
            raise DatasetError(f"{path}: not a readable Arrow IPC file ({type(exc).__name__}: {exc})") from None

    def batches() -> Iterator[_ParquetBatch]:
        groups: list[int] = []
        rows = start = 0
        for i, n in enumerate(sizes):
            groups.append(i)
            rows += n
            if rows >= batch_rows:
                yield _ParquetBatch(str(path), groups, start, kind)
                start += rows
                groups, rows = [], 0
        if groups:
            yield _ParquetBatch(str(path), groups, start, kind)

    return batches(), sum(sizes)


def _csv_batches(path: Path, batch_rows: int) -> Iterator[_CsvBatch]:
    from .files import csv_rows

    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    start = 0
    for row, _, line in csv_rows(path):
        rows.append(row)
        lines.append(line)
        if len(rows) == batch_rows:
            yield _CsvBatch(rows, str(path), start, lines)
            start += len(rows)
            rows, lines = [], []
    if rows:
        yield _CsvBatch(rows, str(path), start, lines)


def batch_source(data: Any, *, batch_rows: int = BATCH_ROWS, source: str | None = None) -> BatchSource:
    """The batches of saved rows in ``data`` (see :func:`columnar_readable`)."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        name = path.name.lower()
        label = source or str(path)
        if name.endswith(".jsonl"):
            return BatchSource(_jsonl_batches(path, batch_rows), None, label)
        if name.endswith(".parquet"):
            batches, total = _arrow_batches(path, "parquet", batch_rows)
            return BatchSource(batches, total, label)
        if name.endswith((".arrow", ".feather", ".ipc")):
            batches, total = _arrow_batches(path, "Arrow IPC", batch_rows)
            return BatchSource(batches, total, label)
        if name.endswith(".csv"):
            return BatchSource(_csv_batches(path, batch_rows), None, label)
        raise DatasetError(f"{path}: saved predictions are read from {', '.join(_SUFFIXES)} files")
    import pandas as pd

    if type(data).__module__.startswith("pyarrow"):
        label = source or "Arrow table"
        tables = (_ArrowTableBatch(data.slice(s, batch_rows), s, label) for s in range(0, data.num_rows, batch_rows))
        return BatchSource(tables, data.num_rows, label, frame=None)
    if isinstance(data, pd.DataFrame):
        label = source or "DataFrame"
        # A slice at a time: the frame's rows never all exist as dicts at once.
        frames = (_FrameBatch(data.iloc[s : s + batch_rows], s, label) for s in range(0, len(data), batch_rows))
        return BatchSource(frames, len(data), label, frame=data)
    label = source or "dataset"
    return BatchSource(batches_of(data, batch_rows, label), len(data), label, frame=data)


# --- writers --------------------------------------------------------------------------------------


class TableWriter:
    """Streams scored batches into one table file; the file appears only when :meth:`close` completes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.partial")
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        self._file: Any = None

    def write(self, batch: ScoredBatch) -> None:
        """Append one scored batch; a full disk is a WriteError naming the table."""
        with writing(self.path):
            self._write(batch)

    def _write(self, batch: ScoredBatch) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()

    def close(self) -> Path:
        with writing(self.path):
            self._close()
            if not self._tmp.exists():  # no rows: an empty table file still says so
                self._tmp.touch()
            os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        try:
            self._close()
        finally:
            self._tmp.unlink(missing_ok=True)


class _ParquetWriter(TableWriter):
    def _write(self, batch: ScoredBatch) -> None:
        pa = _pyarrow("writing the metrics table as Parquet")
        import pyarrow.parquet as pq

        cols = batch.columns
        arrays = {
            "case_id": pa.array(cols["case_id"], type=pa.string()),
            "failure": pa.array(cols["failure"], type=pa.int8()),
            "latency_in_seconds": pa.array(cols["latency_in_seconds"], type=pa.float64()),
        }
        for name, column in cols.items():
            if name not in FIXED_COLUMNS:
                arrays[name] = pa.array(column, type=pa.float64())
        table = pa.table(arrays)
        if self._file is None:
            self._file = pq.ParquetWriter(self._tmp, table.schema)
        self._file.write_table(table)


class _JsonlWriter(TableWriter):
    def _write(self, batch: ScoredBatch) -> None:
        if self._file is None:
            self._file = self._tmp.open("wb")
        cols = batch.columns
        names = list(cols)
        dumps = _dumps()
        lists = [c.tolist() if hasattr(c, "tolist") else c for c in cols.values()]
        self._file.write(b"".join(dumps(dict(zip(names, values))) + b"\n" for values in zip(*lists)))


class _CsvWriter(TableWriter):
    def _write(self, batch: ScoredBatch) -> None:
        import pandas as pd

        first = self._file is None
        if first:
            self._file = self._tmp.open("w", encoding="utf-8", newline="")
        spreadsheet_safe(pd.DataFrame(batch.columns)).to_csv(self._file, header=first, **CSV_OPTIONS)


def _dumps():
    try:
        import orjson

        return lambda row: orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY)
    except ImportError:  # pragma: no cover
        return lambda row: json.dumps(row, ensure_ascii=False).encode("utf-8")


def table_writer(path: str | Path) -> TableWriter:
    """A writer for ``path`` by its suffix: ``.parquet`` (needs pyarrow), ``.jsonl`` or ``.csv``."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith(".parquet"):
        _pyarrow("writing the metrics table as Parquet")
        return _ParquetWriter(path)
    if name.endswith(".jsonl"):
        return _JsonlWriter(path)
    if name.endswith(".csv"):
        return _CsvWriter(path)
    from .._core.errors import ConfigError

    raise ConfigError(f"{path}: a metrics table is written as .parquet, .jsonl or .csv")
