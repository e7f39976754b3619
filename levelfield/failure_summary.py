"""What went wrong in a run, said plainly: failed runs grouped by agent and error type.

The CLI prints :func:`format_failures` after every run that had failures, the HTML report
shows :func:`failure_groups` as a table, and ``evaluate``/``compare`` warn with the same words
when every run of an agent failed. Nothing here changes a result; it only reads the runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .core.data.types import AgentRun

__all__ = [
    "ErrorGroup",
    "AllRunsFailedWarning",
    "failure_groups",
    "agents_that_always_failed",
    "format_failures",
    "one_line",
]

_EXAMPLE_CHARS = 240


class AllRunsFailedWarning(UserWarning):
    """Every run of an agent failed: almost always a wrong output shape or a broken agent."""


@dataclass(frozen=True)
class ErrorGroup:
    """The failed runs of one agent that share an error type, with one of them as the example."""

    agent: str
    error_type: str
    count: int
    """Failed runs of this agent with this error type."""
    example: str
    """The first such run's error message, on one line."""
    case_id: str
    """The case the example came from."""


def one_line(text: str | None, limit: int = _EXAMPLE_CHARS) -> str:
    """An error message as one line of at most ``limit`` characters (tracebacks and JSON fold)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_groups(runs_by_agent: Mapping[str, Sequence[AgentRun]]) -> list[ErrorGroup]:
    """Failed runs grouped by (agent, error type), most frequent first within each agent."""
    groups: list[ErrorGroup] = []
    for agent, runs in runs_by_agent.items():
        counts: dict[str, int] = {}
        first: dict[str, AgentRun] = {}
        for run in runs:
            if not run.failure:
                continue
            kind = run.error_type or "error"
            counts[kind] = counts.get(kind, 0) + 1
            first.setdefault(kind, run)
        for kind in sorted(counts, key=lambda k: (-counts[k], k)):
            run = first[kind]
            groups.append(ErrorGroup(agent, kind, counts[kind], one_line(run.error), run.case_id))
    return groups


def agents_that_always_failed(runs_by_agent: Mapping[str, Sequence[AgentRun]]) -> list[str]:
    """Agents that ran at least once and failed every run."""
    return [a for a, runs in runs_by_agent.items() if runs and all(r.failure for r in runs)]


def format_failures(runs_by_agent: Mapping[str, Sequence[AgentRun]], *, top: int = 3,
                    counts: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The failures as terminal text: per agent, its ``top`` error types with a count, a case and a message.

    ``counts`` gives each agent's (failed runs, runs) as the summary counts them (``cmp.summary``'s
    ``failures`` and ``runs``), so the line says what the table says even when ``runs_by_agent``
    holds only the failed runs (journaled runs: only those are read back). Without it, the runs
    given are all the agent's runs. Empty when no run failed.
    """
    groups = failure_groups(runs_by_agent)
    if not groups:
        return ""
    lines = ["Failures:"]
    for agent, runs in runs_by_agent.items():
        mine = [g for g in groups if g.agent == agent]
        if not mine:
            continue
        failed, total = counts[agent] if counts is not None else (sum(g.count for g in mine), len(runs))
        lines.append(f"  {agent}: {failed} of {total} runs failed")
        for g in mine[:top]:
            lines.append(f"    {g.error_type} x{g.count}, e.g. case {g.case_id}: {g.example}")
        if len(mine) > top:
            rest = sum(g.count for g in mine[top:])
            lines.append(f"    ... and {rest} more in {len(mine) - top} other error types")
    return "\n".join(lines)
