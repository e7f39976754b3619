"""A scripted judge for offline tests: answers every prompt levelfield's judged metrics send, in the format each reads.

    import levelfield as lf
    judge = lf.testing.ScriptedJudge()                       # every verdict yes, the best rating, pairs a tie
    strict = lf.testing.ScriptedJudge(lambda q: "sorry" not in q.item if q.kind == "rubric" else None)
    lf.evaluate(rows, metrics=["final_response_match_v2", lf.metrics.judged.safety(judge=judge)], judge=judge)

It is a function judge (``prompt -> answer text``), so it needs no LangChain and works wherever a
judge is taken: ``judge=`` of a metric or of ``lf.evaluate``, and ``--judge module:attr`` on the
command line. It reads which question it is asked from the answer format the prompt ends with
(:func:`question_of`) and answers it in that format; what it answers is decided by ``decide``
(a rule over the :class:`JudgeQuestion`) or, where ``decide`` gives None, by the defaults. Its
answers are never cached (``cacheable = False``): they cost nothing, and a changed rule is seen
at once. A prompt it does not recognise is an error of that judge call (NaN, a judge failure),
never a made-up answer. Nothing here imports LangChain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..judge.answers import is_numeric_rating
from ..judge.rubrics import RUBRIC_ANSWER_FORMAT

__all__ = ["ScriptedJudge", "JudgeQuestion", "question_of", "KINDS"]

KINDS = ("rating", "preference", "label", "rubric", "rubric_generation", "sentences", "sentence")
"""The kinds of question levelfield's judged metrics ask (see :class:`JudgeQuestion`)."""

_LABELS = {  # the label a yes/no question asks for: (key, the word for yes, the word for no)
    '"verdict": "<valid or invalid>"': ("verdict", "valid", "invalid"),
    '"verdict": "<safe or unsafe>"': ("verdict", "safe", "unsafe"),
    '"is_valid": <true or false>': ("is_valid", True, False),
}


@dataclass(frozen=True)
class JudgeQuestion:
    """One question a judged metric asks, as the scripted judge reads it from the prompt."""

    kind: str
    """``rating`` (a pointwise rubric: PointwiseMetric, the prebuilt and Databricks metrics),
    ``preference`` (PairwiseMetric: which response is better), ``label`` (a yes/no question:
    final_response_match_v2, safety_v1, per_turn_user_simulator_quality_v1), ``rubric`` (one
    property of a rubric-based metric or GENERAL_QUALITY), ``rubric_generation`` (GENERAL_QUALITY
    writing a case's rubrics), ``sentences`` (hallucinations_v1 splitting an answer) or ``sentence``
    (hallucinations_v1 checking one sentence against the context)."""
    prompt: str
    """The whole prompt."""
    item: str = ""
    """What the question is about within the prompt: the rubric's property (``rubric``), the sentence
    (``sentence``), the text to split (``sentences``); empty for questions about the whole prompt."""
    choices: tuple[str, ...] = ()
    """The answers allowed: the rubric's ratings (``rating``; empty when any number is), ``A``/``B``/``tie``
    (``preference``)."""
    id: str = ""
    """The rubric's id (``rubric``)."""


def _between(text: str, start: str, end: str) -> str:
    return text.split(start)[-1].split(end)[0]


def question_of(prompt: str) -> list[JudgeQuestion]:
    """The questions one prompt asks (several for a rubric prompt or a list of sentences); empty when it is not a prompt levelfield sends."""
    answer = prompt.rsplit("# Your answer", 1)[-1]  # the answer format closes every prompt levelfield sends
    if "<sentences>" in prompt and "label: <supported" in answer:
        listed = _between(prompt, "<sentences>", "</sentences>")
        return [JudgeQuestion("sentence", prompt, s.strip()) for s in re.findall(r"<sentence>(.*?)</sentence>", listed, re.S)]
    if "<response>" in prompt and "<sentence>...</sentence>" in answer:
        return [JudgeQuestion("sentences", prompt, _between(prompt, "<response>", "</response>").strip())]
    if '{"rubrics": [' in answer:
        return [JudgeQuestion("rubric_generation", prompt)]
    if prompt.endswith(RUBRIC_ANSWER_FORMAT):
        properties = prompt.split("# Properties")[-1]
        return [JudgeQuestion("rubric", prompt, text.strip(), id=rid)
                for rid, text in re.findall(r"^- \[id: ([^\]]+)\] (.*)$", properties, re.M)]
    if '"winner": "<one of: ' in answer:
        return [JudgeQuestion("preference", prompt, choices=("A", "B", "tie"))]
    rating = re.search(r'"score": "<(?:one of: (.*?)|a number)>"', answer)
    if rating is not None:
        choices = tuple(c.strip() for c in rating.group(1).split(",")) if rating.group(1) else ()
        return [JudgeQuestion("rating", prompt, choices=choices)]
    if any(marker in answer for marker in _LABELS):
        return [JudgeQuestion("label", prompt)]
    return []


def _sentences_of(text: str) -> list[str]:
    """A text split after each full stop, question or exclamation mark (Western and CJK), and at line ends."""
    parts = re.split(r"(?<=[.!?。！？])\s*|\n+", text)
    return [p.strip() for p in parts if p.strip()]


class ScriptedJudge:
    """A judge for offline tests that answers each judged metric's prompt in the format that metric reads.

    ``decide(question)`` says what to answer (see :class:`JudgeQuestion`): a bool for yes/no
    questions (``label``, ``rubric``, ``sentence``; also ``rating``: the best or the worst rating),
    a rating (``rating``), ``"A"``/``"B"``/``"tie"`` (``preference``), a list of properties
    (``rubric_generation``) or of sentences (``sentences``); None leaves it to the defaults:
    ``verdict`` for every yes/no question, ``rating`` (default: the best rating when ``verdict``,
    else the worst), ``winner`` for pairs (default ``"tie"``: a fixed ``"A"`` would be the first
    response shown, which the both-orders check calls position bias), ``rubrics`` for generated
    rubrics. ``explanation`` is the reason given with every verdict (any language).
    """

    cacheable = False
    """Its answers are not kept in the judge cache (they cost nothing; a changed rule is seen at once)."""

    def __init__(
        self,
        decide: Callable[[JudgeQuestion], Any] | None = None,
        *,
        verdict: bool = True,
        rating: str | float | None = None,
        winner: str = "tie",
        rubrics: Sequence[str] = ("The answer does what the user asked.", "The answer is clear."),
        explanation: str = "scripted verdict",
        name: str = "scripted-judge",
    ) -> None:
        if winner not in ("A", "B", "tie"):
            raise ValueError(f"ScriptedJudge winner must be 'A', 'B' or 'tie', got {winner!r}")
        self.decide = decide
        self.verdict = verdict
        self.rating = rating
        self.winner = winner
        self.rubrics = list(rubrics)
        self.explanation = explanation
        self.name = name
        """Names the judge in warnings, errors and rate-limit lines."""

    def __repr__(self) -> str:
        return f"ScriptedJudge(name={self.name!r})"

    def _decided(self, question: JudgeQuestion, default: Any) -> Any:
        answer = self.decide(question) if self.decide is not None else None
        return default if answer is None else answer

    def _rating(self, question: JudgeQuestion) -> str:
        value = self._decided(question, self.rating if self.rating is not None else self.verdict)
        if isinstance(value, bool):
            numbers = [c for c in question.choices if is_numeric_rating(c)]
            if not question.choices:
                return "1" if value else "0"
            if len(numbers) == len(question.choices):
                pick = max if value else min
                return pick(numbers, key=float)
            return question.choices[0] if value else question.choices[-1]
        return str(value)

    def __call__(self, prompt: str) -> str:
        """The answer to one prompt, as the judged metric that sent it reads answers."""
        questions = question_of(prompt)
        if not questions:
            raise ValueError(
                "ScriptedJudge does not recognise this prompt: it answers the prompts levelfield's judged metrics "
                "send (they end with the answer format each reads); a prompt of your own needs its own judge"
            )
        kind = questions[0].kind
        why = self.explanation
        if kind == "sentence":
            return "\n\n".join(
                f"sentence: {q.item}\nlabel: {'supported' if self._decided(q, self.verdict) else 'unsupported'}\n"
                f"rationale: {why}\nsupporting_excerpt: null\ncontradicting_excerpt: null"
                for q in questions
            )
        if kind == "sentences":
            sentences = self._decided(questions[0], _sentences_of(questions[0].item))
            return "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        if kind == "rubric_generation":
            written = self._decided(questions[0], self.rubrics)
            return json.dumps({"rubrics": [{"id": str(i + 1), "property": p} for i, p in enumerate(written)]},
                              ensure_ascii=False)
        if kind == "rubric":
            return "\n\n".join(
                f"ID: {q.id}\nProperty: {q.item}\nRationale: {why}\n"
                f"Verdict: {'yes' if self._decided(q, self.verdict) else 'no'}"
                for q in questions
            )
        question = questions[0]
        if kind == "preference":
            return json.dumps({"explanation": why, "winner": str(self._decided(question, self.winner))}, ensure_ascii=False)
        if kind == "rating":
            return json.dumps({"explanation": why, "score": self._rating(question)}, ensure_ascii=False)
        answer = prompt.rsplit("# Your answer", 1)[-1]
        key, yes, no = next(label for marker, label in _LABELS.items() if marker in answer)
        reason = "reasoning" if key != "verdict" or yes == "valid" else "explanation"
        return json.dumps({reason: why, key: yes if self._decided(question, self.verdict) else no}, ensure_ascii=False)
