"""Tool levelling counted from the runs' ``tool_events`` (the one place these counts come from; the
levelling itself lives in ``levelfield.tools``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["tool_counts", "SOURCES"]

SOURCES = ("replayed", "recorded", "live", "missed", "environment")


def tool_counts(runs: Iterable[Any]) -> dict[str, Any] | None:
    """Counts over one agent's runs: ``calls``, one count per source (``replayed``: served from the
    cassette or the shared record; ``recorded``; ``live``; ``missed``; ``environment``: answered by the run's
    environment session), ``faults`` (calls that met
    one) and ``fault_kinds`` ({kind: calls}). None when no run's tools were levelled."""
    counts: dict[str, Any] = {"calls": 0, **dict.fromkeys(SOURCES, 0), "faults": 0, "fault_kinds": {}}
    levelled = False
    for run in runs:
        events = getattr(run, "tool_events", None)
        if events is None:
            continue
        levelled = True
        for event in events:
            if not isinstance(event, Mapping):
                continue
            counts["calls"] += 1
            source = event.get("source")
            if source in SOURCES:
                counts[source] += 1
            fault = event.get("fault")
            if fault:
                counts["faults"] += 1
                counts["fault_kinds"][fault] = counts["fault_kinds"].get(fault, 0) + 1
    return counts if levelled else None
