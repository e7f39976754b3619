"""The run record's format: one versioned file that keeps every run and its scores; written whole and read back here.

``runs.jsonl`` in an out folder holds, one JSON object a line:

1. a **header** (``"kind": "header"``): the format name and version, the status (``running``
   while a journal is being written, ``complete`` once every run is in and scored), the dataset's
   source and fingerprint, the agents, each metric's spec (class, arguments, ``requires``) and
   the run options;
2. one line per **case** (``"kind": "case"``): the case as it was run, and its fingerprint (a hash
   of what the agent was asked), so a saved run can be read back without the dataset file;
3. one line per finished **run** (``"kind": "run"``), keyed by (agent, case id, trial): the
   ``AgentRun`` and, when scored, its scores (metric name -> ``Score``).

One writer (:class:`levelfield._core.results.journal.Journal` appends runs as they finish and
flushes each line; :func:`write_record` rewrites the whole file atomically at the end) and one reader
(:func:`read_record`) serve ``EvalResult.save/load``, ``Comparison.save/load`` and resuming
(``out=..., resume=True``, checked by :mod:`levelfield._core.results.resume`). Summaries are never
stored as the truth: they are recomputed from the stored scores, so save -> load -> summary gives the
same numbers. A truncated last line (a process killed mid-write) is ignored; any other unreadable
line is an error naming the line.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps, model_json, to_jsonable
from ..data.types import AgentRun, Usage
from ..errors import MetricError, RecordError
from ..score.metrics.base import Metric, Score, ScoringContext, kept_arguments
from .fingerprints import case_fingerprint, dataset_fingerprint
from .writing import replacing

__all__ = [
    "FORMAT",
    "VERSION",
    "RUNS_FILE",
    "RunKey",
    "Record",
    "read_runs_at",
    "finish_journal",
    "SavedMetric",
    "metric_spec",
    "metrics_from_specs",
    "make_header",
    "write_record",
    "read_record",
    "find_record",
    "score_from_json",
]

FORMAT = "levelfield.run-record"
VERSION = 1
RUNS_FILE = "runs.jsonl"

RunKey = tuple[str, str, int]
"""(agent name, case id, trial): what identifies one run."""


# -- metric specs --------------------------------------------------------------------------------


def metric_spec(metric: Metric) -> dict[str, Any]:
    """What is known of a metric, to save beside its scores: name, class, ``requires``, arguments."""
    cls = type(metric)
    args = {k: to_jsonable(v) for k, v in kept_arguments(metric).items() if not callable(v) or isinstance(v, type)}
    return {
        "name": metric.name,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "requires": list(getattr(metric, "requires", ())),
        "is_async": bool(getattr(metric, "is_async", False)),
        "args": args,
    }


class SavedMetric(Metric):
    """A metric read back from a run record: its name and ``requires``, and its stored scores.

    It cannot score new rows (the original code is not in the record); results loaded with it
    are complete, since every score they need is stored.
    """

    requires: tuple[str, ...] = ()  # type: ignore[misc]
    saved: ClassVar[bool] = True

    def __init__(self, name: str, requires: Sequence[str] = (), spec: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.requires = tuple(requires)
        self.spec = dict(spec or {})

    def score(self, ctx: ScoringContext) -> float:
        raise MetricError(
            f"metric {self.name!r} was read back from a saved run and cannot score new rows; "
            "pass the original metric object to re-score"
        )


def metrics_from_specs(specs: Iterable[Mapping[str, Any]]) -> list[Metric]:
    """Metric objects for saved specs: the registry's own metric when the spec is one, else a SavedMetric."""
    from ..score.metrics.registry import resolve_metrics

    out: list[Metric] = []
    for spec in specs:
        name = str(spec.get("name"))
        metric: Metric | None = None
        try:
            candidate = resolve_metrics([name])[0]
        except MetricError:
            candidate = None
        if candidate is not None:
            own = metric_spec(candidate)
            if own["class"] == spec.get("class", own["class"]) and own["args"] == spec.get("args", own["args"]):
                metric = candidate
        out.append(metric or SavedMetric(name, spec.get("requires") or (), spec))
    return out


# -- scores and runs as JSON ---------------------------------------------------------------------


def _score_to_json(score: Score) -> dict[str, Any]:
    out: dict[str, Any] = {"value": None if math.isnan(score.value) else score.value}
    if score.explanation is not None:
        out["explanation"] = score.explanation
    if score.extra:
        out["extra"] = to_jsonable(score.extra)
    if score.failed:
        out["failed"] = True
    if score.error is not None:
        out["error"] = score.error
    if score.usage is not None:
        out["usage"] = score.usage.model_dump(exclude_none=True)
    return out


def _score_from_json(data: Any) -> Score:
    if not isinstance(data, Mapping):
        raise ValueError(f"a score must be an object, got {type(data).__name__}")
    value = data.get("value")
    usage = data.get("usage")
    return Score(
        value=math.nan if value is None else float(value),
        explanation=data.get("explanation"),
        extra=dict(data.get("extra") or {}),
        failed=bool(data.get("failed", False)),
        usage=Usage.model_validate(usage) if usage else None,
        error=data.get("error"),
    )


score_from_json = _score_from_json
"""A stored score (a record's ``scores`` entry) read back as a ``Score``; for readers of single lines."""

_text = json.encoder.encode_basestring  # a str as JSON, as the shared encoder writes it (C, UTF-8 kept)


def _scores_json(scores: Mapping[str, Score]) -> str:
    # A bare number (the common score) is spelled here; anything richer goes through the encoder.
    parts = []
    for name, score in scores.items():
        value = score.value
        if (type(value) is float and score.explanation is None and not score.extra and not score.failed
                and score.error is None and score.usage is None):
            parts.append(f'{_text(str(name))}:{{"value":{repr(value) if math.isfinite(value) else "null"}}}')
        else:
            parts.append(f"{_text(str(name))}:{dumps(_score_to_json(score))}")
    return "{" + ",".join(parts) + "}"


def _run_line(run: AgentRun, scores: Mapping[str, Score] | None, fingerprint: str | None) -> str:
    # Built by hand around pydantic's JSON of the run: one encoder pass per run, no re-parsing
    # (the journal writes one per finished run while other runs wait on the loop).
    line = (f'{{"kind":"run","agent":{_text(run.agent_name)},"case_id":{_text(run.case_id)},"trial":{int(run.trial)},'
            f'"fingerprint":{"null" if fingerprint is None else _text(fingerprint)},'
            f'"run":{model_json(run, exclude_none=True)}')
    if scores is not None:
        line += f',"scores":{_scores_json(scores)}'
    return line + "}"


def _case_line(case: EvalCase, fingerprint: str) -> str:
    return f'{{"kind":"case","fingerprint":{_text(fingerprint)},"case":{model_json(case, exclude={"columns"})}}}'


# -- the record ----------------------------------------------------------------------------------


@dataclass
class Record:
    """A run record read back: its header, its cases and its runs (with scores when stored)."""

    path: Path
    header: dict[str, Any]
    cases: list[EvalCase]
    fingerprints: dict[str, str]
    """Case id -> case fingerprint, as recorded."""
    runs: dict[RunKey, tuple[AgentRun, dict[str, Score] | None]] = field(default_factory=dict)
    """(agent, case id, trial) -> the run and its scores (None when the journal had none yet)."""
    truncated: bool = False
    """The last line was cut off mid-write (a killed process); it was ignored."""
    offsets: dict[RunKey, int] = field(default_factory=dict)
    """Where each run's line starts in the file (bytes): a run read back alone (``read_runs_at``)."""

    @property
    def complete(self) -> bool:
        return self.header.get("status") == "complete"

    @property
    def agents(self) -> list[str]:
        return list(self.header.get("agents") or [])

    @property
    def trials(self) -> int:
        return int((self.header.get("options") or {}).get("trials", 1))

    def expected_keys(self) -> list[RunKey]:
        """Every run the header plans: each agent on each case and trial."""
        return [(a, c.case_id, t) for a in self.agents for c in self.cases for t in range(self.trials)]

    def missing(self) -> list[RunKey]:
        """Planned runs the record lacks (an interrupted journal)."""
        return [k for k in self.expected_keys() if k not in self.runs]


def make_header(
    *,
    source: str,
    fingerprints: Mapping[str, str],
    agents: Sequence[str],
    metrics: Sequence[Metric],
    options: Mapping[str, Any],
    kind: str,
    status: str = "running",
    settings: Mapping[str, Any] | None = None,
    tools: Mapping[str, Any] | None = None,
    a2a_preflight: Mapping[str, Any] | None = None,
    evaluators: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header line of a record. ``kind`` is ``evaluate`` or ``compare``; ``settings`` holds
    the statistics settings of a comparison (failed-run policy, confidence, test, seed, reducer);
    ``tools`` what levelled the agents' tools (``{"cassette": {path, mode, fingerprint} | None, "faults":
    {rate, kinds, seed, tools, slow_seconds, schedule_version} | None, "agents": {name: {levelled, how | why}}}``),
    left out when nothing was levelled; ``a2a_preflight`` each A2A agent's conformance preflight
    (``Preflight.to_dict()``), by agent name, left out when none ran. ``evaluators``: what gave each
    metric's scores (metric name -> ``provenance.Evaluator``); by default the metrics' own
    (:func:`levelfield._core.results.provenance.evaluators_of`)."""
    from .provenance import evaluators_json, evaluators_of

    extra = {"a2a_preflight": to_jsonable(dict(a2a_preflight))} if a2a_preflight else {}
    header = {**extra,
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "status": status,
        "run_kind": kind,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "levelfield_version": _version(),
        "dataset": {"source": source, "fingerprint": dataset_fingerprint(fingerprints), "cases": len(fingerprints)},
        "agents": list(agents),
        "metrics": [metric_spec(m) for m in metrics],
        "options": to_jsonable(dict(options)),
        "settings": to_jsonable(dict(settings or {})),
        "evaluators": to_jsonable(evaluators_json(evaluators_of(metrics) if evaluators is None else evaluators)),
    }
    if tools is not None:
        header["tools"] = to_jsonable(dict(tools))
    return header


@functools.cache  # reading the installed metadata takes ~2 ms, on every journal and save
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("levelfield")
    except PackageNotFoundError:
        return "unknown"


def _parse_line(data: bytes) -> Any:
    """One journal line as JSON, or None when it is torn (cut inside a character or the JSON)."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def write_record(
    path: Path,
    header: Mapping[str, Any],
    cases: Sequence[EvalCase],
    fingerprints: Mapping[str, str],
    runs: Iterable[tuple[AgentRun, Mapping[str, Score] | None]],
) -> Path:
    """Write a whole record at once (atomically: a temporary file renamed over ``path``)."""
    path = Path(path)
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        f.write(dumps(dict(header)) + "\n")
        for case in cases:
            f.write(_case_line(case, fingerprints[case.case_id]) + "\n")
        for run, scores in runs:
            f.write(_run_line(run, scores, fingerprints.get(run.case_id)) + "\n")
    return path


def find_record(location: str | Path) -> Path:
    """``runs.jsonl`` itself, or the one in a folder; a clear error when there is none."""
    path = Path(location)
    if path.is_dir():
        path = path / RUNS_FILE
    if not path.is_file():
        raise RecordError(f"{location}: no saved levelfield run here (expected {RUNS_FILE} written with out=... or --out)")
    return path


def read_record(location: str | Path) -> Record:
    """Read a record (a folder or its ``runs.jsonl``). Errors name the file and line."""
    path = find_record(location)
    header: dict[str, Any] | None = None
    cases: list[EvalCase] = []
    fingerprints: dict[str, str] = {}
    runs: dict[RunKey, tuple[AgentRun, dict[str, Score] | None]] = {}
    truncated = False
    try:
        lines = path.read_bytes().split(b"\n")  # bytes: a line cut inside a character is still a line
    except OSError as exc:
        raise RecordError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    last = len(lines)  # the text after the last newline ("" when the file ends with one)
    offsets: dict[RunKey, int] = {}
    start = 0
    for n, line in enumerate(lines, 1):
        at, start = start, start + len(line) + 1
        if not line.strip():
            continue
        try:
            data = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if n == last:
                truncated = True  # killed mid-write: the run in that line is simply not there
                break
            what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not valid JSON ({exc.msg})"
            raise RecordError(f"{path} line {n}: {what}") from None
        where = f"{path} line {n}"
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object")
        kind = data.get("kind")
        if header is None:
            if kind != "header" or data.get("format") != FORMAT:
                raise RecordError(
                    f"{where}: not a levelfield run record (no header line); it may come from an older version. "
                    "Re-run with out=... to write one"
                )
            version = data.get("version")
            if not isinstance(version, int) or version > VERSION:
                raise RecordError(
                    f"{where}: record format version {version!r} is newer than this levelfield reads ({VERSION}); upgrade levelfield"
                )
            header = data
            continue
        try:
            if kind == "case":
                case = EvalCase.model_validate(data["case"])
                cases.append(case)
                fingerprints[case.case_id] = str(data.get("fingerprint") or case_fingerprint(case))
            elif kind == "run":
                run, scores = _run_entry(data)
                runs[(run.agent_name, run.case_id, run.trial)] = (run, scores)
                offsets[(run.agent_name, run.case_id, run.trial)] = at
            else:
                raise ValueError(f"unknown line kind {kind!r}")
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            text = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise RecordError(f"{where}: cannot read this {kind or 'line'} ({text})") from None
    if header is None and truncated:
        raise RecordError(
            f"{path}: cut off inside its header line (the process was killed or the disk was full as the journal "
            "was created); no run was recorded. Start again with overwrite=True (--overwrite)"
        )
    if header is None:
        raise RecordError(f"{path}: empty; no run was recorded")
    return Record(path, header, cases, fingerprints, runs, truncated, offsets)


def _run_entry(data: Mapping[str, Any]) -> tuple[AgentRun, dict[str, Score] | None]:
    """A run line's run and scores (None when the journal had none yet)."""
    run_data = dict(data["run"])
    if run_data.get("latency_in_seconds") is None:
        run_data["latency_in_seconds"] = math.nan
    run = AgentRun.model_validate(run_data)
    raw_scores = data.get("scores")
    return run, None if raw_scores is None else {k: _score_from_json(v) for k, v in raw_scores.items()}


def read_runs_at(path: Path, offsets: Sequence[int]) -> list[tuple[AgentRun, dict[str, Score] | None]]:
    """The run lines that start at ``offsets`` (bytes, see ``Journal.offsets``), in that order: the
    few runs asked for, read without reading the whole record. Read in file order, so a page of
    runs is one pass forward."""
    order = sorted(range(len(offsets)), key=offsets.__getitem__)
    out: list[Any] = [None] * len(offsets)
    with path.open("rb") as f:
        for i in order:
            f.seek(offsets[i])
            line = f.readline()
            where = f"{path} at byte {offsets[i]}"
            data = _parse_line(line)
            if not isinstance(data, dict) or data.get("kind") != "run":
                raise RecordError(f"{where}: expected a run line (the file changed since it was written)")
            try:
                out[i] = _run_entry(data)
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                text = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                raise RecordError(f"{where}: cannot read this run ({text})") from None
    return out


def finish_journal(path: Path, header: Mapping[str, Any]) -> int:
    """Give a finished journal its final header (``status``: ``complete``...), keeping every other
    line as written: the file is copied through once, never read into memory, and replaced
    atomically. Returns how far the lines after the header moved (bytes)."""
    with path.open("rb") as src:
        old = len(src.readline())
        new = (dumps(dict(header)) + "\n").encode("utf-8")
        with replacing(path) as tmp, tmp.open("wb") as dst:
            dst.write(new)
            shutil.copyfileobj(src, dst, 1 << 20)
    return len(new) - old
