"""Cells whose type is kept: a reference of ``42`` stays 42 (text metrics compare its text), and infinity in a
cell is kept and said, since a saved run (JSON) can only hold null there."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import DatasetError
from .dataset import ALIASES

__all__ = ["reference_cell", "say_infinite"]


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def reference_cell(value: Any, where: str, column: str) -> str | int | float | None:
    """A reference cell: text as it is, and a number kept a number (``42`` stays 42; text metrics compare
    ``str(42)``); an empty cell (NaN, as pandas reads one) is no reference. Infinity is no answer to compare."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if _is_missing(value) or isinstance(value, str):
        return value if isinstance(value, str) else None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise DatasetError(f"{where}, field '{column}': {value} is no reference an answer can match; give the "
                               "expected answer, or leave the cell empty for none")
        return value
    raise DatasetError(f"{where}, field '{column}': expected text or a number, got {type(value).__name__}")


def say_infinite(rows: Sequence[Any], label: str, frame: Any = None) -> None:
    """A cell holding infinity is kept as the number, but a saved run (JSON) can only hold null there: said once
    per dataset, naming the first. (NaN is how pandas holds an empty cell: it is no value, saved as null.)
    ``frame``: the DataFrame ``rows`` came from, whose number columns are looked at as arrays first."""
    known = {name for names in ALIASES.values() for name in names}  # their cells are checked where they are read
    if frame is not None:
        import numpy as np

        floats = frame.select_dtypes("floating")
        if not any(np.isinf(floats[c].to_numpy()).any() for c in floats.columns if c not in known) and \
                all(frame[c].dtype.kind != "O" for c in frame.columns if c not in known):
            return
    found = [(i, k, v) for i, r in enumerate(rows) if type(r) is dict
             for k, v in r.items() if isinstance(v, float) and math.isinf(v) and k not in known]
    if found:
        import warnings

        from ..errors import LevelfieldWarning

        i, key, value = found[0]
        more = f" (and {len(found) - 1} more cells)" if len(found) > 1 else ""
        warnings.warn(LevelfieldWarning(f"{label} row {i + 1}, field {key!r}: {value}{more} is kept as a number in "
                                        "the dataset, but a saved run (runs.jsonl, summary) holds null there: JSON "
                                        "has no infinity. Give a finite number, or None for no value"), stacklevel=4)
