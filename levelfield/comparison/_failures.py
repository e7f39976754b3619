"""What went wrong in a run, said plainly: failed runs grouped by agent and error type, and judges nobody could read.

The CLI prints :func:`format_failures` after every run that had failures, the HTML report
shows :func:`failure_groups` as a table, and ``evaluate``/``compare`` warn with the same words
when every run of an agent failed. They warn too when most rows of a judged metric failed because
no parser could read the judge's answers (:func:`unreadable_judges`), and the CLI exits 1 then.
Nothing here changes a result; it only reads the runs and scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core.data.types import AgentRun
from .._core.run.notices import LevelfieldWarning

if TYPE_CHECKING:
    from .._core.results.result import EvalResult

__all__ = [
    "ErrorGroup",
    "AllRunsFailedWarning",
    "JudgeAnswersUnreadableWarning",
    "UnreadableJudge",
    "unreadable_judges",
    "failure_groups",
    "agents_that_always_failed",
    "format_failures",
    "one_line",
    "failure_classes",
]

_EXAMPLE_CHARS = 240


class AllRunsFailedWarning(LevelfieldWarning):
    """Every run of an agent failed: almost always a wrong output shape or a broken agent."""


class JudgeAnswersUnreadableWarning(LevelfieldWarning):
    """Most rows of a judged metric failed because no parser could read the judge's answers: the judge
    does not answer in the format the metric reads (its scores are NaN, not the judge's opinion)."""


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
    failure_class: str | None = None
    """Whose fault these failures were (A2A agents: ``protocol``, ``transport``, ``agent``), from the example."""
    rule: str | None = None
    """The spec rule a protocol failure broke, from the example."""


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
            groups.append(ErrorGroup(agent, kind, counts[kind], one_line(run.error), run.case_id,
                                     run.failure_class, run.failure_rule))
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
        lines.append(f"  {agent}: {failed} of {total} runs failed{_by_class(runs)}")
        for g in mine[:top]:
            whose = f" [{g.failure_class}{': ' + g.rule if g.rule else ''}]" if g.failure_class else ""
            lines.append(f"    {g.error_type} x{g.count}{whose}, e.g. case {g.case_id}: {g.example}")
        if len(mine) > top:
            rest = sum(g.count for g in mine[top:])
            lines.append(f"    ... and {rest} more in {len(mine) - top} other error types")
    return "\n".join(lines)


def failure_classes(runs: Sequence[AgentRun]) -> dict[str, int]:
    """Failed runs by whose fault they were (protocol, transport, agent); empty when no run says."""
    from .._core.results.columns import FAILURE_CLASSES

    said = [r.failure_class for r in runs if r.failure and r.failure_class]
    return {kind: said.count(kind) for kind in FAILURE_CLASSES} if said else {}


def _by_class(runs: Sequence[AgentRun]) -> str:
    classes = failure_classes(runs)
    return f" ({', '.join(f'{kind} {n}' for kind, n in classes.items())})" if classes else ""


_ANSWER_CHARS = 200


@dataclass(frozen=True)
class UnreadableJudge:
    """A judged metric most of whose judged rows failed because the judge's answers could not be read."""

    metric: str
    judge: str
    """The judge as people name it (its ``provider:model``, model name, or function)."""
    unreadable: int
    """Rows failed by an unreadable answer."""
    judged: int
    """Rows the judge was asked about (scored, or failed by the judge)."""
    example: str
    """One raw answer, on one line, at most 200 characters."""
    expected: str
    """The answer format the metric reads, with an example."""

    def message(self) -> str:
        """The warning's text (the CLI prints the same)."""
        return (
            f"judge {self.judge!r} gave answers no parser reads on {self.unreadable} of {self.judged} judged rows of "
            f"metric {self.metric!r}: those rows are NaN and judge failures (see {self.metric}/error), not scores. "
            f"One answer: {self.example!r}. Expected {self.expected}. "
            "Each judged metric's answer format is in docs/judges.md."
        )


def _judge_label(metric: Any) -> str:
    panel = getattr(metric, "panel", ())
    if panel:  # judges=[...]: every judge of the panel answered unreadably on those rows
        return "panel of " + ", ".join(p.name for p in panel)
    judge = getattr(metric, "judge", None)
    label = getattr(judge, "label", None)
    return label if isinstance(label, str) else repr(judge)


def unreadable_judges(results: Mapping[str, EvalResult], metrics: Sequence[Any]) -> list[UnreadableJudge]:
    """The judged metrics for which more than half of the judged rows (over every agent's ``results``)
    failed because no parser could read the judge's answer; one entry per metric.

    A metric is judged when it says which answer it reads (``expected_answer``). The summaries
    decide first (a metric with few judge failures is not read further); only then are the rows'
    scores read, to tell unreadable answers from judge errors (a journaled run is read back then).
    """
    found: list[UnreadableJudge] = []
    for metric in metrics:
        expected = getattr(metric, "expected_answer", None)
        if not isinstance(expected, str):
            continue
        name = metric.name
        judged = failed = 0
        for result in results.values():
            summary = result.summary_metrics
            if f"{name}/nan_count" not in summary:
                continue
            failures = int(summary.get(f"{name}/failure_count", 0) or 0)
            judged += int(summary["row_count"]) - int(summary[f"{name}/nan_count"]) + failures
            failed += failures
        if not failed or failed * 2 <= judged:
            continue
        from ..judge.metrics import UNREADABLE_ANSWER, is_unreadable  # judges only: a heavy import

        unreadable, example = 0, None
        for result in results.values():
            for row in result.recorded_scores:
                score = row.get(name)
                if is_unreadable(score):
                    unreadable += 1
                    if example is None:
                        example = str(score.extra[UNREADABLE_ANSWER])  # type: ignore[union-attr]
        if unreadable * 2 > judged:
            found.append(UnreadableJudge(name, _judge_label(metric), unreadable, judged,
                                         one_line(example, _ANSWER_CHARS) if example else "(empty answer)", expected))
    return found
