"""``lf.metrics``: the metric classes users build metrics lists from."""

from .core.matching import ToolCallMatcher
from .core.metrics import *  # noqa: F403
from .core.metrics import __all__ as _core_all
from .judge import databricks  # Databricks' judged metrics: correctness, groundedness, ...

__all__ = [*_core_all, "ToolCallMatcher", "databricks"]
