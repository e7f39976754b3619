"""What levelling did, counted from the runs' ``tool_events`` (the one place these counts come from)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.results.tool_counts import SOURCES, tool_counts

__all__ = ["tool_counts", "SOURCES", "levelling_lines"]


def levelling_lines(levelling: Mapping[str, Mapping[str, Any]] | None, header: Mapping[str, Any] | None) -> list[str]:
    """What the tool levelling did, one line for the set-up and one per agent (``[]`` when nothing was levelled)."""
    if not levelling:
        return []
    header = header or {}
    cassette, faults = header.get("cassette"), header.get("faults")
    setup = []
    if cassette:
        setup.append(f"cassette {cassette.get('path')} ({cassette.get('mode')}, "
                     f"fingerprint {cassette.get('fingerprint')})")
    if faults:
        setup.append(f"faults at rate {faults.get('rate'):g}, seed {faults.get('seed')}, kinds "
                     f"{', '.join(faults.get('kinds') or [])} (schedule v{faults.get('schedule_version')})")
    environment = header.get("environment")
    if environment:
        package = f" ({environment.get('package')} {environment.get('version')})" if environment.get("package") else ""
        setup.append(f"environment {environment.get('name')}{package}, each run its own state")
    lines = [f"Tools levelled: {'; '.join(setup) or 'live tools'}"]
    for agent, note in levelling.items():
        counts = note.get("counts")
        if not note.get("levelled"):
            lines.append(f"  {agent}: not levelled ({note.get('why')})")
        elif counts is None:
            lines.append(f"  {agent}: levelled ({note.get('how')}), no run made a tool call")
        else:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts["fault_kinds"].items()))
            answered = f"{counts['environment']} answered by the environment, " if counts.get("environment") else ""
            lines.append(f"  {agent}: {counts['calls']} tool calls: {answered}{counts['replayed']} replayed, "
                         f"{counts['recorded']} recorded, {counts['live']} live, {counts['missed']} missed; "
                         f"{counts['faults']} faulted"
                         + (f" ({kinds})" if kinds else ""))
    return lines
