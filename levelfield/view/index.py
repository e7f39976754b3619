"""The runs ``levelfield view`` serves: every run record under some folders, indexed without loading it whole.

A run record (``runs.jsonl``) is indexed line by line into what listing, paging, filtering and
diffing need (case ids, each run's agent, trial, failure, error type, scores, and the byte offset
of its line); a case's full transcript is read back from those offsets when it is opened. A
journal that grows (an evaluation still running) is read on from where the last read stopped; a
file replaced (``write_record`` renames a new one over it) is read again. A scored table of saved
predictions (``metrics_table.parquet`` / ``.jsonl`` beside ``summary.json``) is read whole: it
holds ids and scores only. Nothing here loads a :class:`~levelfield.Comparison`:
100,000 cases would take tens of seconds and gigabytes; see :mod:`levelfield.view.runs` for when
the report's statistics are computed.
"""

from __future__ import annotations

import json
import math
import os
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._core.data.dataset import EvalCase
from .._core.data.lines import LineBlocks
from .._core.data.types import AgentRun
from .._core.errors import RecordError
from .._core.results.provenance import evaluators_from_header
from .._core.results.record import FORMAT, RUNS_FILE, VERSION, metrics_from_specs, score_from_json
from .._core.score.matching import DEFAULT_MATCHER, ToolCallMatcher
from .._core.score.metrics.base import Metric, Score
from .._core.score.scoring import context_for, explain_scores
from .._core.stats.config import StatsConfig
from .._core.stats.inference import reduce_trials

__all__ = ["RunEntry", "RunIndex", "RecordIndex", "TableIndex", "find_runs", "TABLE_FILES", "SEARCH_CHARS"]

TABLE_FILES = ("metrics_table.parquet", "metrics_table.jsonl")
"""The score tables of saved predictions scored batch by batch (no ``runs.jsonl`` beside them)."""

SEARCH_CHARS = 400
"""Characters of a prompt, response or error kept (lower-cased) for text search."""

# Folders never worth walking into for runs: they hold thousands of files and no run of ours.
_SKIP = {"node_modules", "__pycache__", "site-packages", ".git", ".venv", "venv"}
_MAX_DEPTH = 8
_BLOCK = 8 << 20  # bytes read at a time: a 100 MB record is indexed without holding it whole


@dataclass(slots=True)
class RunEntry:
    """One run of a record as the index keeps it: enough to list, filter and find its line again."""

    agent: str
    case: int
    """Position of its case in the record's case order."""
    trial: int
    failure: bool
    error_type: str | None
    scores: dict[str, float]
    """Metric name -> the stored value (NaN when not scored)."""
    offset: int = -1
    """Byte offset of its line in the record (-1 for a table row)."""
    text: str = ""
    """Lower-cased start of its response and error, for text search."""


@dataclass
class RunIndex:
    """What every kind of run offers the view: its header facts, cases, runs and per-case scores."""

    path: Path
    """The file indexed (``runs.jsonl`` or the score table)."""
    kind: str = "evaluate"
    created: str = ""
    status: str = "complete"
    dataset: str = ""
    agents: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    trials: int = 1
    case_ids: list[str] = field(default_factory=list)
    case_prompts: list[str] = field(default_factory=list)
    """The start of each case's prompt (``SEARCH_CHARS`` characters), to show and search."""
    runs: dict[tuple[str, int, int], RunEntry] = field(default_factory=dict)
    """(agent, case position, trial) -> the run."""
    problem: str | None = None
    """Why (part of) the file could not be read, shown instead of failing the page."""
    stamp: tuple[int, int, int] = (0, 0, 0)
    _positions: dict[str, int] = field(default_factory=dict)
    _applies: list[frozenset[str]] = field(default_factory=list)
    _cache: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    _case_runs: dict[int, list[tuple[str, int, int]]] = field(default_factory=dict)

    # -- reading ---------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Bring the index up to date with the file; True when anything changed."""
        raise NotImplementedError

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    # -- looking up ------------------------------------------------------------------------

    @property
    def stats(self) -> StatsConfig:
        """The statistics settings the run was saved with (defaults where it has none)."""
        try:
            return StatsConfig.from_dict(self.settings)
        except Exception:  # noqa: BLE001 - a header from a newer version: its settings are not ours to judge here
            return StatsConfig()

    @property
    def matcher(self) -> ToolCallMatcher:
        """The matcher of the run's first trajectory metric (the default one otherwise), to mark calls as the report does."""
        for metric in getattr(self, "_metric_objects", ()):
            found = getattr(metric, "matcher", None)
            if isinstance(found, ToolCallMatcher):
                return found
        return DEFAULT_MATCHER

    @property
    def failures(self) -> int:
        return sum(1 for r in self.runs.values() if r.failure)

    @property
    def error_types(self) -> list[str]:
        return sorted({r.error_type or "error" for r in self.runs.values() if r.failure})

    def position(self, case_id: str) -> int | None:
        """The position of ``case_id`` in the case order, None when the run has no such case."""
        return self._positions.get(case_id)

    def runs_of(self, case: int) -> list[RunEntry]:
        """Every run of the case at ``case``, agent by agent in the header's order, trial by trial."""
        order = {a: i for i, a in enumerate(self.agents)}
        found = [self.runs[k] for k in self._case_runs.get(case, ())]
        return sorted(found, key=lambda r: (order.get(r.agent, len(order)), r.agent, r.trial))

    def case_scores(self, metric: str, agent: str) -> np.ndarray:
        """One agent's score per case (case order) as the report counts it: trials reduced by the run's
        reducer, a failed run scoring 0 where the metric applies when the run's rule is ``failed_runs="zero"``."""
        key = (metric, agent)
        if key not in self._cache:
            settings = self.stats
            matrix = np.full((len(self.case_ids), max(self.trials, 1)), np.nan)
            zero = settings.failed_runs == "zero"
            for (a, case, trial), run in self.runs.items():
                if a != agent or trial >= matrix.shape[1]:
                    continue
                value = run.scores.get(metric, math.nan)
                if run.failure and zero and self._applies_to(case, metric):
                    value = 0.0
                matrix[case, trial] = value
            self._cache[key] = reduce_trials(matrix, settings.reducer)
        return self._cache[key]

    def case_failed(self, agent: str) -> np.ndarray:
        """Whether each case (case order) had a failed run of ``agent``: where its score is NaN, the
        run crashed rather than went unscored, which a diff counts as worse than any score."""
        key = ("\0failed", agent)  # beside the metrics' scores, under a name no metric has
        if key not in self._cache:
            failed = np.zeros(len(self.case_ids), dtype=bool)
            for (a, case, _), run in self.runs.items():
                if a == agent and run.failure and case < len(failed):
                    failed[case] = True
            self._cache[key] = failed
        return self._cache[key]

    def _applies_to(self, case: int, metric: str) -> bool:
        return case >= len(self._applies) or metric in self._applies[case]

    def counted(self, case: int, run: AgentRun, scores: dict[str, Score]) -> dict[str, Score]:
        """A run's stored scores as its run's statistics count them: under ``failed_runs="zero"`` a failed
        run scores 0 on each metric that applies to its case, and says so."""
        if not run.failure or self.stats.failed_runs != "zero":
            return dict(scores)
        out = dict(scores)
        for metric in self.metrics:
            if self._applies_to(case, metric):
                why = f"the run failed ({run.error_type or 'error'}): it counts as 0 where the metric applies"
                out[metric] = Score(0.0, explanation=why)
        return out

    def mean(self, metric: str, agent: str) -> float:
        """The agent's mean over cases on ``metric`` (NaN when no case is scored)."""
        values = self.case_scores(metric, agent)
        values = values[~np.isnan(values)]
        return float(values.mean()) if values.size else math.nan

    def detail(self, case: int) -> tuple[EvalCase, list[tuple[AgentRun, dict[str, Score]]]]:
        """The case at ``case`` and every run of it in full (response, calls, scores with explanations)."""
        raise NotImplementedError


class RecordIndex(RunIndex):
    """A ``runs.jsonl`` run record, read on from where the last read stopped as the journal grows."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._read_to = 0
        self._case_offsets: list[int] = []
        self._metric_objects: list[Metric] = []
        self._shared: dict[frozenset[str], frozenset[str]] = {}

    def _reset(self) -> None:
        fresh = RecordIndex(self.path)
        self.__dict__.update(fresh.__dict__)

    def refresh(self) -> bool:
        stamp = self._stat()
        if stamp is None:
            self.problem = f"{self.path}: no longer readable"
            return False
        if stamp == self.stamp:
            return False
        inode, size, _ = stamp
        if inode != self.stamp[0] or size < self._read_to:
            self._reset()  # replaced (a whole record written over the journal) or cut: read it again
        try:
            with self.path.open("rb") as f:
                f.seek(self._read_to)
                # Whole lines only: the part after the last newline is a line still being written.
                for piece in LineBlocks(f, _BLOCK, limit=size - self._read_to):
                    start = self._read_to
                    for line in piece.split(b"\n")[:-1]:
                        self._take(line, start)
                        start += len(line) + 1
                    self._read_to += len(piece)
        except OSError as exc:
            self.problem = f"{self.path}: cannot be read ({exc.strerror or exc})"
            return False
        self.stamp = stamp
        self._cache.clear()
        return True

    def _take(self, line: bytes, offset: int) -> None:
        if not line.strip():
            return
        try:
            data = json.loads(line)
        except ValueError:
            self.problem = f"{self.path}: an unreadable line at byte {offset} was skipped"
            return
        if not isinstance(data, dict):
            return
        kind = data.get("kind")
        if offset == 0:
            if kind == "header":
                self._header(data)
            else:
                self.problem = f"{self.path}: not a levelfield run record (no header line)"
        elif kind == "case":
            self._case(data.get("case"), offset)
        elif kind == "run":
            self._run(data, offset)

    def _header(self, header: dict[str, Any]) -> None:
        if header.get("format") != FORMAT or not isinstance(header.get("version"), int) or header["version"] > VERSION:
            self.problem = f"{self.path}: a run record of another format or a newer version ({header.get('version')!r})"
        self.kind = str(header.get("run_kind") or "evaluate")
        self.created = str(header.get("created_at") or "")
        self.status = str(header.get("status") or "running")
        self.dataset = str((header.get("dataset") or {}).get("source") or "")
        self.agents = [str(a) for a in header.get("agents") or []]
        specs = [s for s in header.get("metrics") or [] if isinstance(s, dict)]
        self.metrics = [str(s.get("name")) for s in specs]
        try:
            self._metric_objects = metrics_from_specs(specs)
        except Exception:  # noqa: BLE001 - unknown specs: every metric then counts as applying
            self._metric_objects = []
        self.settings = dict(header.get("settings") or {})
        self.evaluators = evaluators_from_header(header)
        """What gave each metric's scores, as the header keeps it; None for a record written before it did."""
        preflight = header.get("a2a_preflight")
        self.a2a_preflight: dict[str, Any] = dict(preflight) if isinstance(preflight, dict) else {}
        """Each A2A agent's conformance preflight, as the record's header keeps it."""
        try:
            self.trials = max(int((header.get("options") or {}).get("trials", 1)), 1)
        except (TypeError, ValueError):
            self.trials = 1

    def _case(self, case: Any, offset: int) -> None:
        if not isinstance(case, dict) or "case_id" not in case:
            return
        case_id = str(case["case_id"])
        prompt = case.get("prompt") or " ".join(str(t.get("prompt", "")) for t in case.get("turns") or [] if isinstance(t, dict))
        if case_id not in self._positions:
            self._positions[case_id] = len(self.case_ids)
            self.case_ids.append(case_id)
            self.case_prompts.append("")
            self._case_offsets.append(offset)
            self._applies.append(frozenset())
        i = self._positions[case_id]
        self.case_prompts[i] = str(prompt)[:SEARCH_CHARS]
        self._case_offsets[i] = offset
        shape = types.SimpleNamespace(**case)
        applies = frozenset(m.name for m in self._metric_objects if _applies(m, shape)) if self._metric_objects else frozenset(self.metrics)
        self._applies[i] = self._shared.setdefault(applies, applies)  # a few distinct sets among 100,000 cases

    def _run(self, data: dict[str, Any], offset: int) -> None:
        run = found if isinstance(found := data.get("run"), dict) else {}
        case_id = str(data.get("case_id", run.get("case_id", "")))
        case = self._positions.get(case_id)
        if case is None:
            return  # a run of a case the record does not hold: nothing to show it with
        agent = str(data.get("agent", run.get("agent_name", "")))
        if agent not in self.agents:
            self.agents.append(agent)
        try:
            trial = int(data.get("trial", run.get("trial", 0)))  # type: ignore[arg-type]  # a bad one: the except below
        except (TypeError, ValueError):
            trial = 0
        scores = {}
        for name, score in (data.get("scores") or {}).items():
            value = score.get("value") if isinstance(score, dict) else None
            scores[str(name)] = math.nan if not isinstance(value, (int, float)) else float(value)
        output = run.get("output") or run.get("partial_output") or {}
        response = output.get("response") if isinstance(output, dict) else None
        text = f"{str(response or '')[:SEARCH_CHARS]} {str(run.get('error') or '')[:SEARCH_CHARS]}".lower()
        key = (agent, case, trial)
        if key not in self.runs:
            self._case_runs.setdefault(case, []).append(key)
        self.runs[key] = RunEntry(
            agent=agent, case=case, trial=trial, failure=bool(run.get("failure")),
            error_type=run.get("error_type"), scores=scores, offset=offset, text=text,
        )

    def detail(self, case: int) -> tuple[EvalCase, list[tuple[AgentRun, dict[str, Score]]]]:
        case_line = self._line(self._case_offsets[case])
        found = EvalCase.model_validate(case_line["case"])
        runs = []
        for entry in self.runs_of(case):
            data = self._line(entry.offset)
            run_data = dict(data["run"])
            if run_data.get("latency_in_seconds") is None:
                run_data["latency_in_seconds"] = math.nan
            scores = {str(k): score_from_json(v) for k, v in (data.get("scores") or {}).items()}
            run = AgentRun.model_validate(run_data)
            if self._metric_objects:
                # The engine leaves out explanations it would compute for every row; this case's are made now.
                scores = explain_scores(context_for(found, run), self._metric_objects, scores)
            runs.append((run, scores))
        return found, runs

    def _line(self, offset: int) -> dict[str, Any]:
        try:
            with self.path.open("rb") as f:
                f.seek(offset)
                line = f.readline()
            return json.loads(line)
        except (OSError, ValueError) as exc:
            raise RecordError(f"{self.path}: the line at byte {offset} cannot be read back ({exc})") from None


def _applies(metric: Metric, case: Any) -> bool:
    try:
        return bool(metric.applies_to(case))
    except Exception:  # noqa: BLE001 - a metric's own rule failing on a raw case: count it as applying
        return True


class TableIndex(RunIndex):
    """A score table of saved predictions (``metrics_table.parquet`` or ``.jsonl``), one row per case."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, kind="saved predictions")
        self._rows: list[dict[str, Any]] = []

    def refresh(self) -> bool:
        stamp = self._stat()
        if stamp is None or stamp == self.stamp:
            return False
        import pandas as pd

        try:
            table = pd.read_parquet(self.path) if self.path.suffix == ".parquet" else pd.read_json(self.path, lines=True)
        except Exception as exc:  # noqa: BLE001 - a table being written, or damaged: say so on the page
            self.problem = f"{self.path}: cannot be read ({type(exc).__name__}: {exc})"
            return False
        summary = self.path.parent / "summary.json"
        self.stamp = stamp
        self.problem = None
        self.created = _mtime_iso(self.path)
        self.status = "complete" if summary.exists() else "running"
        self.dataset = str(self.path.parent)
        self.agents = ["saved"]
        self.metrics = [c[: -len("/score")] for c in table.columns if str(c).endswith("/score")]
        self.settings = {"failed_runs": "exclude"}  # as the batch scorer counts them (left out, NaN)
        self._rows = table.to_dict(orient="records")
        self.case_ids, self.case_prompts, self.runs, self._positions, self._case_runs = [], [], {}, {}, {}
        for i, row in enumerate(self._rows):
            case_id = str(row.get("case_id", i))
            self._positions.setdefault(case_id, i)
            self.case_ids.append(case_id)
            self.case_prompts.append(str(row.get("prompt") or "")[:SEARCH_CHARS])
            failure = bool(row.get("failure") or False)
            self._case_runs[i] = [("saved", i, 0)]
            self.runs[("saved", i, 0)] = RunEntry(
                agent="saved", case=i, trial=0, failure=failure, error_type="error" if failure else None,
                scores={m: _number(row.get(f"{m}/score")) for m in self.metrics},
                text=f"{str(row.get('response') or '')[:SEARCH_CHARS]} {str(row.get('error') or '')}".lower(),
            )
        self._cache.clear()
        return True

    def detail(self, case: int) -> tuple[EvalCase, list[tuple[AgentRun, dict[str, Score]]]]:
        from .._core.data.types import AgentOutput

        row = {k: v for k, v in self._rows[case].items() if not _missing(v)}
        fields = {k: _json_cell(row[k]) for k in ("prompt", "reference", "reference_trajectory") if k in row}
        found = EvalCase(case_id=self.case_ids[case], **fields)
        output = None
        if "response" in row or "predicted_trajectory" in row:
            output = AgentOutput(response=str(row.get("response") or ""),
                                 trajectory=_json_cell(row.get("predicted_trajectory")) or [])
        run = AgentRun(case_id=found.case_id, agent_name="saved", output=output,
                       failure=bool(row.get("failure") or False), error=row.get("error"),
                       latency_in_seconds=_number(row.get("latency_in_seconds")))
        scores = {m: Score(_number(row.get(f"{m}/score")), explanation=row.get(f"{m}/explanation")) for m in self.metrics}
        return found, [(run, scores)]


def _number(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _json_cell(value: Any) -> Any:
    """A table cell that holds JSON text (a trajectory in a CSV-like column) as the value it spells."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _mtime_iso(path: Path) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")
    except OSError:
        return ""


def find_runs(roots: Sequence[Path]) -> Iterator[tuple[Path, Path, type[RunIndex]]]:
    """Every run under ``roots``: (the root it was found under, its file, the index class that reads it).

    A folder holding ``runs.jsonl`` is a run record (its score tables are the same run); one holding
    only a score table of saved predictions is a table. A root may also be a ``runs.jsonl`` itself.
    """
    for root in roots:
        if root.is_file():
            yield root, root, RecordIndex if root.name == RUNS_FILE or root.suffix == ".jsonl" else TableIndex
            continue
        base = len(root.parts)
        real_root = root.resolve()
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP) if len(here.parts) - base < _MAX_DEPTH else []
            if RUNS_FILE in files:
                if _inside(here / RUNS_FILE, real_root):
                    yield root, here / RUNS_FILE, RecordIndex
                continue
            table = next((t for t in TABLE_FILES if t in files), None)
            if table and "summary.json" in files and all(_inside(here / f, real_root) for f in (table, "summary.json")):
                yield root, here / table, TableIndex


def _inside(path: Path, real_root: Path) -> bool:
    """Whether ``path``'s real file is under the served folder: a symlink out of it is not served (as
    ``os.walk`` does not follow symlinked folders, a symlinked file must not reach outside either)."""
    try:
        return path.resolve().is_relative_to(real_root)
    except (OSError, RuntimeError):  # a broken or looping link
        return False
