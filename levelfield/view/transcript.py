"""One run of one case as a transcript, step by step: what the user said, what the agent did and answered.

Built from what a run record holds: the case's history and prompt (or its turns, or a simulated
user's messages), then per turn the agent's intermediate texts, its tool calls with arguments and
results (each marked against the reference as the report marks them: match, args differ, extra,
missing at its place in the reference order), the hand-offs the run recorded
(``AgentOutput.handoffs``, each shown where the calls of the agent taking over begin), its final
answer, and the error of a failed run. A failed run shows what it had made before failing
(``partial_output``: the calls of the turn that failed, as made) and says that the calls still
missing were not reached. The record does not keep when an intermediate text came relative to the
calls, so they come first, as the model's thinking aloud before it acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .._core.data.dataset import EvalCase
from .._core.data.types import AgentOutput, AgentRun, Handoff, ToolCall
from .._core.score.diff import MarkedCall, mark_trajectory
from .._core.score.matching import ToolCallMatcher
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
    cut_short: bool = False
    """For a missing ``call``: the run failed before it could be made (rather than the agent not making it)."""


def transcript(case: EvalCase, run: AgentRun, matcher: ToolCallMatcher) -> list[Step]:
    """The steps of ``run`` on ``case``, in order."""
    steps: list[Step] = [Step(m.role if m.role != "assistant" else "assistant", m.content) for m in case.history]
    failed = run.failure
    if run.turns or (case.turns and failed):
        users = run.conversation.user_turns if run.conversation is not None else [t.prompt for t in case.turns]
        outputs: list[AgentOutput | None] = list(run.turns)
        unfinished = len(outputs) < len(case.turns) if case.turns else run.partial_output is not None
        if failed and unfinished:
            outputs.append(run.partial_output)  # the turn that failed: what it had made, if anything
        for i, output in enumerate(outputs):
            reference = case.turns[i].reference_trajectory if i < len(case.turns) else None
            steps.append(Step("turn", f"turn {i + 1}"))
            if i < len(users):
                steps.append(Step("user", users[i]))
            last_failed = failed and i == len(outputs) - 1 and i >= len(run.turns)
            steps.extend(_made_steps(output, reference, matcher, failed=last_failed))
    else:
        if case.prompt is not None:
            steps.append(Step("user", case.prompt))
        steps.extend(_made_steps(run.output or run.partial_output, case.reference_trajectory, matcher,
                                 failed=run.output is None and failed))
    if failed:
        kind, message = run.error_type or "error", run.error or ""
        steps.append(Step("error", message if message.startswith(kind) else f"{kind}: {message}".rstrip(": ")))
    return steps


def _made_steps(output: AgentOutput | None, reference: list[ToolCall] | None, matcher: ToolCallMatcher,
                *, failed: bool) -> list[Step]:
    """What one turn made; ``failed``: the turn failed, ``output`` is what it had made (None: nothing known)."""
    if output is not None:
        return _output_steps(output, reference, matcher, answer=not failed, failed=failed)
    if reference:
        # Nothing made: every expected call is missing, shown so the gap is plain.
        return _call_steps(mark_trajectory([], reference, matcher), [], failed=failed)
    return []


def _output_steps(output: AgentOutput, reference: list[ToolCall] | None, matcher: ToolCallMatcher,
                  *, answer: bool = True, failed: bool = False) -> list[Step]:
    steps = [Step("intermediate", text) for text in output.intermediate_responses if text]
    steps.extend(_call_steps(mark_trajectory(output.trajectory, reference, matcher), output.handoffs, failed=failed))
    if answer or output.response:
        steps.append(Step("answer", output.response))
    return steps


def _call_steps(marked: list[MarkedCall], handoffs: Sequence[Handoff], *, failed: bool = False) -> list[Step]:
    """The calls in reference order, with each recorded hand-off before the first call of the agent
    it hands to (and the ones no call follows at the end): only hand-offs the run recorded show, so
    a single agent naming itself on its calls shows none."""
    steps: list[Step] = []
    pending = list(handoffs)
    current: str | None = None
    for m in in_reference_order(marked):
        who = m.predicted.agent if m.predicted is not None else None
        if who and who != current:
            to = next((k for k, h in enumerate(pending) if h.to_agent == who), None)
            if to is not None:
                steps.extend(Step("handoff", agent=h.to_agent) for h in pending[: to + 1])
                del pending[: to + 1]
            current = who
        steps.append(Step("call", mark=m, cut_short=failed and m.status == "missing"))
    steps.extend(Step("handoff", agent=h.to_agent) for h in pending)
    return steps
