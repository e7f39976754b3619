"""Reading datasets from disk: one entry point for files, folders and ``file:case`` selections.

``load_dataset`` decides what a path holds (JSON Lines, a JSON list or columns, CSV, Parquet,
Arrow IPC / Feather, an ADK eval set or legacy ``.test.json``, a folder of ADK files) and hands
the rows to the core data model, which knows nothing about files.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._core.data.dataset import EvalCase, EvalDataset
from .._core.data.jsonsafe import MAX_DEPTH
from .._core.data.rows import dataset_from_located, dataset_from_rows, deferred_dataset, too_deep_message
from .._core.errors import DatasetError
from .arrow import ARROW_SUFFIXES, is_arrow_table, read_arrow_rows, table_rows

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")

__all__ = ["load_dataset", "read_rows", "csv_rows", "split_selection", "select_cases"]


_SAID_NON_FINITE: set[tuple[str, str, int]] = set()


class _NonFinite:
    """``NaN``/``Infinity`` literals met in a JSON file (not JSON, though Python reads them): kept as numbers
    in the dataset, but JSON has no such number, so a saved run holds null there; said once per file."""

    def __init__(self, path: Path) -> None:
        self.path, self.first, self.count, self.where = path, "", 0, ""

    def __call__(self, literal: str) -> float:
        if not self.count:
            self.first = f"{self.where}: {literal}"
        self.count += 1
        return float(literal.replace("Infinity", "inf"))

    def warn(self) -> None:
        said = (str(self.path), self.first, self.count)
        if self.count and said not in _SAID_NON_FINITE:  # a file is read twice (counted, then built): said once
            _SAID_NON_FINITE.add(said)
            from .._core.errors import LevelfieldWarning
            from .._core.run.notices import warn_user

            more = f" (and {self.count - 1} more)" if self.count > 1 else ""
            warn_user(LevelfieldWarning(
                f"{self.path}: {self.first}{more} is not a JSON number; it is kept as a number in the dataset, but a "
                "saved run (runs.jsonl, summary) holds null there. Write null for no value, or a finite number"))


def _jsonl_rows(lines: Iterable[str], path: Path, *, with_clean: bool = False) -> Iterator[tuple[Any, ...]]:
    """The rows of a JSON Lines file's ``lines`` as ``(row, location)`` pairs (blank lines skipped);
    ``with_clean``: ``(row, location, clean)``, clean when the line shows the row can hold no lone
    surrogate (no ``\\uD800``-``\\uDFFF`` escape) and cannot nest deeper than levelfield reads (fewer
    brackets than that: see ``levelfield._core.data.rows._checked``, which such a row can skip)."""
    name = path.name
    odd = _NonFinite(path)
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                odd.where = f"line {n}"
                row = json.loads(line, parse_constant=odd)
                if with_clean:
                    clean = _SURROGATE_ESCAPE.search(line) is None and line.count("[") + line.count("{") < MAX_DEPTH
                    yield row, f"{name} line {n}", clean
                else:
                    yield row, f"{name} line {n}"
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path} line {n}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise DatasetError(too_deep_message(f"{path} line {n}")) from None
    odd.warn()


def _with_cell(data: Any, column: str) -> bool:
    """Whether in-memory rows (a DataFrame, or a sequence of mappings) have a ``column`` cell: only
    then is the outside format that reads it (Databricks ``trace``, Vertex ``agent_data``) loaded."""
    if hasattr(data, "columns") and hasattr(data, "to_dict"):
        return column in data.columns
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return any(isinstance(r, Mapping) and column in r for r in data)
    return False


def _rows_from_json(path: Path, data: Any) -> list[Any]:
    from . import adk  # ADK's eval-set shapes, loaded for a .json file only

    if isinstance(data, list):
        if path.name.endswith(adk.TEST_SUFFIX) and adk.is_legacy_test_file(data):
            return [adk.case_from_legacy(data, path)]  # ADK reads the whole file as one session
        if adk.is_named_cases(data):
            return adk.cases_from_named(data, path)  # ADK's old [{name, data, initial_session}]
        return data
    if isinstance(data, dict):
        if adk.is_evalset(data):
            return adk.cases_from_evalset(data, str(path), file=str(path))  # already EvalCases (multi-turn)
        lists = {k: v for k, v in data.items() if isinstance(v, list)}
        if lists and len(lists) == len(data) and len({len(v) for v in lists.values()}) == 1:
            n = len(next(iter(lists.values())))
            return [{k: v[i] for k, v in lists.items()} for i in range(n)]  # column-oriented
    raise DatasetError(f"{path}: expected a list of rows or an object of equal-length columns")


def read_rows(path: Path) -> list[tuple[Any, str]]:
    """The rows of one file as ``(row, location)`` pairs; a row is a dict or an already-built EvalCase."""
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    name = path.name
    try:
        if name.endswith(".jsonl"):
            with path.open(encoding="utf-8") as f:
                return list(_jsonl_rows(f, path))
        if name.endswith(".json"):
            odd = _NonFinite(path)
            odd.where = "a value"
            try:
                data = json.loads(path.read_text(encoding="utf-8"), parse_constant=odd)
                odd.warn()
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise DatasetError(too_deep_message(str(path))) from None
            return [(r, f"{name} row {i + 1}") for i, r in enumerate(_rows_from_json(path, data))]
        if path.suffix in ARROW_SUFFIXES:
            return [(r, f"{name} row {i + 1}") for i, r in enumerate(read_arrow_rows(path))]
        if name.endswith(".csv"):
            return [
                ({k: (None if v == "" else v) for k, v in row.items()}, f"{name} row {number} (line {line})")
                for row, number, line in csv_rows(path)
            ]
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot be read ({exc})") from None
    raise DatasetError(
        f"{path}: unsupported file type; use .jsonl, .json, .csv, .parquet, .arrow/.feather, .evalset.json or .test.json"
    )


def csv_rows(path: Path) -> Iterator[tuple[dict[str, str], int, int]]:
    """The rows of a CSV file as ``(row, row number, line number)``, parsed strictly.

    Python's ``csv`` in strict mode, so that a quote that is never closed where it should be is
    an error naming the line it opens on, not rows silently merged into one cell. A header that
    names a column twice, a row with more or fewer cells than the header: errors naming the file,
    the row and the field. Empty cells are ``""``; blank lines are skipped.
    """
    _allow_long_cells()
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, strict=True)
        header: list[str] | None = None
        number = 0
        while True:
            start = reader.line_num + 1  # a record starts on the line after the last one read
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DatasetError(_csv_problem(path, start, reader.line_num, exc)) from None
            if not cells:
                continue
            if header is None:
                header = _checked_header(path, cells, start)
                continue
            number += 1
            if len(cells) != len(header):
                raise DatasetError(_cell_count_problem(path, header, cells, number, start))
            yield dict(zip(header, cells)), number, start
        if header is None:
            raise DatasetError(f"{path}: the file is empty; a CSV dataset needs a header line (prompt,reference,...)")


def _allow_long_cells() -> None:
    # csv refuses a cell over 128 KiB by default; a long agent answer is a legitimate cell.
    limit = 2**31 - 1
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)


def _checked_header(path: Path, names: list[str], line: int) -> list[str]:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise DatasetError(
                f"{path} line {line}: column {name!r} appears twice in the header (columns {seen[name] + 1} and {i + 1}); "
                "rename or remove one, so that no column is lost"
            )
        seen[name] = i
    return names


def _cell_count_problem(path: Path, header: list[str], cells: list[str], number: int, line: int) -> str:
    if len(cells) > len(header):
        return (f"{path} line {line}: has {len(cells)} cells but the header has {len(header)}; "
                "put a cell holding commas in double quotes")
    return (f"{path} row {number} (line {line}), field {header[len(cells)]!r}: missing; the row has {len(cells)} cells "
            f"but the header has {len(header)}. Add the missing cells (an empty cell is nothing between two commas)")


def _csv_problem(path: Path, start: int, end: int, error: csv.Error) -> str:
    """Python's csv error as one line naming the file and the line where the bad record starts."""
    message = str(error)
    if "expected after" in message or "unexpected end of data" in message:
        where = "" if end <= start else f" (it runs on to line {end})"
        return (f"{path} line {start}: a quoted cell is never closed{where}; add the closing double quote, "
                'or write a double quote inside a quoted cell as two ("")')
    return f"{path} line {start}: not valid CSV ({message})"


# --- selecting cases: file.json:case_1,case_2 -----------------------------------------------------


def split_selection(spec: str) -> tuple[Path, list[str] | None]:
    """``"file.json:a,b"`` -> (file.json, ["a", "b"]); a plain path -> (path, None)."""
    path = Path(spec)
    if path.exists() or ":" not in spec:
        return path, None
    head, _, tail = spec.rpartition(":")
    if not head or not Path(head).exists():
        return path, None
    ids = [s.strip() for s in tail.split(",") if s.strip()]
    if not ids:
        raise DatasetError(f"{spec}: nothing after ':'; write file.json:case_1,case_2 to select cases")
    return Path(head), ids


def select_cases(dataset: EvalDataset, ids: Sequence[str]) -> EvalDataset:
    """The cases named ``ids``, in the order given; an unknown id is an error listing the known ones."""
    by_id = {c.case_id: c for c in dataset}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        known = ", ".join(list(by_id)[:20]) + (" ..." if len(by_id) > 20 else "")
        raise DatasetError(f"{dataset.source}: no case named {', '.join(map(repr, unknown))}; cases: {known}")
    chosen = [by_id[i] for i in dict.fromkeys(ids)]
    return EvalDataset(chosen, source=f"{dataset.source}:{','.join(dict.fromkeys(ids))}", columns=dataset.columns)


def _filled(located: list[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """Rows with what an outside format's cell holds read into them: a Databricks ``trace``, a Vertex ``agent_data``."""
    if any(isinstance(row, Mapping) and "trace" in row for row, _ in located):
        from . import databricks

        located = databricks.fill_located(located)
    return _agent_data_filled(located)


def _agent_data_filled(located: list[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """Rows with a Vertex ``agent_data`` cell read into them (the module loads only when one has it)."""
    if any(isinstance(row, Mapping) and "agent_data" in row for row, _ in located):
        from . import vertex

        return vertex.fill_located(located)
    return located


def load_dataset(data: Any, *, source: str | None = None) -> EvalDataset:
    """Load cases from a DataFrame, a pyarrow Table, a list of dicts, an EvalDataset, or a path.

    A path may be a ``.jsonl``/``.json``/``.csv``/``.parquet``/``.arrow``/``.feather`` file (Parquet
    and Arrow need ``levelfield[parquet]``), an ADK ``.evalset.json`` / ``.test.json``,
    a folder of ADK files, or ``file.json:case_1,case_2`` to select cases. A Vertex AI ``agent_data``
    cell (agents, turns, events) becomes the case's turns, tool calls and hand-offs. Column aliases:
    ``request``/``query`` -> prompt, ``expected_response``/``final_response`` -> reference,
    ``expected_tool_use``/``tool_uses`` -> reference_trajectory (ADK's ``{name, args}`` calls
    become ``{tool_name, tool_input}``). A request may be ``{"messages": [...]}`` or
    ``{"query", "history"}``. Every row is checked here, before any agent runs; an error names
    the file, row and field. A JSON Lines file, or a DataFrame of 1,000 rows or more, keeps no case
    objects once checked: they are made when first asked for (an agent's run), and saved
    predictions are scored from the rows as loaded, batch by batch, in the memory ``evaluate(path)`` takes.

    Args:
        data: A DataFrame, a pyarrow Table, a list of dicts, an ``lf.EvalDataset`` (returned as it is) or
            a path (a file, an ADK folder, or ``file.json:case_1,case_2``).
        source: The name the dataset reports as its source (and errors name); default: the path, or
            what the data is.

    Returns:
        An ``lf.EvalDataset``, every row checked.

    Raises:
        DatasetError: A row that cannot be a case, naming the file, row and field.
    """
    if is_arrow_table(data):
        label = source or "Arrow table"
        located = [(r, f"{label} row {i + 1}") for i, r in enumerate(table_rows(data))]
        return dataset_from_located(_filled(located), label)
    if not isinstance(data, (str, Path)):
        if _with_cell(data, "trace"):
            from . import databricks

            traced = databricks.traced_rows(data, source)  # a Databricks 'trace' column fills what rows leave out
            if traced is not None:
                return dataset_from_located(_agent_data_filled(traced[0]), traced[1])
        if _with_cell(data, "agent_data"):
            from . import vertex

            agent_rows = vertex.agent_data_rows(data, source)  # Vertex's 'agent_data' conversations
            if agent_rows is not None:
                return dataset_from_located(*agent_rows)
        if _is_frame(data) and len(data) >= _DEFERRED_ROWS:
            return _deferred_frame(data, source or "DataFrame")
        return _columnar_source(dataset_from_rows(data, source=source), data)
    path = Path(data)
    if isinstance(data, str) and not path.exists() and ":" in data:
        path, selected = split_selection(data)
        if selected is not None:
            return select_cases(load_dataset(path, source=source), selected)
    if path.is_dir():
        from . import adk

        return adk.load_folder(path)
    if path.name.endswith(".jsonl") and path.is_file():
        return _deferred_jsonl(path, source or str(path))
    dataset = dataset_from_located(_filled(read_rows(path)), source or str(path))
    for case in dataset:
        if case.file is None:
            case.file = str(path)  # criteria are resolved beside the file a case came from
    return _columnar_source(dataset, path)


_DEFERRED_ROWS = 1_000
"""From this many rows a DataFrame's cases are made when first asked for, not when it is loaded."""
_CHUNK = 2_000  # rows checked (or made into cases) at a time: what is held of them at once


def _deferred_jsonl(path: Path, label: str) -> EvalDataset:
    """A JSON Lines file's cases, every row checked now, made when first asked for (see ``deferred_dataset``).

    The file's bytes are kept (compressed), so the cases made later are the rows checked now even if
    the file changes meanwhile; saved predictions are scored from the file itself while it is unchanged."""
    try:
        stamp = _stamp(path)
        # Compressed first, and read back as a stream: what is held is the compressed copy (a few
        # bytes a row), never the text and its rows at once.
        packed = gzip.compress(path.read_bytes(), compresslevel=1)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc})") from None

    def chunks() -> Iterator[list[tuple[Any, str, bool]]]:
        with gzip.open(io.BytesIO(packed), "rt", encoding="utf-8") as text:
            lines = _jsonl_rows(text, path, with_clean=True)
            while chunk := list(itertools.islice(lines, _CHUNK)):
                filled = _filled([(row, where) for row, where, _ in chunk])
                yield [(row, where, clean) for (row, where), (_, _, clean) in zip(filled, chunk)]

    try:
        dataset = deferred_dataset(chunks, label)
    except UnicodeDecodeError as exc:  # as read_rows says it
        raise DatasetError(f"{path}: cannot be read ({exc})") from None

    def in_file(case: EvalCase) -> None:
        if case.file is None:
            case.file = str(path)  # criteria are resolved beside the file a case came from

    dataset = deferred_dataset_from(dataset, chunks, in_file)
    return dataset.remember_source(path, unchanged=lambda: _stamp(path) == stamp)


def deferred_dataset_from(dataset: EvalDataset, chunks: Callable[[], Iterable[Sequence[tuple[Any, str]]]],
                          finish: Callable[[EvalCase], None] | None = None) -> EvalDataset:
    """``dataset`` (deferred, checked) making its cases from ``chunks()`` when first asked, each
    completed by ``finish``."""
    from .._core.data.rows import build_cases

    return EvalDataset.deferred(lambda: build_cases(chunks(), finish), len(dataset), source=dataset.source,
                                columns=dataset.columns)


def _stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns


def _is_frame(data: Any) -> bool:
    return hasattr(data, "iloc") and hasattr(data, "to_dict") and hasattr(data, "columns")


def _deferred_frame(frame: Any, label: str) -> EvalDataset:
    """A DataFrame's cases, every row checked now, made when first asked for (see ``deferred_dataset``);
    made from a copy of the frame's columns, so a change to the frame after loading is not seen."""
    frame = frame.copy(deep=True)  # new columns; the cells (lists, dicts) are shared, not copied

    def chunks() -> Iterator[list[tuple[Any, str]]]:
        for start in range(0, len(frame), _CHUNK):
            rows = frame.iloc[start:start + _CHUNK].to_dict("records")
            yield [(row, f"{label} row {start + i + 1}") for i, row in enumerate(rows)]

    from .._core.data.frame_check import frame_checked
    from .._core.data.rows import build_cases

    # Checked by columns, once (the rows it cannot clear row by row, as deferred_dataset checks them).
    ids, columns = frame_checked(frame, label)
    return EvalDataset.deferred(lambda: build_cases(chunks()), len(ids), source=label,
                                columns=columns).remember_source(frame)


def _columnar_source(dataset: EvalDataset, data: Any) -> EvalDataset:
    """``dataset`` remembering the DataFrame, rows or file it was read from row for row: saved
    predictions are then scored from that source batch by batch when the batch scorer reads it
    (``evaluate(load_dataset(df))`` at ``evaluate(df)``'s rate)."""
    try:
        one_to_one = isinstance(data, (str, Path)) or len(dataset) == len(data)
    except TypeError:  # no length: scored from its cases
        one_to_one = False
    return dataset.remember_source(data) if one_to_one else dataset
