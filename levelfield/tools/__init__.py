"""Levelling agents' tools: the same tools, the same tool answers and the same faults for every agent.

    cassette = lf.ToolCassette("tools.jsonl", mode="replay")
    cmp = lf.compare(dataset, {"graph": graph, "adk": root_agent}, tools=cassette, faults=lf.Faults(rate=0.1, seed=7))

See ``docs/tools.md``. Names load on first use, so ``import levelfield`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_members

_LAZY = {
    "CassetteError": ".cassette",
    "FAULT_KINDS": ".faults",
    "InjectedToolError": ".faults",
    "InjectedToolTimeout": ".faults",
    "InjectedToolRefusal": ".faults",
    "ReplayedToolError": ".level",
    "ToolNotRecordedError": ".level",
    "tool_counts": ".summary",
}

if TYPE_CHECKING:
    from .cassette import CassetteError
    from .faults import FAULT_KINDS, InjectedToolError, InjectedToolRefusal, InjectedToolTimeout
    from .level import ReplayedToolError, ToolNotRecordedError
    from .summary import tool_counts

__all__ = ["CassetteError", "FAULT_KINDS", "InjectedToolError", "InjectedToolTimeout",
           "InjectedToolRefusal", "ReplayedToolError", "ToolNotRecordedError", "tool_counts"]


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
