"""One run of one case as a transcript, step by step: what the user said, what the agent did and answered.

Built from what a run record holds: the case's history and prompt (or its turns, or a simulated
user's messages), then per turn the agent's intermediate texts, its tool calls with arguments and
results (each marked against the reference as the report marks them: match, args differ, extra,
missing at its place in the reference order), a hand-off wherever the sub-agent making the calls
changes (``ToolCall.agent``), its final answer, and the error of a failed run. The record does not
keep when an intermediate text came relative to the calls, so they come first, as the model's
thinking aloud before it acts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.data.dataset import EvalCase
from ..core.data.types import AgentOutput, AgentRun, ToolCall
from ..core.score.diff import MarkedCall, mark_trajectory
from ..core.score.matching import ToolCallMatcher
from ..report.html import in_reference_order

__all__ = ["Step", "transcript"]

StepKind = Literal["turn", "system", "user", "assistant", "tool", "intermediate", "call", "handoff", "answer", "error"]


@dataclass(frozen=True)
class Step:
    """One line of a transcript."""

    kind: StepKind
    text: str = ""
    mark: MarkedCall | None = None
    """For a ``call``: the call set against the reference (``predicted`` None when it is missing)."""
    agent: str | None = None
    """For a ``handoff``: the sub-agent that takes over."""


def transcript(case: EvalCase, run: AgentRun, matcher: ToolCallMatcher) -> list[Step]:
    """The steps of ``run`` on ``case``, in order."""
    steps: list[Step] = [Step(m.role if m.role != "assistant" else "assistant", m.content) for m in case.history]
    if run.turns:
        users = run.conversation.user_turns if run.conversation is not None else [t.prompt for t in case.turns]
        for i, output in enumerate(run.turns):
            reference = case.turns[i].reference_trajectory if i < len(case.turns) else None
            steps.append(Step("turn", f"turn {i + 1}"))
            if i < len(users):
                steps.append(Step("user", users[i]))
            steps.extend(_output_steps(output, reference, matcher))
    else:
        if case.prompt is not None:
            steps.append(Step("user", case.prompt))
        output = run.output or run.partial_output
        if output is not None:
            steps.extend(_output_steps(output, case.reference_trajectory, matcher, answer=run.output is not None))
        elif case.reference_trajectory:
            # Nothing made: every expected call is missing, shown so the gap is plain.
            steps.extend(_call_steps(mark_trajectory([], case.reference_trajectory, matcher)))
    if run.failure:
        kind, message = run.error_type or "error", run.error or ""
        steps.append(Step("error", message if message.startswith(kind) else f"{kind}: {message}".rstrip(": ")))
    return steps


def _output_steps(output: AgentOutput, reference: list[ToolCall] | None, matcher: ToolCallMatcher,
                  *, answer: bool = True) -> list[Step]:
    steps = [Step("intermediate", text) for text in output.intermediate_responses if text]
    steps.extend(_call_steps(mark_trajectory(output.trajectory, reference, matcher)))
    if answer or output.response:
        steps.append(Step("answer", output.response))
    return steps


def _call_steps(marked: list[MarkedCall]) -> list[Step]:
    steps: list[Step] = []
    current: str | None = None
    for m in in_reference_order(marked):
        who = m.predicted.agent if m.predicted is not None else None
        if who and who != current:
            steps.append(Step("handoff", agent=who))
            current = who
        steps.append(Step("call", mark=m))
    return steps
