"""Datasets: the cases to run and score (turns, scenarios, cases) and the ordered collection that holds them.

Turning rows (any accepted column names) into cases is :mod:`levelfield._core.data.rows`; reading
files is the job of ``levelfield.formats``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError, DatasetError
from .types import Handoff, Message, ToolCall

# The models build their validators when first used (``defer_build``), as ``types``' do (issue #46).

__all__ = ["EvalCase", "EvalDataset", "Turn", "Scenario", "ALIASES"]

# Canonical field -> accepted column names, first wins.
ALIASES: dict[str, tuple[str, ...]] = {
    "case_id": ("case_id", "eval_id", "id", "request_id"),
    "prompt": ("prompt", "request", "query", "input"),
    "reference": ("reference", "expected_response", "final_response"),
    "reference_trajectory": ("reference_trajectory", "expected_tool_use", "tool_uses"),
    "response": ("response",),
    "predicted_trajectory": ("predicted_trajectory",),
    "history": ("history",),
    "state": ("state", "session_state"),
    "retrieved_context": ("retrieved_context",),
    "expected_retrieved_context": ("expected_retrieved_context",),
    "reference_handoffs": ("reference_handoffs", "expected_handoffs"),
    "predicted_handoffs": ("predicted_handoffs", "handoffs"),
    "final_state": ("final_state",),
}


class Turn(BaseModel):
    """One turn of a multi-turn case: what the user says, what is expected, and optionally a saved answer."""

    model_config = ConfigDict(defer_build=True)

    prompt: str
    """The user's message for this turn."""
    reference: str | int | float | None = None
    """The expected answer; None when the turn gives none. A number stays a number (``42``); text
    metrics compare its text (``"42"``)."""
    reference_trajectory: list[ToolCall] | None = None
    """The expected tool calls; None when the turn gives none, [] when it expects no call."""
    reference_thoughts: str | None = None
    """Thought text that came with the expected answer (ADK files). Only ADK's
    ``response_match_score`` reads it, because ADK's evaluator scores thoughts as answer text."""
    response: str | None = None
    """A saved answer for this turn, for scoring without running an agent."""
    predicted_trajectory: list[ToolCall] | None = None
    """The saved tool calls of this turn."""

    @property
    def has_prediction(self) -> bool:
        """Whether the turn holds a saved answer or saved tool calls."""
        return self.response is not None or self.predicted_trajectory is not None


class Scenario(BaseModel):
    """A conversation a simulated user plays out (ADK's ``conversation_scenario`` field names)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    starting_prompt: str
    """The user's first message, sent as is (no simulator call)."""
    conversation_plan: str = ""
    """What the user wants and how to go about it; the simulator follows it, the judge of
    ``task_success`` checks the conversation against it."""
    user_persona: Any = None
    """Who the user is: a description, an ADK persona object, or an ADK persona id."""

    @property
    def persona_text(self) -> str:
        """The persona as text for a prompt ("" when none)."""
        persona = self.user_persona
        if persona is None:
            return ""
        if isinstance(persona, Mapping):
            parts = [str(persona.get("description") or persona.get("id") or "")]
            for behavior in persona.get("behaviors") or []:
                if isinstance(behavior, Mapping):
                    parts.append(f"- {behavior.get('name', '')}: {behavior.get('description', '')}".rstrip(": "))
            return "\n".join(p for p in parts if p)
        return str(persona)


class EvalCase(BaseModel):
    """One row of a dataset: what to ask, what is expected, and optionally a saved answer."""

    model_config = ConfigDict(defer_build=True)

    case_id: str
    prompt: str | None = None
    history: list[Message] = Field(default_factory=list)
    reference: str | int | float | None = None
    """The expected answer. A number stays a number (``42`` in the table and the saved runs); text
    metrics and judges read its text (``"42"``)."""
    reference_trajectory: list[ToolCall] | None = None
    """None when the row gives no reference trajectory; [] when it expects no tool calls."""
    response: str | None = None
    """A saved response, for scoring without running an agent."""
    predicted_trajectory: list[ToolCall] | None = None
    reference_thoughts: str | None = None
    """Thought text of the expected answer (ADK files); see :attr:`Turn.reference_thoughts`."""
    retrieved_context: list[dict[str, Any]] | None = None
    """Saved documents the agent's last retrieval step returned, as ``{content, doc_uri}`` (Databricks)."""
    expected_retrieved_context: list[dict[str, Any]] | None = None
    """The documents a good retrieval returns, as ``{content, doc_uri}`` (Databricks ground truth)."""
    reference_handoffs: list[Handoff] | None = None
    """The hand-offs between agents the case expects, in order (a column of agent names, or of
    ``{from_agent, to_agent}``); None when the row gives none, [] when it expects none."""
    predicted_handoffs: list[Handoff] | None = None
    """Saved hand-offs of a saved prediction."""
    final_state: dict[str, Any] | None = None
    """The saved final session state of a saved prediction (``state`` is the initial one)."""
    turns: list[Turn] = Field(default_factory=list)
    """For multi-turn cases: every turn, in order (the first one is also ``prompt``)."""
    state: dict[str, Any] = Field(default_factory=dict)
    """The initial session state (ADK ``session_input.state``, a ``state`` column); agents receive it."""
    conversation_scenario: dict[str, Any] | None = None
    """A conversation scenario (a simulated user; ADK's field names) instead of scripted turns. Such
    a case runs only with a user simulator; otherwise it is reported as skipped. See :attr:`scenario`."""
    file: str | None = None
    """The file the case was read from, when it came from one (criteria are resolved per file)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The row's other columns, kept as they were."""
    location: str = ""
    """Where the row came from, for error messages: ``"data.jsonl line 4"``."""
    columns: dict[str, str] = Field(default_factory=dict, exclude=True)
    """Canonical field -> the column name the row used."""

    @property
    def scenario(self) -> Scenario | None:
        """``conversation_scenario`` as a :class:`Scenario`, or None for a scripted case."""
        if self.conversation_scenario is None:
            return None
        return Scenario.model_validate(self.conversation_scenario)


class EvalDataset:
    """An ordered collection of cases and the columns they came with."""

    def __init__(self, cases: Sequence[EvalCase], *, source: str = "dataset", columns: Sequence[str] = ()):
        self._cases: list[EvalCase] | None = list(cases)
        self._build: Callable[[], list[EvalCase]] | None = None
        self._count = len(self._cases)
        _check_unique_ids(self._cases, source)
        self.source = source
        self.columns = list(columns)
        self._loaded_from: Any = None
        self._loaded_count = -1

    @classmethod
    def deferred(cls, build: Callable[[], list[EvalCase]], count: int, *, source: str,
                 columns: Sequence[str] = ()) -> EvalDataset:
        """A dataset whose rows were checked (``build`` gives its ``count`` cases, ids unique) but whose
        cases are made only when first asked for: saved predictions scored from the source they were
        read from need none (no per-row objects held), an agent's run needs them."""
        dataset = cls.__new__(cls)
        dataset._cases, dataset._build, dataset._count = None, build, count
        dataset.source, dataset.columns = source, list(columns)
        dataset._loaded_from, dataset._loaded_count = None, -1
        return dataset

    @property
    def cases(self) -> list[EvalCase]:
        """The cases, in order (made from the rows on first use when the dataset was loaded deferred)."""
        if self._cases is None:
            assert self._build is not None
            cases = self._build()
            if len(cases) != self._count:  # the file changed since it was loaded
                raise DatasetError(f"{self.source}: held {self._count} rows when loaded and {len(cases)} now; "
                                   "load it again")
            self._cases, self._build = cases, None
        return self._cases

    @cases.setter
    def cases(self, cases: Sequence[EvalCase]) -> None:
        self._cases, self._build = list(cases), None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cases"], state["_build"] = self.cases, None  # a deferred build (a closure) does not pickle
        state["_loaded_from"] = state["_unchanged"] = None
        return state

    @property
    def loaded_from(self) -> Any:
        """The DataFrame, rows or file ``load_dataset`` read these cases from, unchanged since (None
        otherwise): saved predictions are scored from it batch by batch, as ``evaluate(df)`` does."""
        unchanged = getattr(self, "_unchanged", None)
        if self._loaded_from is None or (unchanged is not None and not unchanged()):
            return None
        if self._cases is None:
            return self._loaded_from  # no case made yet: none changed
        return self._loaded_from if len(self._cases) == self._loaded_count else None

    def remember_source(self, data: Any, *, unchanged: Callable[[], bool] | None = None) -> EvalDataset:
        """Keep the columnar source these cases were read from one to one (see :attr:`loaded_from`);
        ``unchanged()`` says whether it still holds those rows (a file not written since)."""
        self._loaded_from, self._loaded_count, self._unchanged = data, len(self), unchanged
        return self

    def __len__(self) -> int:
        return self._count if self._cases is None else len(self._cases)

    def __iter__(self) -> Iterator[EvalCase]:
        return iter(self.cases)

    def __getitem__(self, i: int) -> EvalCase:
        return self.cases[i]

    def __repr__(self) -> str:
        return f"EvalDataset({len(self)} cases from {self.source})"

    def head(self, n: int) -> EvalDataset:
        """The first ``n`` cases (all of them when there are fewer): a quick run before the whole set."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"head({n!r}): give a whole number of cases >= 1")
        return EvalDataset(self.cases[:n], source=self.source, columns=self.columns)

    def sample(self, n: int, *, seed: int = 0) -> EvalDataset:
        """``n`` cases drawn at random, the same ones for the same ``seed``, kept in dataset order
        (all of them when there are fewer)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"sample({n!r}): give a whole number of cases >= 1")
        if n >= len(self.cases):
            return self
        picked = sorted(random.Random(seed).sample(range(len(self.cases)), n))
        return EvalDataset([self.cases[i] for i in picked], source=self.source, columns=self.columns)

    @property
    def has_predictions(self) -> bool:
        """Whether any case holds a saved answer, for the whole case or for one of its turns."""
        return any(
            c.response is not None or c.predicted_trajectory is not None or any(t.has_prediction for t in c.turns)
            for c in self.cases
        )

    def without_scenarios(self) -> tuple[EvalDataset, dict[str, str]]:
        """The scripted cases, and ``{case_id: reason}`` for the scenario cases left out.

        A ``conversation_scenario`` case needs a user simulator to produce its turns; without one
        it is skipped (reported with the reason), never an error that stops the scripted cases.
        """
        skipped = {
            c.case_id: "a conversation_scenario case (a simulated user) needs a user simulator; not run"
            for c in self.cases
            if c.conversation_scenario is not None and c.prompt is None and not c.turns
        }
        if not skipped:
            return self, {}
        kept = [c for c in self.cases if c.case_id not in skipped]
        return EvalDataset(kept, source=self.source, columns=self.columns), skipped

    def require_prompts(self) -> None:
        """Raise unless every case (and every turn) has a prompt with some text (needed to run an agent).

        A scenario case's first message is its scenario's starting prompt, so it needs none here."""
        missing = [
            (i, c) for i, c in enumerate(self.cases)
            if c.conversation_scenario is None and (_blank(c.prompt) or (c.turns and any(_blank(t.prompt) for t in c.turns)))
        ]
        if not missing:
            return
        if len(missing) == len(self.cases) and all(c.prompt is None and "prompt" not in c.columns for _, c in missing):
            cols = ", ".join(self.columns) or "none"
            raise DatasetError(
                f"{self.source}: no 'prompt' column (also read as: {', '.join(ALIASES['prompt'][1:])}); "
                f"an agent needs one. Columns found: {cols}"
            )
        where = "; ".join(_where(c, i, self.source) for i, c in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise DatasetError(
            f"field 'prompt' is missing or empty at {where}{more}: an agent needs a prompt with some text for "
            "every case; fill it in or drop the row"
        )


def _blank(prompt: str | None) -> bool:
    """A prompt an agent cannot be asked: absent, empty, or only whitespace."""
    return prompt is None or not prompt.strip()


def _where(case: EvalCase, index: int, source: str) -> str:
    return case.location or f"{source} row {index + 1}"


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _check_id(case: EvalCase, index: int, source: str) -> None:
    """Raise unless the case id is one line of text: ids name folders' rows, journal keys, report anchors."""
    case_id = case.case_id
    if case_id.strip() and _CONTROL.search(case_id) is None:
        return
    where = f"{_where(case, index, source)}, field '{case.columns.get('case_id', 'case_id')}'"
    if not case_id.strip():
        raise DatasetError(f"{where}: the case id is empty; give the row an id, or drop the id column to number the rows")
    raise DatasetError(
        f"{where}: the case id {case_id!r} holds a control character (a line break, tab...); "
        "a case id must be one line of text"
    )


def _check_unique_ids(cases: Sequence[EvalCase], source: str) -> None:
    """Raise if a case id is empty or holds a control character, or if two cases share an id,
    naming each repeated id and where its rows are (one pass)."""
    for index, case in enumerate(cases):
        _check_id(case, index, source)
    _refuse_repeats([c.case_id for c in cases], lambda i: _where(cases[i], i, source), source)


def _refuse_repeats(ids: Sequence[str], where: Callable[[int], str], source: str) -> None:
    """Raise if two of ``ids`` are the same, naming each repeated id and where its rows are."""
    first: dict[str, int] = {}
    repeats: dict[str, list[int]] = {}
    for index, case_id in enumerate(ids):
        seen = first.setdefault(case_id, index)
        if seen != index:
            repeats.setdefault(case_id, [seen]).append(index)
    if not repeats:
        return
    shown = list(repeats.items())[:10]
    details = "; ".join(
        f"{case_id!r} at {', '.join(where(i) for i in rows[:5])}"
        + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
        for case_id, rows in shown
    )
    more = f" (and {len(repeats) - 10} more repeated ids)" if len(repeats) > 10 else ""
    raise DatasetError(
        f"{source}: case ids must be unique; repeated: {details}{more}. Give each row its own id, or drop the id "
        "column to number the rows"
    )
