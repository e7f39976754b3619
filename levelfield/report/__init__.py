"""The HTML report: a reader of a :class:`~levelfield.Comparison`, never imported by it.

``lf.report.write(cmp, "report.html")`` writes one self-contained page; ``lf.report.save(cmp, dir)``
writes the comparison's files (``cmp.save``) and ``report.html`` beside them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .html import render, write

if TYPE_CHECKING:
    from ..comparison._comparison import Comparison

__all__ = ["render", "write", "save"]


def save(cmp: Comparison, directory: str | Path) -> dict[str, Path]:
    """Write the comparison's run record, tables and summary (``cmp.save``) and ``report.html`` into ``directory``."""
    paths = cmp.save(directory)
    paths["report"] = write(cmp, Path(directory) / "report.html")
    return paths
