"""What a metric is: a name and a way to score one row, given one scoring context."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ...data.types import Handoff, ToolCall, Usage
from ..matching import Alignment, ToolCallMatcher, align

__all__ = ["Metric", "Score", "ScoringContext", "TurnContext", "NAN", "score_columns", "FAILED_AS_ZERO", "FAILED_LEFT_OUT",
           "kept_arguments"]

FAILED_AS_ZERO = "mean_failed_as_zero"
"""Summary key suffix of a metric's mean when failed runs count as 0 (``<metric>/mean_failed_as_zero``)."""
FAILED_LEFT_OUT = "mean_failed_left_out"
"""Summary key suffix of a metric's mean when failed runs are left out (``<metric>/mean_failed_left_out``)."""

# Context fields an agent produces; every other field a metric requires comes from the case.
_AGENT_FIELDS = frozenset({"response", "predicted_trajectory", "turns", "failure"})

NAN = float("nan")


@dataclass(slots=True)  # slots: metrics create one per row, and many rows are scored
class Score:
    """A metric's verdict on one row, when it has more to say than a number."""

    value: float
    explanation: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """More columns, written as ``<metric>/<key>``."""
    failed: bool = False
    """The metric itself failed on this row (a judge that could not answer, a function that raised)."""
    usage: Usage | None = None
    """Tokens the metric spent (judged metrics)."""
    error: str | None = None
    """Why the metric failed on this row, when ``failed``."""

    def columns(self, name: str) -> dict[str, Any]:
        """This score as the ``<name>/...`` columns of a results table; the one place they are spelled.

        ``/score`` always; ``/explanation``, ``/<extra key>``, ``/error`` and ``/total_tokens`` when
        known; ``/failed`` (True) only when the metric itself failed on the row.
        """
        cols: dict[str, Any] = {f"{name}/score": self.value}
        if self.explanation is not None:
            cols[f"{name}/explanation"] = self.explanation
        for key, value in self.extra.items():
            cols[f"{name}/{key}"] = value
        if self.error is not None:
            cols[f"{name}/error"] = self.error
        if self.failed:
            cols[f"{name}/failed"] = True
        if self.usage is not None:
            cols[f"{name}/total_tokens"] = self.usage.total_tokens
        return cols

    @classmethod
    def of(cls, result: float | Score | None) -> Score:
        """What a metric's ``score`` returned, as a Score (a bare number becomes its value; inf and junk NaN)."""
        if isinstance(result, Score):
            value = as_float(result.value)
            return result if value is result.value else replace(result, value=value)
        return cls(as_float(result))


_SCORE_NAMES: dict[str, tuple[str, str]] = {}
"""A metric's ``/score`` and ``/explanation`` column names, made once (a table asks them a row)."""


def score_columns(scores: Mapping[str, Score]) -> dict[str, Any]:
    """One row's scores (metric name -> Score) as table columns, in metric order."""
    row: dict[str, Any] = {}
    for name, score in scores.items():
        if type(score) is not Score or score.extra or score.error is not None or score.failed or score.usage is not None:
            row.update(score.columns(name))
            continue
        # A number and perhaps its why (most Scores): the columns ``columns`` gives, names made once.
        names = _SCORE_NAMES.get(name)
        if names is None:
            if len(_SCORE_NAMES) >= 10_000:  # bounded on any metrics
                _SCORE_NAMES.clear()
            names = _SCORE_NAMES[name] = (f"{name}/score", f"{name}/explanation")
        row[names[0]] = score.value
        if score.explanation is not None:
            row[names[1]] = score.explanation
    return row


@dataclass
class TurnContext:
    """One turn of a case as metrics see it: what was asked and expected, and what the agent did."""

    prompt: str
    """The user's message for this turn."""
    reference: str | None = None
    """The expected answer; None when the turn gives none."""
    reference_trajectory: list[ToolCall] | None = None
    """The expected tool calls; None when the turn gives none."""
    response: str | None = None
    """The agent's answer (live or saved); None when there is none."""
    predicted_trajectory: list[ToolCall] = field(default_factory=list)
    """The tool calls the agent made in this turn."""
    reference_thoughts: str | None = None
    """Thought text of the expected answer (ADK files), read only by ADK's response_match_score."""
    usage: Usage | None = None
    """Tokens the agent spent in this turn, when the adapter reported them."""
    model_calls: int | None = None
    """Model calls the agent made in this turn, when the adapter counted them."""
    inner_model_calls: int | None = None
    """Of ``model_calls``, those made inside tools that run an agent of their own (ADK ``AgentTool``s)."""
    intermediate_responses: list[str] = field(default_factory=list)
    """Texts the agent produced in this turn before its final answer."""
    duration_seconds: float | None = None
    """Wall-clock seconds the turn took, when the run timed it (not for saved predictions)."""


@dataclass
class ScoringContext:
    """Everything a metric may look at for one row: the case, and the agent's answer to it."""

    case_id: str
    prompt: str | None
    response: str | None
    predicted_trajectory: list[ToolCall]
    reference: str | None = None
    reference_trajectory: list[ToolCall] | None = None
    """None when the dataset gives no reference trajectory for this row (not the same as [])."""
    history: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    failure: bool = False
    turns: list[TurnContext] = field(default_factory=list)
    """Every turn of a multi-turn case; empty for a single-turn case (see :meth:`conversation`)."""
    reference_thoughts: str | None = None
    """Thought text of the expected final answer (ADK files)."""
    retrieved_context: list[dict[str, Any]] | None = None
    """Documents the agent's last retrieval step returned (``{content, doc_uri}``); None when unknown."""
    expected_retrieved_context: list[dict[str, Any]] | None = None
    """The documents the dataset expects to be retrieved; None when it gives none."""
    handoffs: list[Handoff] = field(default_factory=list)
    """The hand-offs between agents the run made (the last turn's, as ``predicted_trajectory``)."""
    reference_handoffs: list[Handoff] | None = None
    """The hand-offs the case expects; None when it gives none."""
    state: dict[str, Any] | None = None
    """The session state at the end of the run; None when the agent exposes none."""
    usage: Usage | None = None
    """Tokens the agent spent over the whole run (every turn), when known."""
    model_calls: int | None = None
    """Model calls the agent made over the whole run (every turn), when known."""
    inner_model_calls: int | None = None
    """Of ``model_calls``, those made inside tools that run an agent of their own (ADK ``AgentTool``s)."""
    intermediate_responses: list[str] = field(default_factory=list)
    """Texts the agent produced before its final answer (its last turn's)."""
    dialogue: list[TurnContext] = field(default_factory=list)
    """A simulated conversation's exchanges, one per user message (empty otherwise); see :meth:`exchanges`."""
    duration_seconds: float | None = None
    """Wall-clock seconds the agent's answer took (a one-turn row's turn), when the run timed it."""
    _alignments: dict[int, Alignment] = field(default_factory=dict, repr=False)

    def alignment(self, matcher: ToolCallMatcher) -> Alignment:
        """The alignment of predicted against reference trajectory, with its matched pairs, computed once per matcher."""
        key = id(matcher)
        cached = self._alignments.get(key)
        if cached is None:
            # With pairs, so that metrics can say which calls were missing or extra.
            cached = align(self.predicted_trajectory, self.reference_trajectory or [], matcher, pairs=True)
            self._alignments[key] = cached
        return cached

    def conversation(self) -> list[TurnContext]:
        """The turns to score turn by turn: ``turns``, or the row itself as one turn."""
        if self.turns:
            return self.turns
        return [
            TurnContext(
                prompt=self.prompt or "",
                reference=self.reference,
                reference_trajectory=self.reference_trajectory,
                response=self.response,
                predicted_trajectory=self.predicted_trajectory,
                reference_thoughts=self.reference_thoughts,
                usage=self.usage,
                model_calls=self.model_calls,
                inner_model_calls=self.inner_model_calls,
                intermediate_responses=list(self.intermediate_responses),
                duration_seconds=self.duration_seconds,
            )
        ]

    def exchanges(self) -> list[TurnContext]:
        """Every exchange of user message and agent answer: a simulated conversation's, else :meth:`conversation`."""
        return self.dialogue or self.conversation()

    def instance(self) -> dict[str, Any]:
        """The row as Vertex AI hands it to a custom metric function."""
        row = dict(self.metadata)
        row.update(
            prompt=self.prompt,
            response=self.response,
            reference=self.reference,
            predicted_trajectory=[c.to_vertex() for c in self.predicted_trajectory],
            reference_trajectory=(
                None
                if self.reference_trajectory is None
                else [c.to_vertex() for c in self.reference_trajectory]
            ),
        )
        return row


class Metric(ABC):
    """Base of every metric: a unique ``name`` and ``score(ctx)``, which scores one row.

    ``score`` gets one :class:`ScoringContext` (the case and the agent's answer to it) and returns
    a float, or a :class:`Score` when it has more to say: its ``explanation`` becomes the
    ``<name>/explanation`` column, its ``extra`` items ``<name>/<key>`` columns. ``requires``
    names the context fields that must be present (not None) for the metric to be computable;
    rows lacking one get NaN, and metrics are never called for failed runs. A metric that calls
    out (a model, a service) sets ``is_async = True`` and overrides ``ascore``.

    An example: a metric that says whether the answer is short enough, and why.

    >>> from levelfield.metrics import Metric, Score, ScoringContext
    >>> class ConciseAnswer(Metric):
    ...     '''1 when the response has at most ``max_words`` words.'''
    ...
    ...     requires = ("response",)
    ...
    ...     def __init__(self, max_words: int = 20, *, name: str = "concise_answer") -> None:
    ...         self.max_words = max_words
    ...         self.name = name
    ...
    ...     def score(self, ctx: ScoringContext) -> Score:
    ...         words = len(ctx.response.split())
    ...         return Score(float(words <= self.max_words), explanation=f"{words} words; at most {self.max_words} allowed")
    >>> row = ScoringContext(case_id="c1", prompt="Is the light on?", response="Yes, it is on.", predicted_trajectory=[])
    >>> score = ConciseAnswer(max_words=3).score(row)
    >>> score.value, score.explanation
    (0.0, '4 words; at most 3 allowed')

    Use it like any other metric: ``lf.evaluate(data, agent, metrics=[ConciseAnswer(), "trajectory_recall"])``.
    A metric that forgets ``score`` cannot be created:

    >>> class Unfinished(Metric):
    ...     name = "unfinished"
    >>> Unfinished()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Can't instantiate abstract class Unfinished ...score...
    """

    name: str
    requires: ClassVar[tuple[str, ...]] = ()
    is_async: ClassVar[bool] = False
    reads: ClassVar[tuple[str, ...] | None] = None
    """The context fields ``score`` reads, when the metric knows them (None: it may read any).

    Saved predictions scored batch by batch (``lf.evaluate`` of a file of predictions) give a metric that
    names them a context holding only those fields (tool calls as light objects with
    ``tool_name`` and ``tool_input``), instead of building the whole case first."""

    @abstractmethod
    def score(self, ctx: ScoringContext) -> float | Score:
        """The metric's verdict on one row: a float (NaN when it cannot say) or a :class:`Score`."""

    async def ascore(self, ctx: ScoringContext) -> float | Score:
        """Async twin of :meth:`score`; metrics that wait on I/O override it."""
        return self.score(ctx)

    def computable(self, ctx: ScoringContext) -> bool:
        """Whether this row can be scored: the run did not fail and every field in ``requires`` is present."""
        return not ctx.failure and all(getattr(ctx, f) is not None for f in self.requires)

    def applies_to(self, case: Any) -> bool:
        """Whether this metric can score ``case`` at all: the case holds every field the metric needs
        from it (a reference, a reference trajectory...). A failed run counts as 0 only where it does."""
        return all(getattr(case, f, None) is not None for f in self.requires if f not in _AGENT_FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def as_float(value: Any) -> float:
    if value is None:
        return NAN
    try:
        out = float(value)
    except (TypeError, ValueError):
        return NAN
    return out if not math.isinf(out) else NAN


def kept_arguments(metric: Any) -> dict[str, Any]:
    """The constructor arguments a metric keeps as attributes (``name`` or ``_name``), by parameter name:
    what the run record saves of it and what its evaluator's identity holds."""
    import inspect

    args: dict[str, Any] = {}
    try:
        params = inspect.signature(type(metric).__init__).parameters
    except (TypeError, ValueError):
        return args
    for pname, param in params.items():
        if pname == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        for attr in (pname, f"_{pname}"):
            try:
                args[pname] = getattr(metric, attr)
            except Exception:  # noqa: BLE001 - not kept under that name (or a property that raises)
                continue
            break
    return args
