"""ADK eval set files (.evalset.json, folders of .test.json): not supported yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import DatasetError


def rows_from_evalset(data: dict[str, Any], source: str) -> list[dict[str, Any]]:
    raise DatasetError(f"{source}: ADK eval sets (eval_cases) are not supported yet")


def load_folder(path: Path):
    raise DatasetError(f"{path}: is a folder; loading folders of ADK .test.json files is not supported yet")
