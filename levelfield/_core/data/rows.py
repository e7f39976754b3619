"""Rows into cases: one row (any accepted column names, cells as values or JSON text) becomes an EvalCase, rows a dataset.

Every cell parser names the row and field of what it cannot read. Rows from a file may be checked
now and made into cases only when first asked for (:func:`deferred_dataset`). Reading files is the
job of ``levelfield.formats``; this module only knows rows in memory.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import ValidationError
from pydantic.alias_generators import to_snake

from ..errors import DatasetError
from .cells import reference_cell, say_infinite
from .dataset import ALIASES, EvalCase, EvalDataset, Scenario, Turn, _blank, _check_id, _refuse_repeats, _where
from .jsonsafe import MAX_DEPTH, SURROGATE, clean_strings, has_lone_surrogates, too_deep
from .types import Handoff, Message, ToolCall

__all__ = [
    "parse_scenario", "case_from_row", "dataset_from_rows", "dataset_from_located", "deferred_dataset", "build_cases",
    "too_deep_message", "parse_handoffs",
]

_DOCUMENT_FIELDS = ("retrieved_context", "expected_retrieved_context")
_TRAJECTORY_FIELDS = ("reference_trajectory", "predicted_trajectory")
_HANDOFF_FIELDS = ("reference_handoffs", "predicted_handoffs")


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
        "reference": reference_cell(get("reference"), where, used.get("reference", "reference")),
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

    frame = None
    if isinstance(data, pd.DataFrame):
        label = source or "DataFrame"
        rows = data.to_dict("records")
        frame = data
    elif isinstance(data, Sequence) and not isinstance(data, (bytes, str)):
        label = source or "dataset"
        rows = list(data)
    else:
        raise DatasetError(
            f"cannot load a dataset from {type(data).__name__}; "
            "give a DataFrame, a list of dicts, or a .jsonl/.json/.csv path"
        )
    say_infinite(rows, label, frame)
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
            case = _row_checked(row, where, index, columns, *clean)
            _check_id(case, index, source)  # type: ignore[arg-type] - reads case_id, location, columns
            ids.append(case.case_id)
            wheres.append(_where(case, index, source))  # type: ignore[arg-type]
    if not ids:
        raise DatasetError(f"{source}: the dataset has no rows")
    _refuse_repeats(ids, wheres.__getitem__, source)
    del wheres

    return EvalDataset.deferred(lambda: build_cases(chunks(), finish), len(ids), source=source, columns=columns)


class _PlainCase(NamedTuple):
    """What checking a row keeps of the case it makes (its id, where it is, the columns it used),
    for a plain row: :func:`case_from_row` would make that case, so none is made (issue #46)."""

    case_id: str
    location: str
    columns: dict[str, str]


_PLAIN_FIELDS = frozenset(("case_id", "prompt", "reference", "response", *_TRAJECTORY_FIELDS))
"""The fields a plain row may fill; a row filling any other (history, state, documents, hand-offs,
turns, a scenario) is checked by making its case."""
_NOT_PLAIN_COLUMNS = ("turns", "scenario", "conversation_scenario")


def _row_checked(row: Any, where: str, index: int, columns: list[str], clean: bool = False) -> EvalCase | _PlainCase:
    """Row ``index`` checked as :func:`_case_of` checks it: a plain row (text cells, lists of
    ``{tool_name, tool_input}`` calls: what saved predictions hold) by looking at its cells, which
    makes no pydantic object; any other row by making its case, which names what is wrong."""
    try:
        checked = row if clean else _checked(row)
    except (_TooDeep, RecursionError):
        raise DatasetError(too_deep_message(where)) from None
    plain = _plain_case(checked, where, index)
    if plain is None:
        return _case_of(checked, where, index, columns, True)
    columns.extend(k for k in checked if k not in columns)
    return plain


class _Plan(NamedTuple):
    """What a plain row's keys decide, the same for every row with those keys (a file's rows mostly share
    them): the names to find missing (columns of a conversation, fields a plain row may not fill), the
    text fields, the trajectory cells, the case id's name, and the fields each name fills."""

    missing: tuple[str, ...]
    texts: tuple[tuple[str, str], ...]
    trajectories: tuple[str, ...]
    case_id: str | None
    used: dict[str, str]


_PLANS: dict[tuple[Any, ...], _Plan | None] = {}
_MAX_PLANS = 256


def _plan(keys: tuple[Any, ...]) -> _Plan | None:
    """The plan of a row with ``keys`` (None: keys that are not all text, never plain)."""
    plan = _PLANS.get(keys, False)
    if plan is not False:
        return plan  # type: ignore[return-value]
    if any(type(k) is not str for k in keys):
        plan = None
    else:
        present = set(keys)
        missing = [c for c in _NOT_PLAIN_COLUMNS if c in present]
        used: dict[str, str] = {}
        for field, names in ALIASES.items():
            for name in names:
                if name in present:
                    if field not in _PLAIN_FIELDS:
                        missing.append(name)
                    used[field] = name
                    break
        plan = _Plan(tuple(missing), tuple((f, used[f]) for f in ("prompt", "reference", "response") if f in used),
                     tuple(used[f] for f in _TRAJECTORY_FIELDS if f in used), used.get("case_id"), used)
    if len(_PLANS) >= _MAX_PLANS:
        _PLANS.clear()
    _PLANS[keys] = plan
    return plan


def _plain_case(row: Any, where: str, index: int) -> _PlainCase | None:
    """The case id, location and columns of the case :func:`case_from_row` makes of ``row``, when
    ``row`` is plain enough to be sure it makes one without error (None otherwise: not sure)."""
    if type(row) is not dict or not where:
        return None
    plan = _plan(tuple(row))
    if plan is None:
        return None
    for name in plan.missing:
        if not _is_missing(row[name]):
            return None
    for field, name in plan.texts:
        value = row[name]
        if not (_is_missing(value) or (type(value) is str and not (field == "prompt" and value.strip().startswith("{")))):
            return None  # a request object, a number...: case_from_row reads it
    for name in plan.trajectories:
        if not _plain_calls(row[name]):
            return None
    case_id = row[plan.case_id] if plan.case_id is not None else None
    if _is_missing(case_id):
        case_id = str(index)
    elif type(case_id) is not str:
        return None
    return _PlainCase(case_id, where, plan.used)


_TEXT_ONLY = {str}
_OPTIONAL_TEXT = ("id", "agent", "error", "within")


def _plain_calls(value: Any) -> bool:
    """Whether a trajectory cell is empty or a list of calls ``ToolCall`` takes as they are."""
    if _is_missing(value):
        return True
    if type(value) is not list:
        return False  # JSON text, an array: case_from_row reads it
    for item in value:
        if type(item) is not dict or type(item.get("tool_name")) is not str:
            return False
        args = item.get("tool_input")
        if args is not None and (type(args) is not dict or not set(map(type, args)) <= _TEXT_ONLY):
            return False
        # Anything past the name and the input: an id, an agent, an error must be text when given.
        if len(item) > (2 if "tool_input" in item else 1) and any(
                item.get(k) is not None and type(item[k]) is not str for k in _OPTIONAL_TEXT):
            return False
    return True


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
