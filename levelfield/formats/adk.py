"""ADK eval files: ``.evalset.json`` eval sets, legacy ``.test.json`` lists, folders of them, and export.

Read as ADK writes them, without google-adk installed: snake_case or camelCase fields; tool calls
under ``intermediate_data.tool_uses`` (older ADK) or as ``function_call`` parts of
``intermediate_data.invocation_events`` (newer ADK); ``session_input.state`` becomes the case's
``state`` (the whole ``session_input`` is kept in its metadata). Each eval case becomes one
:class:`EvalCase`; a case of several invocations becomes a multi-turn case whose ``turns`` hold
every invocation's prompt, expected response and expected tool calls. A ``conversation_scenario``
case is kept as such (it needs a user simulator). Thought parts of an expected response are kept
apart from its text, and an expected call written without ``args`` keeps that fact, because
ADK's evaluators tell both apart.

Rubrics for ADK's rubric-based criteria are kept in the case's metadata as written: the case's own
(``rubrics``) and each invocation's (``turn_rubrics``, one list per turn).

A legacy ``.test.json`` file (a list of ``{query, expected_tool_use, reference}``) is, as in ADK's
``AgentEvaluator``, ONE session: one multi-turn case named after the file (qualified by its path
in a folder where two legacy files share a name). ADK's old named-case eval sets
(``[{"name", "data", "initial_session"}]``) give one case per name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from .._core.data.dataset import EvalCase, EvalDataset, Turn
from .._core.data.rows import parse_scenario, too_deep_message
from .._core.data.token_counts import genai_usage
from .._core.data.types import AgentOutput, AgentRun, ToolCall, Usage
from .._core.errors import DatasetError
from .._core.results.result import EvalResult
from .._core.results.writing import write_text

__all__ = [
    "is_evalset",
    "is_legacy_test_file",
    "cases_from_evalset",
    "rows_from_evalset",
    "case_from_legacy",
    "cases_from_named",
    "is_named_cases",
    "legacy_case_id",
    "cases_from_file",
    "load_folder",
    "evalset_from_runs",
    "write_evalset",
    "outputs_from_invocations",
    "Content",
    "Event",
    "content_text",
    "tool_call",
    "TEST_SUFFIX",
    "EVALSET_SUFFIX",
]

TEST_SUFFIX = ".test.json"
EVALSET_SUFFIX = ".evalset.json"


# --- ADK's schema, as far as levelfield reads it (ADK's own models need google-genai) ---------


class _AdkModel(BaseModel):
    # ADK models accept both spellings: field names and their camelCase aliases.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class _FunctionCall(_AdkModel):
    id: str | None = None
    name: str
    args: dict[str, Any] | None = None


class _FunctionResponse(_AdkModel):
    id: str | None = None
    name: str | None = None
    response: Any = None


class _Part(_AdkModel):
    text: str | None = None
    thought: bool | None = None
    function_call: _FunctionCall | None = None
    function_response: _FunctionResponse | None = None


class _Content(_AdkModel):
    role: str | None = None
    parts: list[_Part] | None = None


class _Usage(_AdkModel):
    prompt_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    thoughts_token_count: int | None = None
    cached_content_token_count: int | None = None


class _InvocationEvent(_AdkModel):
    author: str | None = None
    content: _Content | None = None
    usage_metadata: _Usage | None = None
    model_version: str | None = None


class _IntermediateData(_AdkModel):
    tool_uses: list[_FunctionCall] = Field(default_factory=list)
    tool_responses: list[_FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[Any] = Field(default_factory=list)
    invocation_events: list[_InvocationEvent] | None = None


class _Invocation(_AdkModel):
    invocation_id: str = ""
    user_content: _Content
    final_response: _Content | None = None
    intermediate_data: _IntermediateData | None = None
    rubrics: list[Any] | None = None


class _SessionInput(_AdkModel):
    app_name: str = ""
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class _AdkEvalCase(_AdkModel):
    eval_id: str
    conversation: list[_Invocation] | None = None
    conversation_scenario: Any = None
    session_input: _SessionInput | None = None
    rubrics: list[Any] | None = None


def _text(content: _Content | None, *, thoughts: bool = False) -> str:
    # ADK joins the text parts with newlines. Thoughts are not part of an answer, but ADK's
    # response_match_score counts them, so they are kept apart (``thoughts=True`` reads them).
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text for p in content.parts if p.text and bool(p.thought) == thoughts)


def _call(fc: _FunctionCall, agent: str | None = None) -> ToolCall:
    # Leave tool_input unset when the file gives no args: ADK tells a call without args from {}.
    fields: dict[str, Any] = {"tool_name": fc.name, "id": fc.id, "agent": agent}
    if fc.args is not None:
        fields["tool_input"] = fc.args
    return ToolCall(**fields)


def _tool_calls(data: _IntermediateData | None) -> list[ToolCall]:
    if data is None:
        return []
    if data.invocation_events is not None:
        return [
            _call(p.function_call, event.author)
            for event in data.invocation_events
            if event.content and event.content.parts
            for p in event.content.parts
            if p.function_call is not None
        ]
    return [_call(c) for c in data.tool_uses]


def _where(error: ValidationError) -> str:
    first = error.errors()[0]
    # Name fields as ADK's docs do (snake_case), whichever spelling the file used.
    loc = ".".join(to_snake(x) if isinstance(x, str) else str(x) for x in first["loc"])
    return f"field '{loc}': {first['msg']}" if loc else first["msg"]


def _event_usage(events: Sequence[_InvocationEvent]) -> Usage | None:
    """Tokens of a turn's model calls as ADK counts them: input = prompt + tool-use prompt, output = candidates + thoughts."""
    usage: Usage | None = None
    for event in events:
        if event.usage_metadata is not None:
            spent = genai_usage(event.usage_metadata.model_dump(exclude_none=True))
            usage = usage + spent if usage is not None else spent
    return usage


def outputs_from_invocations(invocations: Sequence[Any], source: str = "invocations") -> list[AgentOutput]:
    """What an agent did in each of ADK's (actual) invocations, as levelfield's per-turn outputs.

    The final response's text; tool calls with their responses (matched by call id); the texts the
    agent wrote before its answer; and, from ``invocation_events``, the tokens its model calls
    reported and how many model calls it made (events with usage or a model version, as ADK's
    ``inference_call_count_v1`` counts them; None for the older ``tool_uses`` layout).
    """
    out = []
    for i, raw in enumerate(invocations):
        try:
            inv = _Invocation.model_validate(raw)
        except ValidationError as exc:
            raise DatasetError(f"{source} invocation {i + 1}: {_where(exc)}") from None
        data = inv.intermediate_data
        events = (data.invocation_events if data is not None else None) or []
        responses = {r.id: r.response for r in (data.tool_responses if data is not None else [])}
        texts: list[str] = []
        for event in events:
            for part in (event.content.parts or []) if event.content else []:
                if part.function_response is not None:
                    responses[part.function_response.id] = part.function_response.response
                elif part.text and not part.thought and event.content and event.content.role != "user":
                    texts.append(part.text)
        calls = [c.model_copy(update={"tool_output": responses.get(c.id)}) for c in _tool_calls(data)]
        response = _text(inv.final_response)
        counted = data is not None and data.invocation_events is not None
        out.append(
            AgentOutput(
                response=response,
                trajectory=calls,
                intermediate_responses=texts[:-1] if texts and texts[-1] == response else texts,
                usage=_event_usage(events),
                model_calls=sum(1 for e in events if e.usage_metadata is not None or e.model_version is not None) if counted else None,
            )
        )
    return out


Content = _Content
"""google-genai's ``Content`` (role; parts with text, thought, function_call, function_response) as ADK and
Vertex AI write it, in either spelling (snake_case or camelCase)."""
Event = _InvocationEvent
"""One event of an agent's run as ADK and Vertex AI write it: its ``author`` and ``content``."""
content_text = _text
tool_call = _call


# --- eval sets -----------------------------------------------------------------------------------


def is_evalset(data: Any) -> bool:
    """Whether parsed JSON is an ADK eval set (an object with ``eval_cases`` / ``evalCases``)."""
    return isinstance(data, dict) and ("eval_cases" in data or "evalCases" in data)


def cases_from_evalset(data: dict[str, Any], source: str, *, file: str | None = None) -> list[EvalCase]:
    """The cases of an ADK eval set (parsed JSON); errors name ``source``, the case and the field.

    A ``conversation_scenario`` case (a simulated user) becomes a case without turns whose
    ``conversation_scenario`` is set: it runs only with a user simulator.
    """
    raw_cases = data.get("eval_cases", data.get("evalCases"))
    if not isinstance(raw_cases, list):
        raise DatasetError(f"{source}: 'eval_cases' must be a list of eval cases, got {type(raw_cases).__name__}")
    set_id = data.get("eval_set_id", data.get("evalSetId"))
    cases = []
    for i, raw in enumerate(raw_cases):
        label = f"{source} case {i + 1}"
        if isinstance(raw, dict) and isinstance(raw.get("eval_id", raw.get("evalId")), str):
            label += f" ({raw.get('eval_id', raw.get('evalId'))!r})"
        try:
            case = _AdkEvalCase.model_validate(raw)
        except ValidationError as exc:
            raise DatasetError(f"{label}: {_where(exc)}") from None
        metadata: dict[str, Any] = {}
        if set_id is not None:
            metadata["eval_set_id"] = set_id
        state: dict[str, Any] = {}
        if case.session_input is not None:
            metadata["session_input"] = case.session_input.model_dump()
            state = dict(case.session_input.state)
        # Rubrics for judged criteria, kept as written (read, and checked, by the metric that judges them).
        if case.rubrics:
            metadata["rubrics"] = case.rubrics
        if case.conversation and any(inv.rubrics for inv in case.conversation):
            metadata["turn_rubrics"] = [inv.rubrics or [] for inv in case.conversation]
        if case.conversation is None:
            if not case.conversation_scenario:
                raise DatasetError(f"{label}: has no 'conversation'; give its invocations (or a 'conversation_scenario')")
            # A simulated user: kept, so the file's scripted cases still load; it runs only with a simulator.
            scenario = parse_scenario(case.conversation_scenario, label, "conversation_scenario")
            cases.append(
                EvalCase(
                    case_id=case.eval_id,
                    conversation_scenario=scenario,
                    state=state,
                    metadata=metadata,
                    location=label,
                    file=file,
                )
            )
            continue
        if not case.conversation:
            raise DatasetError(f"{label}: 'conversation' is empty; give at least one invocation")
        turns = [
            Turn(
                prompt=_text(inv.user_content),
                reference=None if inv.final_response is None else _text(inv.final_response),
                reference_trajectory=_tool_calls(inv.intermediate_data),
                reference_thoughts=(_text(inv.final_response, thoughts=True) or None),
            )
            for inv in case.conversation
        ]
        cases.append(_case(case.eval_id, turns, metadata, label, state=state, file=file))
    return cases


def rows_from_evalset(data: dict[str, Any], source: str) -> list[EvalCase]:
    """Same as :func:`cases_from_evalset` (the name ``load_dataset`` first used)."""
    return cases_from_evalset(data, source)


def _case(
    case_id: str,
    turns: list[Turn],
    metadata: dict[str, Any],
    location: str,
    *,
    state: dict[str, Any] | None = None,
    file: str | None = None,
) -> EvalCase:
    # The case-level fields describe the last turn, so single-turn metrics (trajectory_exact_match,
    # rouge...) compare the final answer with the final expectation; ``turns`` keeps every turn.
    last = turns[-1]
    return EvalCase(
        case_id=case_id,
        prompt=turns[0].prompt,
        reference=last.reference,
        reference_trajectory=last.reference_trajectory,
        reference_thoughts=last.reference_thoughts,
        turns=turns if len(turns) > 1 else [],
        metadata=metadata,
        location=location,
        state=state or {},
        file=file,
    )


# --- legacy .test.json ---------------------------------------------------------------------------


def is_legacy_test_file(data: Any) -> bool:
    """Whether parsed JSON is ADK's old test format: a list of objects with a ``query``."""
    return isinstance(data, list) and bool(data) and all(isinstance(d, dict) and "query" in d for d in data)


def is_named_cases(data: Any) -> bool:
    """Whether parsed JSON is ADK's old named-case eval set: ``[{"name", "data", "initial_session"}]``."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(d, dict) and "name" in d and isinstance(d.get("data"), list) for d in data)
    )


def _legacy_turns(data: Sequence[Any], source: str) -> list[Turn]:
    turns = []
    for i, entry in enumerate(data):
        where = f"{source} entry {i + 1}"
        if not isinstance(entry, dict):
            raise DatasetError(f"{where}: expected an object with 'query', got {type(entry).__name__}")
        query = entry.get("query")
        if not isinstance(query, str):
            raise DatasetError(f"{where}, field 'query': expected the user's text, got {type(query).__name__}")
        calls = entry.get("expected_tool_use") or []
        if not isinstance(calls, list):
            raise DatasetError(f"{where}, field 'expected_tool_use': expected a list of {{tool_name, tool_input}}")
        trajectory = []
        for j, call in enumerate(calls):
            try:
                trajectory.append(ToolCall.model_validate(call))
            except ValidationError as exc:
                raise DatasetError(f"{where}, field 'expected_tool_use', call {j}: {exc.errors()[0]['msg']}") from None
        reference = entry.get("reference")
        if reference is not None and not isinstance(reference, str):
            raise DatasetError(f"{where}, field 'reference': expected text, got {type(reference).__name__}")
        turns.append(Turn(prompt=query, reference=reference, reference_trajectory=trajectory))
    return turns


def _session(value: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, state) from an ``initial_session`` / ``session_input`` object."""
    if value is None:
        return {}, {}
    if not isinstance(value, dict):
        raise DatasetError(f"{where}, field 'initial_session': expected an object {{state, app_name, user_id}}")
    state = value.get("state") or {}
    if not isinstance(state, dict):
        raise DatasetError(f"{where}, field 'initial_session.state': expected an object, got {type(state).__name__}")
    return {"session_input": dict(value)}, dict(state)


def legacy_case_id(path: str | Path) -> str:
    """The case id of a legacy ``.test.json`` file: its name without the suffix."""
    name = Path(path).name
    return name[: -len(TEST_SUFFIX)] if name.endswith(TEST_SUFFIX) else Path(path).stem


def case_from_legacy(data: Sequence[Any], source: str | Path, case_id: str | None = None) -> EvalCase:
    """A legacy ``.test.json`` list as ADK reads it: one session, one turn per entry."""
    source = Path(source)
    if not isinstance(data, (list, tuple)) or not data:
        raise DatasetError(f"{source}: a .test.json file must be a non-empty list of {{query, expected_tool_use, reference}}")
    turns = _legacy_turns(data, str(source))
    return _case(case_id or legacy_case_id(source), turns, {}, str(source), file=str(source))


def cases_from_named(data: Sequence[Any], source: str | Path) -> list[EvalCase]:
    """ADK's old named-case eval set: each ``{"name", "data": [{query, ...}], "initial_session"}`` is one case."""
    cases = []
    for i, item in enumerate(data):
        where = f"{source} case {i + 1}"
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise DatasetError(f"{where}, field 'name': expected the case's name, got {name!r}")
        where += f" ({name!r})"
        if not item["data"]:
            raise DatasetError(f"{where}, field 'data': is empty; give at least one {{query, ...}} entry")
        metadata, state = _session(item.get("initial_session"), where)
        turns = _legacy_turns(item["data"], where)
        cases.append(_case(name, turns, metadata, where, state=state, file=str(source)))
    return cases


# --- files and folders ---------------------------------------------------------------------------


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path} line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise DatasetError(too_deep_message(str(path))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot be read ({exc})") from None


def cases_from_file(path: Path) -> list[EvalCase]:
    """The cases of one ADK file: an eval set (any name) or a legacy ``.test.json`` list."""
    data = _read_json(path)
    if is_evalset(data):
        return cases_from_evalset(data, str(path), file=str(path))
    if is_named_cases(data):
        return cases_from_named(data, path)
    if isinstance(data, list):
        return [case_from_legacy(data, path)]
    raise DatasetError(f"{path}: expected an ADK eval set (with 'eval_cases') or a list of {{query, ...}} entries")


def load_folder(path: Path) -> EvalDataset:
    """Every ``*.test.json`` and ``*.evalset.json`` under ``path`` (recursively, sorted), as one dataset."""
    path = Path(path)
    files = sorted({*path.rglob(f"*{TEST_SUFFIX}"), *path.rglob(f"*{EVALSET_SUFFIX}")})
    if not files:
        raise DatasetError(f"{path}: is a folder without any {TEST_SUFFIX} or {EVALSET_SUFFIX} file")
    # ADK names a legacy file's case by its path: qualify ids by the path within the folder
    # where two legacy files share a base name (a/lights.test.json, b/lights.test.json).
    legacy_ids = [legacy_case_id(f) for f in files if f.name.endswith(TEST_SUFFIX)]
    shared = {i for i in legacy_ids if legacy_ids.count(i) > 1}
    cases: list[EvalCase] = []
    origin: dict[str, Path] = {}
    for file in files:
        found = cases_from_file(file)
        if file.name.endswith(TEST_SUFFIX) and len(found) == 1 and found[0].case_id in shared:
            qualified = file.relative_to(path).as_posix()[: -len(TEST_SUFFIX)]
            found = [found[0].model_copy(update={"case_id": qualified})]
        for case in found:
            if case.case_id in origin:
                raise DatasetError(
                    f"{path}: case id {case.case_id!r} appears in both {origin[case.case_id]} and {file}; "
                    "case ids must be unique across the folder"
                )
            origin[case.case_id] = file
            cases.append(case)
    return EvalDataset(cases, source=str(path), columns=["prompt", "reference", "reference_trajectory"])


# --- export: recorded runs as an ADK eval set ----------------------------------------------------


def _content(text: str, role: str) -> dict[str, Any]:
    return {"parts": [{"text": text}], "role": role}


def _invocation(invocation_id: str, prompt: str, output: AgentOutput | None, stamp: float) -> dict[str, Any]:
    # The turn's own calls, as ADK records them: not those an AgentTool's agent made inside one.
    calls = [c for c in output.trajectory if c.within is None] if output is not None else []
    return {
        "invocation_id": invocation_id,
        "user_content": _content(prompt, "user"),
        "final_response": _content(output.response if output is not None else "", "model"),
        # The older layout: every ADK version reads it.
        "intermediate_data": {
            "tool_uses": [
                {"id": c.id, "name": c.tool_name, "args": c.tool_input} if c.id else {"name": c.tool_name, "args": c.tool_input}
                for c in calls
            ],
            "intermediate_responses": [],
        },
        "creation_timestamp": stamp,
    }


def evalset_from_runs(
    cases: Sequence[EvalCase], runs: Sequence[AgentRun], *, eval_set_id: str = "levelfield_run", name: str | None = None
) -> dict[str, Any]:
    """An ADK eval set (as a JSON-ready dict) whose expectations are what the runs did.

    Each successful run becomes one eval case: its turns become invocations with the agent's
    response as ``final_response`` and its tool calls as ``intermediate_data.tool_uses``. Failed
    runs are left out (a crash is no reference), and so are conversations whose simulated user
    failed; a simulated conversation is written with the user turns it had. With several trials,
    ids get ``_trial<n>``.
    """
    by_id = {c.case_id: c for c in cases}
    trials = {r.case_id: 0 for r in runs}
    for r in runs:
        trials[r.case_id] += 1
    stamp = time.time()
    eval_cases = []
    for run in runs:
        if run.failure or run.output is None or (run.conversation is not None and run.conversation.simulator_failure):
            continue
        case = by_id[run.case_id]
        if run.conversation is not None:
            # A simulated conversation becomes a scripted one: the user's turns as they were said.
            prompts, outputs = list(run.conversation.user_turns), list(run.turns)
        else:
            prompts = [t.prompt for t in case.turns] if case.turns else [case.prompt or ""]
            outputs = run.turns if len(run.turns) == len(prompts) else [run.output]
        eval_id = case.case_id if trials[run.case_id] == 1 else f"{case.case_id}_trial{run.trial + 1}"
        eval_case: dict[str, Any] = {
            "eval_id": eval_id,
            "conversation": [
                _invocation(f"{eval_id}-{i + 1}", p, o, stamp) for i, (p, o) in enumerate(zip(prompts, outputs))
            ],
            "creation_timestamp": stamp,
        }
        session = case.metadata.get("session_input")
        if isinstance(session, dict):
            eval_case["session_input"] = session
        eval_cases.append(eval_case)
    return {
        "eval_set_id": eval_set_id,
        "name": name or eval_set_id,
        "description": "Recorded with levelfield",
        "eval_cases": eval_cases,
        "creation_timestamp": stamp,
    }


def write_evalset(result: EvalResult, path: str | Path, *, eval_set_id: str | None = None) -> Path:
    """Write ``result``'s runs as an ADK ``.evalset.json`` file (see :func:`evalset_from_runs`)."""
    path = Path(path)
    if eval_set_id is None:
        name = path.name
        eval_set_id = name[: -len(EVALSET_SUFFIX)] if name.endswith(EVALSET_SUFFIX) else path.stem
    data = evalset_from_runs(list(result.dataset), result.runs, eval_set_id=eval_set_id)
    return write_text(path, json.dumps(data, indent=2, default=str) + "\n")
