"""The journal: appends each run to the run record as it finishes, durably, so a killed process loses only the runs in flight.

The record's format and its reader are :mod:`levelfield._core.results.record`; this is its one
incremental writer (a new record, a resumed one, or one that grows by cases, like a watch window).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps
from ..data.types import AgentRun
from ..errors import RecordError, WriteError
from ..score.metrics.base import Score
from .fingerprints import case_fingerprint
from .lock import OutLock
from .record import Record, RunKey, _case_line, _parse_line, _run_line
from .writing import writing

__all__ = ["Journal"]


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
