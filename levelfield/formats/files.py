"""Reading datasets from disk: one entry point for files, folders and ``file:case`` selections.

``load_dataset`` decides what a path holds (JSON Lines, a JSON list or columns, CSV, Parquet,
Arrow IPC / Feather, an ADK eval set or legacy ``.test.json``, a folder of ADK files) and hands
the rows to the core data model, which knows nothing about files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.data.dataset import EvalDataset, dataset_from_located, dataset_from_rows
from ..core.errors import DatasetError
from . import adk, databricks
from .arrow import ARROW_SUFFIXES, is_arrow_table, read_arrow_rows, table_rows

__all__ = ["load_dataset", "read_rows", "split_selection", "select_cases"]


def _rows_from_json(path: Path, data: Any) -> list[Any]:
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
            rows = []
            with path.open(encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            rows.append((json.loads(line), f"{name} line {n}"))
                        except json.JSONDecodeError as exc:
                            raise DatasetError(f"{path} line {n}: not valid JSON ({exc.msg})") from None
            return rows
        if name.endswith(".json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
            return [(r, f"{name} row {i + 1}") for i, r in enumerate(_rows_from_json(path, data))]
        if path.suffix in ARROW_SUFFIXES:
            return [(r, f"{name} row {i + 1}") for i, r in enumerate(read_arrow_rows(path))]
        if name.endswith(".csv"):
            records = _csv_records(path)
            # Header is line 1, so data row i sits on line i + 2.
            return [
                ({k: (None if v == "" else v) for k, v in r.items()}, f"{name} row {i + 1} (line {i + 2})")
                for i, r in enumerate(records)
            ]
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot be read ({exc})") from None
    raise DatasetError(
        f"{path}: unsupported file type; use .jsonl, .json, .csv, .parquet, .arrow/.feather, .evalset.json or .test.json"
    )


def _csv_records(path: Path) -> list[dict[str, Any]]:
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise DatasetError(f"{path}: the file is empty; a CSV dataset needs a header line (prompt,reference,...)") from None
    except pd.errors.ParserError as exc:
        raise DatasetError(_csv_problem(path, str(exc))) from None
    return frame.to_dict("records")


def _csv_problem(path: Path, message: str) -> str:
    """pandas' tokenizer message as one line naming the file and the line."""
    cells = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if cells:
        want, line, got = cells.groups()
        return (
            f"{path} line {line}: has {got} cells but the header has {want}; "
            "put a cell holding commas in double quotes"
        )
    quote = re.search(r"EOF inside string starting at row (\d+)", message)
    if quote:
        # pandas counts rows from 0 with the header as row 0, so row n sits on line n + 1.
        return f"{path} line {int(quote.group(1)) + 1}: a quoted cell is never closed; add the closing double quote"
    return f"{path}: not a valid CSV file ({' '.join(message.split())})"


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


def load_dataset(data: Any, *, source: str | None = None) -> EvalDataset:
    """Load cases from a DataFrame, a pyarrow Table, a list of dicts, an EvalDataset, or a path.

    A path may be a ``.jsonl``/``.json``/``.csv``/``.parquet``/``.arrow``/``.feather`` file (Parquet
    and Arrow need ``levelfield[parquet]``), an ADK ``.evalset.json`` / ``.test.json``,
    a folder of ADK files, or ``file.json:case_1,case_2`` to select cases. Column aliases:
    ``request``/``query`` -> prompt, ``expected_response``/``final_response`` -> reference,
    ``expected_tool_use``/``tool_uses`` -> reference_trajectory (ADK's ``{name, args}`` calls
    become ``{tool_name, tool_input}``). A request may be ``{"messages": [...]}`` or
    ``{"query", "history"}``. Every row is checked here, before any agent runs; an error names
    the file, row and field.
    """
    if is_arrow_table(data):
        label = source or "Arrow table"
        located = [(r, f"{label} row {i + 1}") for i, r in enumerate(table_rows(data))]
        return dataset_from_located(databricks.fill_located(located), label)
    if not isinstance(data, (str, Path)):
        traced = databricks.traced_rows(data, source)  # a Databricks 'trace' column fills what rows leave out
        if traced is not None:
            return dataset_from_located(*traced)
        return dataset_from_rows(data, source=source)
    path = Path(data)
    if isinstance(data, str) and not path.exists() and ":" in data:
        path, selected = split_selection(data)
        if selected is not None:
            return select_cases(load_dataset(path, source=source), selected)
    if path.is_dir():
        return adk.load_folder(path)
    dataset = dataset_from_located(databricks.fill_located(read_rows(path)), source or str(path))
    for case in dataset:
        if case.file is None:
            case.file = str(path)  # criteria are resolved beside the file a case came from
    return dataset
