"""Datasets: the cases to run and score, and how one row (any accepted column names) becomes a case.

Reading files is the job of ``levelfield.formats``; this module only knows rows in memory.
"""

from __future__ import annotations

import json
import math
import numbers
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_snake

from ..errors import ConfigError, DatasetError
from .jsonsafe import MAX_DEPTH, SURROGATE, clean_strings, has_lone_surrogates, too_deep
from .types import Handoff, Message, ToolCall

__all__ = [
    "EvalCase", "EvalDataset", "Turn", "Scenario", "parse_scenario", "case_from_row", "dataset_from_rows",
    "dataset_from_located", "deferred_dataset", "build_cases", "too_deep_message", "ALIASES",
    "parse_handoffs",
]

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
_DOCUMENT_FIELDS = ("retrieved_context", "expected_retrieved_context")
_TRAJECTORY_FIELDS = ("reference_trajectory", "predicted_trajectory")
_HANDOFF_FIELDS = ("reference_handoffs", "predicted_handoffs")


class Turn(BaseModel):
    """One turn of a multi-turn case: what the user says, what is expected, and optionally a saved answer."""

    prompt: str
    """The user's message for this turn."""
    reference: str | None = None
    """The expected answer; None when the turn gives none."""
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

    model_config = ConfigDict(extra="ignore")

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


def parse_scenario(value: Any, where: str, column: str, prompt: str | None = None) -> dict[str, Any] | None:
    """A scenario cell: ADK's ``{starting_prompt, conversation_plan, user_persona}`` (or a JSON string
    of it), or a plain string taken as the plan, the row's ``prompt`` then being the starting prompt.

    Returns the scenario as a dict (validated); errors name ``where`` and the field.
    """
    if _is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = _loads(text)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where}, field '{column}': not valid JSON ({exc.msg})") from None
        else:
            value = {"conversation_plan": text}
    if not isinstance(value, Mapping):
        raise DatasetError(
            f"{where}, field '{column}': expected {{\"starting_prompt\", \"conversation_plan\"[, \"user_persona\"]}} "
            f"or a plan as text, got {type(value).__name__}"
        )
    data = {to_snake(str(k)): v for k, v in value.items()}
    if not data.get("starting_prompt") and prompt:
        data["starting_prompt"] = prompt
    if not isinstance(data.get("starting_prompt"), str) or not data["starting_prompt"].strip():
        raise DatasetError(
            f"{where}, field '{column}': the scenario has no 'starting_prompt'; give the user's first message "
            "there (or in the row's 'prompt')"
        )
    try:
        Scenario.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise DatasetError(f"{where}, field '{column}.{loc}': {first['msg']}") from None
    return data


class EvalCase(BaseModel):
    """One row of a dataset: what to ask, what is expected, and optionally a saved answer."""

    case_id: str
    prompt: str | None = None
    history: list[Message] = Field(default_factory=list)
    reference: str | None = None
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
            if c.conversation_scenario is None and (_blank(c.prompt) or any(_blank(t.prompt) for t in c.turns))
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


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _list_cell(value: Any, where: str, column: str, expected: str) -> list[Any] | tuple[Any, ...] | None:
    """A cell that holds a list (or JSON text of one, or an array): the list, or None when empty.
    ``expected`` describes the list's items for the error that names the row and field."""
    if _is_missing(value):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            value = _loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}, field '{column}': not valid JSON ({exc.msg}); expected {expected}: {text[:80]!r}") from None
    if hasattr(value, "tolist") and not isinstance(value, (list, dict)):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise DatasetError(f"{where}, field '{column}': expected {expected}, got {type(value).__name__}: {str(value)[:80]!r}")
    return value


def _parse_trajectory(value: Any, where: str, column: str) -> list[ToolCall] | None:
    value = _list_cell(value, where, column, 'a list of tool calls [{"tool_name": ..., "tool_input": {...}}, ...]')
    if value is None:
        return None
    calls = []
    for i, item in enumerate(value):
        if isinstance(item, ToolCall):
            calls.append(item)
            continue
        if not isinstance(item, dict) or not ("tool_name" in item or "name" in item):
            raise DatasetError(
                f"{where}, field '{column}', call {i}: expected an object with 'tool_name' (or ADK's 'name'), "
                f"got {str(item)[:80]!r}"
            )
        try:
            calls.append(ToolCall.model_validate(item))
        except ValidationError as exc:
            msg = exc.errors()[0]
            raise DatasetError(f"{where}, field '{column}', call {i}: {msg['msg']}") from None
    return calls


def parse_handoffs(value: Any, where: str, column: str) -> list[Handoff] | None:
    """A hand-offs cell: a list of agent names (the agents control passes to, in order) or of
    ``{from_agent, to_agent}`` objects, or JSON text of one; None when the cell is empty."""
    value = _list_cell(value, where, column, 'a list of agent names ["billing", ...] or of {"from_agent", "to_agent"}')
    if value is None:
        return None
    out = []
    for i, item in enumerate(value):
        if isinstance(item, Handoff):
            out.append(item)
        elif isinstance(item, str) and item.strip():
            out.append(Handoff(to_agent=item))
        elif isinstance(item, Mapping) and isinstance(item.get("to_agent", item.get("agent")), str):
            out.append(Handoff(from_agent=item.get("from_agent"), to_agent=item.get("to_agent", item.get("agent"))))
        else:
            raise DatasetError(
                f"{where}, field '{column}', item {i}: expected an agent name or {{\"from_agent\", \"to_agent\"}}, "
                f"got {str(item)[:80]!r}"
            )
    return out


def _parse_documents(value: Any, where: str, column: str) -> list[dict[str, Any]] | None:
    """A Databricks ``retrieved_context`` cell: a list of ``{content, doc_uri}`` (or JSON of one)."""
    value = _list_cell(value, where, column, 'a list of {"content": ..., "doc_uri": ...}')
    if value is None:
        return None
    docs = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict):
            raise DatasetError(f"{where}, field '{column}', item {i}: expected an object {{content, doc_uri}}, got {str(item)[:80]!r}")
        docs.append({"content": item.get("content"), "doc_uri": item.get("doc_uri"), **{k: v for k, v in item.items() if k not in ("content", "doc_uri")}})
    return docs


def _parse_request(value: Any, where: str, column: str) -> tuple[str | None, list[Message]]:
    """A request may be a string, {"messages": [...]}, or {"query", "history"} (MLflow/LangChain shapes)."""
    if _is_missing(value):
        return None, []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{") and text.endswith("}"):
            try:
                parsed = _loads(text)
            except json.JSONDecodeError:
                return value, []
            if isinstance(parsed, dict) and ("messages" in parsed or "query" in parsed):
                return _parse_request(parsed, where, column)
        return value, []
    if isinstance(value, dict):
        try:
            if "messages" in value:
                messages = [Message.model_validate(m) for m in value["messages"]]
                if not messages or messages[-1].role != "user":
                    raise DatasetError(f"{where}, field '{column}': the last message must be the user's")
                return messages[-1].content, messages[:-1]
            if "query" in value:
                history = [Message.model_validate(m) for m in value.get("history") or []]
                return str(value["query"]), history
        except ValidationError as exc:
            raise DatasetError(f"{where}, field '{column}': bad message: {exc.errors()[0]['msg']}") from None
    raise DatasetError(
        f"{where}, field '{column}': expected a string, {{\"messages\": [...]}} or {{\"query\", \"history\"}}, "
        f"got {type(value).__name__}"
    )


def _text(value: Any, where: str, column: str) -> str | None:
    if _is_missing(value):
        return None
    if isinstance(value, (str, int, float)):
        return str(value)
    raise DatasetError(f"{where}, field '{column}': expected text, got {type(value).__name__}")


def case_from_row(row: dict[str, Any], index: int, where: str) -> EvalCase:
    """One dataset row (any accepted column names) -> an EvalCase; errors name ``where`` and the field."""
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected an object with named fields, got {type(row).__name__}")
    used: dict[str, str] = {}
    for field, names in ALIASES.items():
        for name in names:
            if name in row:
                used[field] = name
                break
    get = lambda f: row.get(used[f]) if f in used else None  # noqa: E731
    prompt, history = _parse_request(get("prompt"), where, used.get("prompt", "prompt"))
    if "history" in used and not _is_missing(get("history")):
        raw_history = get("history")
        if isinstance(raw_history, str):
            try:
                raw_history = _loads(raw_history)
            except json.JSONDecodeError:
                raise DatasetError(f"{where}, field 'history': not valid JSON") from None
        try:
            history = history + [Message.model_validate(m) for m in raw_history]
        except (ValidationError, TypeError):
            raise DatasetError(f"{where}, field 'history': expected a list of {{role, content}} messages") from None
    case_id = _case_id(get("case_id"), index, where, used.get("case_id", "case_id"))
    state = _parse_state(get("state"), where, used.get("state", "state"))
    fields = {
        "case_id": case_id,
        "prompt": prompt,
        "history": history,
        "reference": _text(get("reference"), where, used.get("reference", "reference")),
        "response": _text(get("response"), where, "response"),
        "location": where,
        "columns": used,
        "state": state,
    }
    for field in _TRAJECTORY_FIELDS:
        fields[field] = _parse_trajectory(get(field), where, used.get(field, field))
    for field in _DOCUMENT_FIELDS:
        fields[field] = _parse_documents(get(field), where, used.get(field, field))
    for field in _HANDOFF_FIELDS:
        fields[field] = parse_handoffs(get(field), where, used.get(field, field))
    if "final_state" in used and not _is_missing(get("final_state")):
        fields["final_state"] = _parse_state(get("final_state"), where, used["final_state"])
    taken = set(used.values())
    if not _is_missing(row.get("turns")):
        turns = _parse_turns(row["turns"], where)
        taken.add("turns")
        # Case-level fields describe the conversation's last turn, as for ADK eval sets.
        fields["turns"] = turns
        fields["prompt"] = fields["prompt"] or turns[0].prompt
        if fields["reference"] is None:
            fields["reference"] = turns[-1].reference
        if fields["reference_trajectory"] is None:
            fields["reference_trajectory"] = turns[-1].reference_trajectory
        # Saved per-turn answers: the case-level answer is the last turn's, as for a live run.
        if fields["response"] is None:
            fields["response"] = turns[-1].response
        if fields["predicted_trajectory"] is None:
            fields["predicted_trajectory"] = turns[-1].predicted_trajectory
    for column in ("scenario", "conversation_scenario"):
        if column in row and not _is_missing(row[column]):
            if fields.get("turns"):
                raise DatasetError(f"{where}: give either 'turns' (a scripted conversation) or '{column}' (a simulated user), not both")
            scenario = parse_scenario(row[column], where, column, fields["prompt"])
            if scenario is not None:
                # The starting prompt lives in the scenario; the case has no scripted prompt of its own.
                fields["conversation_scenario"] = scenario
                fields["prompt"] = None
            taken.add(column)
            break
    fields["metadata"] = {k: v for k, v in row.items() if k not in taken}
    return EvalCase(**fields)


def _case_id(value: Any, index: int, where: str, column: str) -> str:
    """A case id cell as text: text as is, a number as its digits, nothing as the row's index."""
    if _is_missing(value):
        return str(index)
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(
        f"{where}, field '{column}': a case id must be text or a number, got {type(value).__name__} "
        f"{str(value)[:80]!r}; give each row a short text id"
    )


def _parse_state(value: Any, where: str, column: str) -> dict[str, Any]:
    """A ``state`` cell: an object (or a JSON object string) of initial session state."""
    if _is_missing(value) or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        try:
            value = _loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}, field '{column}': not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise DatasetError(
            f"{where}, field '{column}': expected an object of session state {{\"key\": value}}, got {type(value).__name__}"
        )
    return dict(value)


def _parse_turns(value: Any, where: str) -> list[Turn]:
    """A ``turns`` cell: a list of {prompt (or request/query), reference, reference_trajectory}, each
    optionally with a saved ``response`` and ``predicted_trajectory``."""
    if isinstance(value, str):
        try:
            value = _loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}, field 'turns': not valid JSON ({exc.msg})") from None
    if not isinstance(value, list) or not value:
        raise DatasetError(f"{where}, field 'turns': expected a non-empty list of {{prompt, reference, reference_trajectory}}")
    turns = []
    for i, item in enumerate(value):
        at = f"{where}, field 'turns', turn {i + 1}"
        if not isinstance(item, dict):
            raise DatasetError(f"{at}: expected an object, got {type(item).__name__}")
        case = case_from_row(item, i, at)
        if _blank(case.prompt):
            raise DatasetError(f"{at}: 'prompt' is missing or empty; every turn needs a prompt with some text")
        turns.append(
            Turn(
                prompt=case.prompt,
                reference=case.reference,
                reference_trajectory=case.reference_trajectory,
                response=case.response,
                predicted_trajectory=case.predicted_trajectory,
            )
        )
    return turns


def dataset_from_rows(data: Any, *, source: str | None = None) -> EvalDataset:
    """Cases from in-memory rows: an EvalDataset as is, a DataFrame, or a list of dicts / EvalCases.

    Files, folders and ``file:case`` selections are read by ``levelfield.formats.load_dataset``,
    which hands their rows here as ``(row, location)`` pairs via :func:`dataset_from_located`.
    """
    if isinstance(data, EvalDataset):
        return data
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        label = source or "DataFrame"
        rows = data.to_dict("records")
    elif isinstance(data, Sequence) and not isinstance(data, (bytes, str)):
        label = source or "dataset"
        rows = list(data)
    else:
        raise DatasetError(
            f"cannot load a dataset from {type(data).__name__}; "
            "give a DataFrame, a list of dicts, or a .jsonl/.json/.csv path"
        )
    return dataset_from_located([(r, f"{label} row {i + 1}") for i, r in enumerate(rows)], label)


def too_deep_message(where: str) -> str:
    """The error for data nested deeper than levelfield reads (``where``: the file and line or row)."""
    return (f"{where}: nested deeper than {MAX_DEPTH} levels, more than levelfield reads; "
            "flatten that field or store it as text")


def _loads(text: str) -> Any:
    """A JSON cell parsed; :class:`_TooDeep` when it nests deeper than levelfield reads."""
    value = json.loads(text)
    if _may_be_deep(text) and too_deep(value):
        raise _TooDeep
    return value


class _TooDeep(Exception):
    """A cell or row nests deeper than ``MAX_DEPTH`` (turned into a DatasetError naming the row)."""


def _may_be_deep(text: str) -> bool:
    # Fewer brackets than the limit cannot nest that deep: the precise walk is for the rare rest.
    return text.count("[") + text.count("{") >= MAX_DEPTH


def _checked(row: Any) -> Any:
    """``row`` ready to become a case: lone surrogates (``"\\ud800"`` escapes in a JSON file)
    replaced by U+FFFD where the row enters, so journals and exports can write it; rows nested
    deeper than the writers keep refused (:class:`_TooDeep`)."""
    if isinstance(row, EvalCase):
        if too_deep(row):
            raise _TooDeep
        if has_lone_surrogates(row):
            return EvalCase.model_validate({**clean_strings(row.model_dump()), "columns": row.columns})
        return row
    try:
        # One pass of the C encoder answers both questions for plain rows (the common case).
        text = _ENCODER.encode(row)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is None or _may_be_deep(text):
        if too_deep(row):
            raise _TooDeep
        dirty = has_lone_surrogates(row)
    else:
        dirty = not text.isascii() and SURROGATE.search(text) is not None  # the encoder keeps them as they are
    return clean_strings(row) if dirty else row


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=repr, check_circular=True)


def dataset_from_located(located: Sequence[tuple[Any, str]], source: str) -> EvalDataset:
    """Cases from ``(row, location)`` pairs; a row may already be an EvalCase. Errors name the location."""
    columns: list[str] = []
    cases = [_case_of(row, where, i, columns) for i, (row, where) in enumerate(located)]
    if not cases:
        raise DatasetError(f"{source}: the dataset has no rows")
    return EvalDataset(cases, source=source, columns=columns)


def _case_of(row: Any, where: str, index: int, columns: list[str], clean: bool = False) -> EvalCase:
    """Row ``index`` (at ``where``) as a case, its columns added to ``columns``. Errors name the location.
    ``clean``: the row is known to hold no lone surrogate and to nest shallowly (see :func:`_checked`)."""
    try:
        if not clean:
            row = _checked(row)
        if isinstance(row, dict):
            columns.extend(k for k in row if k not in columns)
        return row if isinstance(row, EvalCase) else case_from_row(row, index, where)
    except (_TooDeep, RecursionError):  # RecursionError: a JSON cell nested thousands of levels deep
        raise DatasetError(too_deep_message(where)) from None


def deferred_dataset(chunks: Callable[[], Iterable[Sequence[tuple[Any, ...]]]], source: str,
                     finish: Callable[[EvalCase], None] | None = None) -> EvalDataset:
    """The cases of the ``(row, location[, clean])`` items ``chunks()`` yields a chunk at a time, every row
    checked now as :func:`dataset_from_located` checks it (errors name the location) but no case
    kept: they are made again, by calling ``chunks()`` again, when first asked for (see
    :meth:`EvalDataset.deferred`). ``finish`` completes each case made (e.g. the file it came from)."""
    columns: list[str] = []
    ids: list[str] = []
    wheres: list[str] = []
    for chunk in chunks():
        for row, where, *clean in chunk:
            index = len(ids)
            case = _case_of(row, where, index, columns, *clean)
            _check_id(case, index, source)
            ids.append(case.case_id)
            wheres.append(_where(case, index, source))
    if not ids:
        raise DatasetError(f"{source}: the dataset has no rows")
    _refuse_repeats(ids, wheres.__getitem__, source)
    del wheres

    return EvalDataset.deferred(lambda: build_cases(chunks(), finish), len(ids), source=source, columns=columns)


def build_cases(chunks: Iterable[Sequence[tuple[Any, ...]]], finish: Callable[[EvalCase], None] | None = None
                ) -> list[EvalCase]:
    """The cases of ``(row, location)`` chunks (rows checked before: see :func:`deferred_dataset`)."""
    cases: list[EvalCase] = []
    for chunk in chunks:
        for row, where, *clean in chunk:
            case = _case_of(row, where, len(cases), [], *clean)
            if finish is not None:
                finish(case)
            cases.append(case)
    return cases
