"""Outside formats, read and written: one module per format (``adk``: ADK eval sets; ``files``:
JSON Lines, JSON and CSV datasets), behind ``load_dataset``. Core never imports this package."""

from .adk import write_evalset as to_adk_evalset
from .files import load_dataset

__all__ = ["load_dataset", "to_adk_evalset"]
