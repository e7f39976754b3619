"""What is said aloud when results could mislead: warnings, and the checks that find their cause.

A score table full of NaN because the dataset lacks the reference a metric needs, trajectory
scores of an agent whose tool calls nobody saw, a resumed journal whose references or metrics
changed: each is a :class:`LevelfieldWarning` naming the metric, column, agent or cases. The
command line prints them as ``levelfield CMD: warning: ...`` lines.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ..data.dataset import ALIASES, EvalCase
from ..data.jsonsafe import to_jsonable
from ..data.types import AgentRun
from ..errors import LevelfieldWarning
from ..results.record import metric_spec
from ..score.metrics.base import Metric

__all__ = [
    "warn_user",
    "LevelfieldWarning",
    "MissingReferenceWarning",
    "BudgetWarning",
    "NoToolCallsWarning",
    "ResumeWarning",
    "REFERENCE_FIELDS",
    "MissingReference",
    "missing_references",
    "unscored_metrics",
    "agents_without_tool_calls",
    "tool_call_tally",
    "reference_changes",
    "metric_changes",
]


def _directory(module: Any) -> str:
    return os.path.dirname(os.path.abspath(module.__file__))


# levelfield itself, and the standard library's machinery between the user's call and the body
# (a sync entry point reaches its body through asyncio.run, or a thread inside a running loop).
_INNER = tuple(_directory(m) + os.sep for m in (sys.modules["levelfield"], asyncio, concurrent.futures)) + (
    os.path.abspath(threading.__file__), os.path.abspath(warnings.__file__))


def warn_user(message: Warning | str, category: type[Warning] = UserWarning) -> None:
    """Warn at the user's own line: the first frame outside levelfield and asyncio's machinery.

    A fixed ``stacklevel`` cannot say where: the same body runs under ``evaluate`` (through
    ``asyncio.run``), ``aevaluate`` (awaited by the user) and the command line.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 2  # stacklevel 2: warn_user's caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_INNER):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class BudgetWarning(LevelfieldWarning):
    """A spending limit stopped runs from starting, or could not count what some runs cost."""


class MissingReferenceWarning(LevelfieldWarning):
    """A metric needs a reference column that some (or every) case of the dataset lacks."""


class NoToolCallsWarning(LevelfieldWarning):
    """Trajectory metrics were asked, and an agent made no tool call in any run."""


class ResumeWarning(LevelfieldWarning):
    """A resumed journal was run with other references or other metrics than now."""


REFERENCE_FIELDS = ("reference", "reference_trajectory", "reference_thoughts", "expected_retrieved_context")
"""The fields of a case that a metric scores against (the dataset's expectations, not the agent's answer)."""


@dataclass(frozen=True)
class MissingReference:
    """A reference field that ``missing`` of ``total`` cases lack, and the metrics that need it
    (``examples``: some of those cases' ids)."""

    metrics: tuple[str, ...]
    field: str
    missing: int
    total: int
    examples: tuple[str, ...]

    @property
    def everywhere(self) -> bool:
        """No case has it: its metrics can score no row."""
        return self.missing == self.total

    def message(self, source: str, *, fix: str | None = None) -> str:
        """The warning's text; ``fix`` replaces the closing advice on what to do."""
        aliases = [a for a in ALIASES.get(self.field, (self.field,)) if a != self.field]
        column = f"'{self.field}'" + (f" (or {', '.join(repr(a) for a in aliases)})" if aliases else "")
        one = len(self.metrics) == 1
        who = f"metric{'' if one else 's'} {', '.join(repr(m) for m in self.metrics)} need{'s' if one else ''}"
        if self.everywhere:
            fix = fix or f"Add the column or leave {'the metric' if one else 'them'} out"
            return (f"{who} column {column}, which no case of {source} has: {'it scores' if one else 'they score'} "
                    f"no row (NaN, shown as '-'). {fix}")
        shown = ", ".join(repr(c) for c in self.examples) + (" ..." if self.missing > len(self.examples) else "")
        return (f"{who} column {column}, which {self.missing} of {self.total} cases of {source} lack ({shown}): "
                "those rows score NaN and are left out of the mean")


def _has(case: EvalCase, field: str) -> bool:
    if getattr(case, field, None) is not None:
        return True
    return any(getattr(t, field, None) is not None for t in case.turns)


def missing_references(cases: Sequence[EvalCase], metrics: Sequence[Metric]) -> list[MissingReference]:
    """Each reference field (see :data:`REFERENCE_FIELDS`) that some case lacks and some metric needs."""
    needed: dict[str, list[str]] = {}
    for metric in metrics:
        for field in getattr(metric, "requires", ()):
            if field in REFERENCE_FIELDS:
                needed.setdefault(field, []).append(metric.name)
    out = []
    for field, names in needed.items():
        # The case's own field first, inline (most cases have it): _has for those that lack it, in their turns.
        lacking = [c.case_id for c in cases if getattr(c, field, None) is None and not _has(c, field)]
        if lacking:
            out.append(MissingReference(tuple(names), field, len(lacking), len(cases), tuple(lacking[:5])))
    return out


def unscored_metrics(summary: Mapping[str, Any], metrics: Sequence[Metric], source: str) -> list[str]:
    """Warnings for metrics that need a reference and scored none of the rows that did not fail
    (saved predictions scored batch by batch, where the cases are never held whole)."""
    rows = int(summary.get("row_count", 0))
    scorable = rows - int(summary.get("failure/count", 0) or 0)
    out = []
    for metric in metrics:
        fields = [f for f in getattr(metric, "requires", ()) if f in REFERENCE_FIELDS]
        if fields and scorable > 0 and summary.get(f"{metric.name}/nan_count", 0) >= rows:
            out.append(f"metric {metric.name!r} scored none of the {rows:,} rows of {source}: it needs column(s) "
                       f"{', '.join(repr(f) for f in fields)}, which no row gives. Add the column or leave the metric out")
    return out


def _trajectory_metric(metric: Metric) -> bool:
    return "reference_trajectory" in getattr(metric, "requires", ()) or "predicted_trajectory" in (
        getattr(metric, "reads", None) or ())


def _called(run: AgentRun) -> bool:
    """Whether the run made a tool call (its answer's or a turn's trajectory is not empty)."""
    if run.output is not None and run.output.trajectory:
        return True
    return any(o is not None and o.trajectory for o in run.turns)


def tool_call_tally(runs: Iterable[AgentRun]) -> tuple[int, int]:
    """(successful runs, of them runs that made a tool call): what the no-tool-call warning reads."""
    done = with_calls = 0
    for run in runs:
        if not run.failure:
            done += 1
            if _called(run):
                with_calls += 1
    return done, with_calls


def agents_without_tool_calls(
    tallies: Mapping[str, tuple[int, int]], metrics: Sequence[Metric], cases: Iterable[EvalCase]
) -> list[str]:
    """A warning for each agent that made no tool call in any successful run (``tallies``: agent ->
    :func:`tool_call_tally`), while trajectory metrics are asked and some case expects a call (or a
    metric needs no reference, like single tool use)."""
    asked = [m.name for m in metrics if _trajectory_metric(m)]
    if not asked or not any(done and not with_calls for done, with_calls in tallies.values()):
        return []  # no metric to warn about, or every agent made a call: the cases need not be read
    expecting = sum(1 for c in cases if c.reference_trajectory or any(t.reference_trajectory for t in c.turns))
    if not expecting and all("reference_trajectory" in getattr(m, "requires", ()) for m in metrics if m.name in asked):
        return []  # every case expects no call: an agent that makes none is right
    out = []
    for agent, (done, with_calls) in tallies.items():
        if done and not with_calls:
            out.append(
                f"agent {agent!r} made no tool call in any of its {done} successful runs, while trajectory "
                f"metrics are asked ({', '.join(asked)})"
                + (f" and {expecting} case(s) expect calls" if expecting else "")
                + ". If it does call tools, its adapter does not report them: a function agent that returns a "
                "plain string reports none (return {'response': ..., 'predicted_trajectory': [...]})"
            )
    return out


def _canonical(value: Any) -> str:
    return json.dumps(to_jsonable(value), sort_keys=True, ensure_ascii=False, default=str)


def _expectations(case: EvalCase) -> dict[str, str]:
    fields = {f: _canonical(getattr(case, f)) for f in REFERENCE_FIELDS}
    if case.turns:
        fields["turns"] = _canonical([[getattr(t, f, None) for f in REFERENCE_FIELDS] for t in case.turns])
    return fields


def reference_changes(saved: Sequence[EvalCase], cases: Sequence[EvalCase]) -> list[tuple[str, list[str]]]:
    """(case id, changed fields) for each case whose references differ between a journal's cases and these."""
    now = {c.case_id: c for c in cases}
    out = []
    for old in saved:
        new = now.get(old.case_id)
        if new is None:
            continue
        before, after = _expectations(old), _expectations(new)
        changed = [f for f in after if before.get(f) != after[f]]
        if changed:
            out.append((old.case_id, changed))
    return out


def metric_changes(saved_specs: Sequence[Mapping[str, Any]], metrics: Sequence[Metric]) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, changed) metric names between a journal's header and ``metrics``; changed: same
    name, another class or other arguments."""
    before = {str(s.get("name")): s for s in saved_specs}
    after = {m.name: metric_spec(m) for m in metrics}
    added = [n for n in after if n not in before]
    removed = [n for n in before if n not in after]
    changed = [
        n for n in after
        if n in before and (before[n].get("class"), _canonical(before[n].get("args"))) != (after[n]["class"], _canonical(after[n]["args"]))
    ]
    return added, removed, changed
