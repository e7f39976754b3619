"""ADK's rubric-based criteria: a yes/no verdict per rubric, the metric's own and the case's, per turn or per conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._core.errors import MetricError
from ..._core.score.metrics.base import Score, ScoringContext, TurnContext
from ..client import JudgeReply
from ..metrics import cost_columns, judge_failure
from ..rubrics import (
    RUBRIC_ANSWER_FORMAT,
    RUBRIC_EXPECTED,
    Rubric,
    RubricVerdicts,
    Verdict,
    combine_samples,
    parse_verdicts,
    read_rubrics,
    render_rubrics,
)
from .base import AdkJudged, _Unread
from .turns import _answer_text, _calls_json, _dialogue_text, _own

__all__ = ["RubricJudged", "case_rubrics"]

_RUBRIC_INSTRUCTIONS = {
    "FINAL_RESPONSE_QUALITY": (
        "You judge the final answer an AI agent gave a user, one property at a time.\n"
        "Trust only the user's request and what the agent's sound tool calls returned (a call with the wrong "
        "tool or wrong arguments proves nothing). The agent's own summaries are not evidence. A claim in the "
        "final answer counts as correct only if that evidence supports it; wording may differ, and numbers "
        "may be rounded as long as no conclusion changes.\n"
        '"yes": the answer fulfils the property, or the property does not apply to it.\n'
        '"no": the property applies and the answer does not fulfil it, or it rests on a claim the evidence cannot confirm.'
    ),
    "TOOL_USE_QUALITY": (
        "You judge how an AI agent used its tools for a user's request, one property at a time.\n"
        "Look only at the tool calls shown: which tools were called, with which arguments, in which order, and "
        "what they returned. Check each property exactly and completely.\n"
        '"yes": the tool use fulfils the property, or the property does not apply.\n'
        '"no": the tool use does not fulfil the property.'
    ),
    "TRAJECTORY_QUALITY": (
        "You judge an AI agent's behaviour over a whole conversation with a user, one property at a time.\n"
        "Read every turn: the user's messages, the agent's tool calls and their results, and its answers. "
        "Judge the agent's performance over all its turns together (a mistake later corrected counts as "
        "corrected); when a property is not met, name the turn that breaks it in the rationale.\n"
        '"yes": the agent fulfils the property over the conversation, or it does not apply.\n'
        '"no": the agent does not fulfil the property.'
    ),
}


class RubricJudged(AdkJudged):
    """A yes/no verdict per rubric, per turn (``scope="turn"``) or once for the whole conversation (``scope="conversation"``).

    Rubrics are the metric's own (``rubrics=``) plus the case's rubrics whose ``type`` is the
    metric's ``rubric_type`` (from the eval set: case-level ``rubrics`` and each invocation's).
    A turn (or the conversation) scores the share of its rubrics met; the row scores the share of
    all its verdicts, and ``<metric>/per_turn`` holds each turn's share (only the last turn for a
    conversation). Every verdict with its rationale is kept in ``<metric>/rubrics``.
    """

    def __init__(
        self,
        judge: Any = None,
        *,
        name: str,
        rubric_type: str | None,
        scope: str = "turn",
        rubrics: Any = None,
        focus: str = "FINAL_RESPONSE_QUALITY",
        description: str = "",
        include_intermediate_responses_in_final: bool = False,
        instruction: str | None = None,
        **options: Any,
    ) -> None:
        if scope not in ("turn", "conversation"):
            raise MetricError(f"metric {name!r}: scope must be 'turn' or 'conversation', got {scope!r}")
        self._setup(name, judge, options)
        self.rubric_type = rubric_type
        self.scope = scope
        self.focus = focus
        self.rubrics = read_rubrics(rubrics, f"metric {name!r}")
        self.with_intermediate = include_intermediate_responses_in_final
        self.instruction = instruction or _RUBRIC_INSTRUCTIONS[focus]
        """What the judge is told to judge (the ``# Task`` section of its prompt)."""
        self.expected_answer = RUBRIC_EXPECTED
        if description:
            self.description = description

    # rubrics --------------------------------------------------------------------------------
    def rubrics_for(self, metadata: Mapping[str, Any], case_id: str, turn: int | None, where: str = "") -> list[Rubric]:
        """The rubrics judged for one turn (0-based; None: the whole conversation) of a case; an error naming the case when there are none."""
        own = list(self.rubrics)
        extra = case_rubrics(metadata, turn, where or f"case {case_id!r}")
        if self.rubric_type is not None:
            # As ADK: a case's rubrics count for the metric whose type they carry (untyped ones for none).
            extra = [r for r in extra if r.type == self.rubric_type]
        ids = {r.id for r in own}
        clash = [r.id for r in extra if r.id in ids]
        if clash:
            raise MetricError(
                f"case {case_id!r}{' (' + where + ')' if where else ''}: rubric id {clash[0]!r} is given both by "
                f"metric {self.name!r} and by the case; rubric ids must be unique"
            )
        found = own + extra
        if not found:
            kind = f" of type {self.rubric_type}" if self.rubric_type else ""
            raise MetricError(
                f"case {case_id!r}{' (' + where + ')' if where else ''}: metric {self.name!r} has no rubrics to judge; "
                f"give 'rubrics' in its criterion (test_config.json) or rubrics{kind} in the case"
            )
        return found

    def check_case(self, case: Any) -> None:
        """Raise before any run when a case would have no rubrics to judge (names the case and its file)."""
        where = getattr(case, "location", "") or ""
        turns = len(case.turns) if getattr(case, "turns", None) else 1
        indices = [None] if self.scope == "conversation" else list(range(turns))
        for i in indices:
            self.rubrics_for(case.metadata, case.case_id, i, where)

    # prompts ---------------------------------------------------------------------------------
    def render(self, turns: Sequence[TurnContext], rubrics: Sequence[Rubric]) -> str:
        """The prompt for one turn (``turns`` of one) or the whole conversation."""
        lines = ["# Task", self.instruction, ""]
        if self.scope == "conversation":
            lines += ["# The conversation", _dialogue_text(turns, own=True), ""]
        else:
            (turn,) = turns
            lines += ["# The user's request", turn.prompt, "", "# The agent's tool calls and their results", _calls_json(_own(turn.predicted_trajectory)), ""]
            if self.focus != "TOOL_USE_QUALITY":
                lines += ["# The agent's final answer", _answer_text(turn, self.with_intermediate), ""]
        lines += ["# Properties", render_rubrics(rubrics), "", RUBRIC_ANSWER_FORMAT]
        return "\n".join(lines)

    async def ascore(self, ctx: ScoringContext) -> Score:
        turns = ctx.exchanges()
        if self.scope == "conversation":
            rubrics = self.rubrics_for(ctx.metadata, ctx.case_id, None)
            replies = await self._samples(self.render(turns, rubrics), lambda r: parse_verdicts(r.text, rubrics, r.parsed).complete)
            return self.combine([(None, rubrics, replies)], len(turns))
        jobs = []
        for i, turn in enumerate(turns):
            rubrics = self.rubrics_for(ctx.metadata, ctx.case_id, i)
            replies = await self._samples(self.render([turn], rubrics), lambda r, rb=rubrics: parse_verdicts(r.text, rb, r.parsed).complete)
            jobs.append((i + 1, rubrics, replies))
        return self.combine(jobs, len(turns))

    def combine(self, jobs: Sequence[tuple[int | None, Sequence[Rubric], Sequence[JudgeReply]]], turns: int) -> Score:
        """The row's score from each judgement's replies: ``(turn or None, rubrics, sample replies)``."""
        extra, usage = cost_columns([r for _, _, replies in jobs for r in replies])
        verdicts: list[Verdict] = []
        per_turn: list[float | None] = [None] * turns
        unread = _Unread()
        agreements: list[float] = []
        for turn, rubrics, replies in jobs:
            complete: list[RubricVerdicts] = []
            for reply in replies:
                if reply.error is not None:
                    unread.error(reply.error)
                    continue
                found = parse_verdicts(reply.text, rubrics, reply.parsed, turn=turn)
                if found.complete:
                    complete.append(found)
                else:
                    left = ", ".join(r.id for r in found.missing)
                    unread.answer(reply.text, f"(no readable verdict for rubric(s) {left}) ")
            if not complete:
                continue
            chosen, agreement = combine_samples(complete, rubrics)
            verdicts += chosen
            if agreement is not None:
                agreements.append(agreement)
            share = sum(v.score for v in chosen) / len(chosen)
            per_turn[(turn or turns) - 1] = share
        extra["rubrics"] = [v.as_dict() for v in verdicts]
        if agreements:
            extra["agreement"] = sum(agreements) / len(agreements)
        if unread.shown:
            extra["unparsed"] = unread.shown
        extra["per_turn"] = per_turn
        if not verdicts:
            return judge_failure(extra, usage, answers=unread.answers, errors=unread.errors, expected=self.expected_answer)
        missed = [v for v in verdicts if v.score < 0.5]
        head = f"{len(verdicts) - len(missed)} of {len(verdicts)} rubric verdicts met"
        detail = [
            f"{'turn ' + str(v.turn) + ' ' if v.turn is not None and turns > 1 else ''}[{v.rubric.id}] {v.rubric.text}: no. {v.rationale}".strip()
            for v in missed
        ]
        value = sum(v.score for v in verdicts) / len(verdicts)
        return Score(value, explanation="\n".join([head, *detail]), extra=extra, usage=usage)


def case_rubrics(metadata: Mapping[str, Any], turn: int | None, where: str) -> list[Rubric]:
    """The rubrics a case gives for one turn (0-based; None: every turn's): its own, then the turn's."""
    found = read_rubrics(metadata.get("rubrics"), f"{where}: field 'rubrics'")
    per_turn = metadata.get("turn_rubrics") or []
    picked = range(len(per_turn)) if turn is None else ([turn] if turn < len(per_turn) else [])
    for i in picked:
        found += read_rubrics(per_turn[i], f"{where}: invocation {i + 1} field 'rubrics'")
    return list({r.id: r for r in found}.values())
