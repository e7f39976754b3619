"""The run record: one versioned file that journals every run as it finishes and keeps results.

``runs.jsonl`` in an out folder holds, one JSON object a line:

1. a **header** (``"kind": "header"``): the format name and version, the status (``running``
   while a journal is being written, ``complete`` once every run is in and scored), the dataset's
   source and fingerprint, the agents, each metric's spec (class, arguments, ``requires``) and
   the run options;
2. one line per **case** (``"kind": "case"``): the case as it was run, and its fingerprint (a hash
   of what the agent was asked), so a saved run can be read back without the dataset file;
3. one line per finished **run** (``"kind": "run"``), keyed by (agent, case id, trial): the
   ``AgentRun`` and, when scored, its scores (metric name -> ``Score``).

One writer (:class:`Journal` appends runs as they finish and flushes each line;
:func:`write_record` rewrites the whole file atomically at the end) and one reader
(:func:`read_record`) serve ``EvalResult.save/load``, ``Comparison.save/load`` and resuming
(``out=..., resume=True``). Summaries are never stored as the truth: they are recomputed from the
stored scores, so save -> load -> summary gives the same numbers. A truncated last line (a
process killed mid-write) is ignored; any other unreadable line is an error naming the line.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import datetime as _dt
import functools
import hashlib
import json
import math
import os
import shutil
from array import array
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar

from pydantic import ValidationError

from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps, model_json, to_jsonable
from ..data.types import AgentRun, Usage
from ..errors import MetricError, RecordError, WriteError
from ..score.metrics.base import Metric, Score, ScoringContext, kept_arguments
from .lock import LOCK_FILE, OutLock
from .writing import replacing, writing

__all__ = [
    "FORMAT",
    "VERSION",
    "RUNS_FILE",
    "RunKey",
    "Record",
    "Journal",
    "read_runs_at",
    "finish_journal",
    "SavedMetric",
    "case_fingerprint",
    "dataset_fingerprint",
    "fingerprints_of",
    "metric_spec",
    "metrics_from_specs",
    "make_header",
    "write_record",
    "read_record",
    "find_record",
    "score_from_json",
    "check_out_folder",
    "check_resumable",
    "GENERATED_CASE_FIELDS",
    "carry_generated",
]

FORMAT = "levelfield.run-record"
VERSION = 1
RUNS_FILE = "runs.jsonl"

RunKey = tuple[str, str, int]
"""(agent name, case id, trial): what identifies one run."""


# -- fingerprints --------------------------------------------------------------------------------


def _digest(obj: Any) -> str:
    try:
        text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, default=to_jsonable, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(to_jsonable(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def case_fingerprint(case: EvalCase) -> str:
    """A hash of what an agent is asked in ``case``: prompts, history and initial state.

    References are left out on purpose: changing an expectation does not invalidate a run
    (runs are re-scored when resumed), changing the question does.
    """
    asked: dict[str, Any] = {
        "prompt": case.prompt,
        "history": [m.model_dump() for m in case.history],
        "turns": [t.prompt for t in case.turns],
    }
    state = getattr(case, "state", None)
    if state:
        asked["state"] = state
    if case.conversation_scenario is not None:
        asked["scenario"] = case.conversation_scenario
    session = case.metadata.get("session_input")
    if session:
        asked["session_input"] = session
    return _digest(asked)


def fingerprints_of(cases: Iterable[EvalCase]) -> dict[str, str]:
    """Case id -> :func:`case_fingerprint` for a dataset (computed once per dataset object)."""
    cached = getattr(cases, "_lf_fingerprints", None)
    if cached is not None:
        return cached
    out = {c.case_id: case_fingerprint(c) for c in cases}
    try:
        cases._lf_fingerprints = out
    except AttributeError:  # a list or tuple of cases: nothing to cache on
        pass
    return out


def dataset_fingerprint(fingerprints: Mapping[str, str]) -> str:
    """A hash of a dataset's case ids and case fingerprints, in order."""
    return _digest(list(fingerprints.items()))


GENERATED_CASE_FIELDS = ("rubric_groups",)
"""Case metadata that scoring may add (Vertex's ``rubric_groups``: rubrics a judge generated for a case).
The record's case lines keep it, and a resumed run takes it back, so a re-score never generates it anew."""


def carry_generated(saved: Iterable[EvalCase], cases: Iterable[EvalCase]) -> None:
    """Copy what scoring generated for ``saved`` cases (a record's) onto the same cases of ``cases``, where they lack it.

    Per group: a rubric group the dataset gives itself wins over the saved one of the same name.
    """
    by_id = {c.case_id: c for c in saved}
    for case in cases:
        old = by_id.get(case.case_id)
        if old is None:
            continue
        for key in GENERATED_CASE_FIELDS:
            kept = old.metadata.get(key)
            if isinstance(kept, Mapping) and kept:
                mine = case.metadata.get(key)
                if mine is None:
                    case.metadata[key] = dict(kept)
                elif isinstance(mine, dict):
                    for name, value in kept.items():
                        mine.setdefault(name, value)


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


_CASES_A_TURN = 200  # case lines a new journal writes per turn of the event loop (~1 ms)


class Journal:
    """Appends each finished run to ``runs.jsonl`` and flushes it, so a killed process loses only
    the runs in flight. Open it with :meth:`create` (a new record) or :meth:`reopen` (resume).

    A line that cannot be written (a full disk) fails the runs waiting for it with a
    :class:`WriteError` naming the file and the cause; it never leaves them waiting."""

    def __init__(self, path: Path, handle: IO[str], fingerprints: Mapping[str, str]) -> None:
        self.path = path
        self._f = handle
        self._fingerprints = dict(fingerprints)
        self._cases: collections.deque[EvalCase] = collections.deque()  # case lines not written yet
        self._pending: list[str] = []
        self._flushed: asyncio.Future[None] | None = None
        self._failed: RecordError | None = None
        self._unreported: RecordError | None = None  # a failure no run has been told of yet
        self.written = 0
        self.earlier: Mapping[RunKey, int] = {}
        """Where the runs already in the file when it was reopened start (bytes)."""
        self.scores_current = True
        """Whether the runs already in the file carry the scores the evaluation gives now (False once a
        resume changed the metrics or the references: they are scored again, and the record rewritten)."""
        self.offsets: array[int] | None = None
        """With :meth:`track_offsets`: where each run line written since starts in the file (bytes), in
        the order the runs were written (``written`` before a run's ``write`` is its index here)."""
        self._pos = 0
        self.durable = True
        """Whether each written line is made durable (``fsync``) before its run is acknowledged."""
        self._syncer: concurrent.futures.ThreadPoolExecutor | None = None
        self._syncing = False
        self._unsynced: list[asyncio.Future[None]] = []  # written, waiting for the next fsync
        self.lock: OutLock | None = None
        """The folder's writer lock when the journal holds it (released by :meth:`close`), else None."""

    @classmethod
    def create(cls, path: Path, header: Mapping[str, Any], cases: Sequence[EvalCase], fingerprints: Mapping[str, str]) -> Journal:
        """Start a new record at ``path``: the header now, the case lines before any run line, runs as they finish.

        Inside an event loop the case lines are written a few hundred per turn of the loop, while
        the first runs are in flight: serialising them (~10 ms for 2,000 cases) would otherwise
        hold up every run's start. Whatever is left of them goes before the first run line, and a
        failure to write them fails the runs waiting for their lines. Outside a loop they are
        written at once.
        """
        with writing(path, "cannot write the journal"):
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("w", encoding="utf-8")
            try:
                handle.write(dumps(dict(header)) + "\n")
                handle.flush()
            except BaseException:
                with contextlib.suppress(OSError):
                    handle.close()
                raise
        journal = cls(path, handle, fingerprints)
        journal._cases.extend(cases)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            try:
                journal.flush()
            except BaseException:
                with contextlib.suppress(OSError):
                    journal._f.close()
                raise
        else:
            loop.call_soon(journal._write_some_cases)
        return journal

    def track_offsets(self) -> None:
        """From now on, note where each run line starts (``offsets``), so a run can be read back
        from the file alone (:func:`read_runs_at`) instead of being held."""
        self._f.flush()
        self._pos = self._f.tell()
        self.offsets = array("q")

    def _put(self, lines: Sequence[str]) -> None:
        """Write whole lines (each without its newline), noting where the run lines start when tracked."""
        if not lines:
            return
        if self.offsets is not None:
            pos, offsets = self._pos, self.offsets
            for line in lines:
                if line.startswith('{"kind":"run"'):
                    offsets.append(pos)
                pos += (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1
            self._pos = pos
        self._f.write("\n".join(lines) + "\n")

    def _write_some_cases(self) -> None:
        """Write the next case lines, and ask the loop to come back for the rest."""
        if not self._cases or self._failed is not None or self._f.closed:
            return
        batch = [self._cases.popleft() for _ in range(min(_CASES_A_TURN, len(self._cases)))]
        try:
            self._put([_case_line(c, self._fingerprints[c.case_id]) for c in batch])
            self._f.flush()
        except Exception as exc:  # noqa: BLE001 - raised to the runs by their flush, or by close()
            self._failed = self._unreported = _journal_error(self.path, exc)
            return
        if self._cases:
            asyncio.get_running_loop().call_soon(self._write_some_cases)

    @classmethod
    def reopen(cls, record: Record) -> Journal:
        """Append to an existing record (resume), after repairing its end: a torn last line (a
        process killed mid-write) is cut off, a last line without its newline gets one."""
        with writing(record.path, "cannot repair the journal"):
            _repair_end(record.path)
            journal = cls(record.path, record.path.open("a", encoding="utf-8"), record.fingerprints)
        journal.earlier = record.offsets
        return journal

    @classmethod
    def append_to(cls, path: Path) -> Journal:
        """Append to the record at ``path`` without reading it back first (a record that grows by
        cases as well as runs, like a watch window), after repairing its end as :meth:`reopen` does."""
        with writing(path, "cannot repair the journal"):
            _repair_end(path)
            return cls(path, path.open("a", encoding="utf-8"), {})

    def write_case(self, case: EvalCase, fingerprint: str | None = None) -> None:
        """Queue a case line (a case that joined after the header: a trace that just arrived), written
        with the next flush before any run queued after it."""
        fingerprint = fingerprint or case_fingerprint(case)
        self._fingerprints[case.case_id] = fingerprint
        self._pending.append(_case_line(case, fingerprint))

    def write(self, run: AgentRun, scores: Mapping[str, Score] | None = None) -> asyncio.Future[None] | None:
        """Append one finished run (and its scores so far).

        Inside an event loop the line is written once the loop has run what is ready (runs that
        finish together share one write), then made durable (``fsync``) on the journal's own thread
        while the loop goes on; the future returned is done once it is, so a caller can wait for its
        run to be on disk. Outside a loop it is written and made durable at once (None).
        """
        self._pending.append(_run_line(run, scores, self._fingerprints.get(run.case_id)))
        self.written += 1
        if self._flushed is not None:
            return self._flushed
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            self._sync()
            return None
        # One write system call per turn of the event loop rather than per run: a call releases
        # the GIL, and winning it back from a hundred agent threads costs more than the write.
        self._flushed = loop.create_future()
        loop.call_soon(self.flush)
        return self._flushed

    def flush(self) -> None:
        """Write and flush every pending line. A failure is raised here, or (inside the event
        loop) set on the future the waiting runs hold, so that none of them waits forever; that
        future is done once the lines are durable."""
        flushed, self._flushed = self._flushed, None
        try:
            if self._failed is not None:
                raise self._failed
            if (self._cases or self._pending) and not self._f.closed:
                cases, self._cases = self._cases, collections.deque()
                lines = [_case_line(c, self._fingerprints[c.case_id]) for c in cases] + self._pending
                self._pending = []
                self._put(lines)
                self._f.flush()
        except Exception as exc:  # a full disk, or a line that cannot be encoded: loud, never a hang
            self._failed = self._failed or _journal_error(self.path, exc)
            self._unreported = None
            if flushed is None:
                raise self._failed from exc
            if not flushed.done():
                flushed.set_exception(self._failed)
            return
        if flushed is not None and not flushed.done():
            self._sync_then(flushed)

    def _sync(self) -> None:
        """Make what was written durable (``fsync``): a run is acknowledged only once it survives a crash."""
        if self.durable and not self._f.closed:
            os.fsync(self._f.fileno())

    def _sync_then(self, flushed: asyncio.Future[None]) -> None:
        """``flushed`` is done once the lines written so far are durable (or fails with the journal's error).

        ``fsync`` runs on the journal's own thread, one at a time: lines written while one is under
        way wait for the next, which makes them all durable together (a group commit)."""
        if not self.durable:
            flushed.set_result(None)
            return
        self._unsynced.append(flushed)
        if not self._syncing:
            self._start_sync(flushed.get_loop())

    def _start_sync(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting, self._unsynced = self._unsynced, []
        self._syncing = True
        try:
            if self._syncer is None:
                self._syncer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="levelfield-journal")
            synced = loop.run_in_executor(self._syncer, os.fsync, self._f.fileno())
        except Exception as exc:  # noqa: BLE001 - a closed file, a stopped thread: the runs waiting hear it
            synced = loop.create_future()
            synced.set_exception(exc)
        synced.add_done_callback(lambda f: self._synced(f, waiting, loop))

    def _synced(self, synced: asyncio.Future[None], waiting: list[asyncio.Future[None]],
                loop: asyncio.AbstractEventLoop) -> None:
        self._syncing = False
        exc = None if synced.cancelled() else synced.exception()
        if exc is not None:
            self._failed = self._failed or _journal_error(self.path, exc)  # type: ignore[arg-type]
        for flushed in waiting:
            if flushed.done():
                continue
            if synced.cancelled():
                flushed.cancel()
            elif exc is not None:
                flushed.set_exception(self._failed)  # type: ignore[arg-type]
            else:
                flushed.set_result(None)
        if self._unsynced:
            if self._failed is not None:
                for flushed in self._unsynced:
                    if not flushed.done():
                        flushed.set_exception(self._failed)
                self._unsynced = []
            else:
                self._start_sync(loop)

    def close(self) -> None:
        """Write what is pending and close the file; after a failed write, just close it (raising
        the failure if no run was told of it: case lines that could not be written, no run since)."""
        if self._f.closed:
            return
        try:
            if self._failed is None:
                self.flush()
                self._sync()
        except OSError as exc:
            self._failed = _journal_error(self.path, exc)
            raise self._failed from exc
        finally:
            if self._syncer is not None:
                self._syncer.shutdown(wait=True)
            try:
                self._f.close()
            except OSError as exc:  # the last buffered bytes did not fit either
                if self._failed is None:
                    raise _journal_error(self.path, exc) from exc
            finally:
                if self.lock is not None:
                    self.lock.release()
        unreported, self._unreported = self._unreported, None
        if unreported is not None:
            raise unreported

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _journal_error(path: Path, exc: Exception) -> RecordError:
    if isinstance(exc, RecordError):
        return exc
    if isinstance(exc, OSError):
        return WriteError(path, exc, "cannot write the journal")
    return RecordError(f"{path}: cannot write the journal ({type(exc).__name__}: {exc})")


def _repair_end(path: Path) -> None:
    """Make ``path`` end with a whole line: cut a torn last line off (it can be no complete
    record: every line ends with its newline when written whole), or add a newline after a
    complete last line that lacks one. A later append then starts a line of its own."""
    with path.open("r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        # Read back from the end to the last newline: the unfinished line.
        start = size
        while start > 0:
            step = min(65536, start)
            f.seek(start - step)
            chunk = f.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                start = start - step + cut + 1
                break
            start -= step
        f.seek(start)
        if _parse_line(f.read()) is None:
            f.truncate(start)
        else:
            f.write(b"\n")


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


def check_out_folder(out: Path, *, overwrite: bool, kept: Collection[str] = ()) -> None:
    """Refuse an ``out`` that is a file, or a folder holding files but no run record, unless
    ``overwrite``: results written there would replace files of the same name, and a file named like
    one of levelfield's outputs (a user's own ``metrics_table.csv``) is no less the user's for it.
    Hidden files (``.gitkeep``, ``.DS_Store``) do not count; nor do ``kept``, files the caller knows
    as its own results and was told to replace (saved predictions' score table on ``resume``). A
    record already there is the caller's to refuse, resume or replace."""
    if out.exists() and not out.is_dir():
        raise RecordError(f"out={str(out)!r} is a file, not a folder: give a folder for the run record and results")
    if overwrite or not out.is_dir() or (out / RUNS_FILE).exists():
        return
    # The journal's lock (runs.jsonl.lock) is this run's own, or one a crashed run left.
    held = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir()
                  if not p.name.startswith(".") and p.name not in kept and p.name != LOCK_FILE)
    if held:
        raise RecordError(
            f"{out} holds {len(held)} other file(s) ({_few(held)}) and no run record ({RUNS_FILE}); results written "
            "there would replace files of the same name. Choose a new or empty folder, or pass overwrite=True "
            "(--overwrite) to write into it anyway"
        )


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


def levelling_changes(saved: Mapping[str, Any] | None, given: Mapping[str, Any] | None) -> list[str]:
    """What differs between the tool levelling a record ran with and the one given now (a cassette
    by path, mode and, replayed both times, fingerprint; a fault schedule by every setting and its
    version), each named; [] when they agree."""
    saved, given = saved or {}, given or {}
    problems = []
    old, new = saved.get("cassette"), given.get("cassette")
    if old != new:
        if old is None or new is None:
            problems.append(f"the journal ran {'with cassette ' + repr(old['path']) if old else 'without a cassette'}, "
                            f"and now {'cassette ' + repr(new['path']) + ' is given' if new else 'none is given'}")
        elif old.get("path") != new.get("path"):
            problems.append(f"the journal ran with cassette {old.get('path')!r}, not {new.get('path')!r}")
        elif old.get("mode") == new.get("mode") == "replay" and old.get("fingerprint") != new.get("fingerprint"):
            problems.append(f"cassette {new.get('path')!r} changed since the journal's runs replayed it (fingerprint "
                            f"{old.get('fingerprint')} then, {new.get('fingerprint')} now)")
    old, new = saved.get("faults"), given.get("faults")
    if old != new:
        if old is None or new is None:
            problems.append(f"the journal ran {'with faults ' + repr(old) if old else 'without faults'}, and now "
                            f"{'faults ' + repr(new) + ' are given' if new else 'none are given'}")
        else:
            fields = [f"{k}={old.get(k)!r} then, {new.get(k)!r} now" for k in sorted(set(old) | set(new))
                      if old.get(k) != new.get(k)]
            problems.append(f"the fault schedule differs ({'; '.join(fields)})")
    return problems


def check_resumable(record: Record, *, fingerprints: Mapping[str, str], agents: Sequence[str], trials: int,
                    tools: Mapping[str, Any] | None = None) -> None:
    """Raise a RecordError naming what differs when ``record`` cannot be resumed with these inputs."""
    where = f"the journal {record.path}"
    planned = (record.header.get("dataset") or {}).get("cases")
    if isinstance(planned, int) and len(record.cases) < planned and not record.runs:
        # Runs are appended after every case line: the journal was cut off as it was created.
        raise RecordError(
            f"cannot resume {where}: it was cut off while it was being created ({len(record.cases)} of its {planned} "
            "case lines were written: the disk was full or the process was killed); no run was recorded. "
            "Start again with overwrite=True (--overwrite)"
        )
    problems = []
    # A baseline joined the saved comparison from an earlier folder: its runs were loaded, not run here.
    baseline = (record.header.get("settings") or {}).get("baseline")
    saved_agents, new_agents = [a for a in record.agents if a != baseline], list(agents)
    if sorted(saved_agents) != sorted(new_agents):
        gone = [a for a in saved_agents if a not in new_agents]
        new = [a for a in new_agents if a not in saved_agents]
        parts = []
        if gone:
            parts.append(f"{', '.join(map(repr, gone))} not given now")
        if new:
            parts.append(f"{', '.join(map(repr, new))} not in the journal")
        problems.append(f"agents differ ({'; '.join(parts)})")
    saved = record.fingerprints
    only_saved = [c for c in saved if c not in fingerprints]
    only_new = [c for c in fingerprints if c not in saved]
    changed = [c for c in saved if c in fingerprints and saved[c] != fingerprints[c]]
    if only_saved or only_new or changed:
        parts = []
        if only_saved:
            parts.append(f"{len(only_saved)} case(s) not in this dataset ({_few(only_saved)})")
        if only_new:
            parts.append(f"{len(only_new)} case(s) not in the journal ({_few(only_new)})")
        if changed:
            parts.append(f"{len(changed)} case(s) with another prompt, history or state ({_few(changed)})")
        problems.append(f"the dataset differs: {'; '.join(parts)}")
    if trials < record.trials:
        problems.append(f"trials={trials} but the journal ran {record.trials}; resume with trials>={record.trials}")
    problems += [f"tools: {p}" for p in levelling_changes(record.header.get("tools"), tools)]
    if problems:
        raise RecordError(
            f"cannot resume {where}: " + "; ".join(problems)
            + ". Resume with the same dataset, agents, cassette and faults, or write to another out folder"
        )


def _few(ids: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return shown + (f" and {len(ids) - n} more" if len(ids) > n else "")

