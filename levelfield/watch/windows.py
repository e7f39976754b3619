"""Scored traces journaled in time windows: ``out/windows/<start>.jsonl``, each one run record.

A trace belongs to the window of the time it ended (its event time), so traces replayed after a
restart land where they belong. Each window file is the run record every levelfield command reads
(:mod:`levelfield._core.results.record`): a header (``run_kind: "watch"``, the window's start and
end in ``settings``), then per trace a case line (what was asked, what the agent answered) and a
run line (the run and its scores), flushed as they are written, so ``lf.EvalResult.load`` reads any
window, even one still being written. Which traces are journaled is read back from these files
on restart, so a trace is never scored twice.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._core.data.dataset import EvalCase
from .._core.data.types import AgentRun
from .._core.results.journal import Journal
from .._core.results.record import make_header
from .._core.results.saved_run import SAVED_AGENT
from .._core.score.metrics.base import Metric, Score

__all__ = ["Windows", "window_files", "window_name", "journaled_ids", "WINDOWS_DIR"]

WINDOWS_DIR = "windows"
_STAMP = "%Y%m%dT%H%M%SZ"
_RUN_ID = re.compile(rb'^\{"kind":"run","agent":"(?:[^"\\]|\\.)*","case_id":"((?:[^"\\]|\\.)*)"')


def window_name(start: float) -> str:
    """The file name of the window starting at ``start`` (seconds since the epoch, UTC)."""
    return _dt.datetime.fromtimestamp(start, _dt.timezone.utc).strftime(_STAMP) + ".jsonl"


def window_start(name: str) -> float:
    """The start (seconds since the epoch) of a window file's name."""
    stamp = _dt.datetime.strptime(Path(name).stem, _STAMP).replace(tzinfo=_dt.timezone.utc)
    return stamp.timestamp()


def window_files(out: Path) -> list[Path]:
    """The window files of a watch folder, oldest window first."""
    folder = Path(out) / WINDOWS_DIR
    found = []
    for path in folder.glob("*.jsonl") if folder.is_dir() else ():
        try:
            found.append((window_start(path.name), path))
        except ValueError:
            continue
    return [p for _, p in sorted(found)]


def journaled_ids(out: Path, since: float) -> set[str]:
    """The trace ids journaled in windows written to at or after ``since`` (seconds since the epoch).

    Only run lines are read, by their fixed opening, so a day of windows is read in moments.
    """
    import json

    ids: set[str] = set()
    for path in window_files(out):
        if path.stat().st_mtime < since:
            continue
        with path.open("rb") as f:
            for line in f:
                match = _RUN_ID.match(line)
                if match:
                    ids.add(json.loads(b'"' + match.group(1) + b'"'))
    return ids


class _Window:
    def __init__(self, start: float, journal: Journal) -> None:
        self.start = start
        self.journal = journal
        self.last_write = time.time()


class Windows:
    """The open window files of one watch folder; see the module docs. Used from one thread."""

    def __init__(self, out: Path, metrics: Sequence[Metric], seconds: float, options: Mapping[str, Any]) -> None:
        self.folder = Path(out) / WINDOWS_DIR
        self.metrics = list(metrics)
        self.seconds = float(seconds)
        self.options = dict(options)
        self._open: dict[float, _Window] = {}

    def start_of(self, at: float) -> float:
        """The start of the window holding time ``at``."""
        return math.floor(at / self.seconds) * self.seconds

    def path_of(self, start: float) -> Path:
        return self.folder / window_name(start)

    def _window(self, start: float) -> _Window:
        window = self._open.get(start)
        if window is not None:
            return window
        path = self.path_of(start)
        journal = None
        if path.exists() and path.stat().st_size > 0:
            journal = Journal.append_to(path)
            if path.stat().st_size == 0:  # only a torn header was there: start the record again
                journal.close()
                journal = None
        if journal is None:
            journal = Journal.create(path, self._header(start), [], {})
        window = self._open[start] = _Window(start, journal)
        return window

    def _header(self, start: float) -> dict[str, Any]:
        iso = lambda t: _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="seconds")  # noqa: E731
        return make_header(
            source="levelfield watch", fingerprints={}, agents=[SAVED_AGENT], metrics=self.metrics,
            options=self.options, kind="watch",
            settings={"scored_saved_predictions": True,
                      "window": {"start": iso(start), "end": iso(start + self.seconds), "seconds": self.seconds}},
        )

    def write(self, entries: Iterable[tuple[EvalCase, AgentRun, Mapping[str, Score], float]]) -> set[float]:
        """Journal scored traces (case, run, scores, event time) and flush them; returns the windows written."""
        touched: dict[float, _Window] = {}
        for case, run, scores, at in entries:
            window = self._window(self.start_of(at))
            window.journal.write_case(case)
            window.journal.write(run, scores)
            touched[window.start] = window
        now = time.time()
        for window in touched.values():
            window.journal.flush()
            window.last_write = now
        return set(touched)

    def last_write(self, start: float) -> float | None:
        window = self._open.get(start)
        return window.last_write if window is not None else None

    def close_idle(self, idle: float) -> None:
        """Close the files of windows not written for ``idle`` seconds (reopened if a late trace comes)."""
        now = time.time()
        for start, window in list(self._open.items()):
            if now - window.last_write >= idle:
                window.journal.close()
                del self._open[start]

    def close(self) -> None:
        for window in self._open.values():
            window.journal.close()
        self._open.clear()
