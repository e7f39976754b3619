"""The journal: appends each run to the run record as it finishes, durably, so a killed process loses only the runs in flight.

The record's format and its reader are :mod:`levelfield._core.results.record`; this is its one
incremental writer (a new record, a resumed one, or one that grows by cases, like a watch window).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..data.dataset import EvalCase
from ..data.jsonsafe import dumps
from ..data.types import AgentRun
from ..errors import RecordError, WriteError
from ..score.metrics.base import Score
from .fingerprints import case_fingerprint
from .lock import OutLock
from .record import Record, RunKey, _case_line, _parse_line, _run_line
from .writing import writing

if TYPE_CHECKING:
    from .table_ahead import TableAhead

__all__ = ["Journal"]


_CASES_A_TURN = 200  # case lines a new journal writes per turn of the event loop (~1 ms)
_ACK_WAIT = 0.002  # seconds the journal's thread waits for the loop to collect acknowledgements before waking it


_Line = tuple[Callable[..., str], tuple[Any, ...]]
"""A line not serialised yet: the function that makes it and its arguments (serialised by whoever writes it)."""


class Journal:
    """Appends each finished run to ``runs.jsonl`` and makes it durable, so a killed process loses
    only the runs in flight. Open it with :meth:`create` (a new record) or :meth:`reopen` (resume).

    Inside an event loop the lines are serialised, written and fsynced by the journal's own thread
    (write-behind), so the loop only hands the finished runs over; a run is acknowledged (its
    future done) only once an ``fsync`` made its line durable.

    A line that cannot be written (a full disk) fails the runs waiting for it with a
    :class:`WriteError` naming the file and the cause; it never leaves them waiting."""

    def __init__(self, path: Path, handle: IO[str], fingerprints: Mapping[str, str]) -> None:
        self.path = path
        self._f = handle
        self._fingerprints = dict(fingerprints)
        self._cases: collections.deque[EvalCase] = collections.deque()  # case lines not written yet
        self._pending: list[_Line] = []  # lines queued in this turn of the loop, not handed over yet
        self._flushed: asyncio.Future[None] | None = None  # what the pending lines' runs wait for
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
        self._io = threading.Lock()  # the file: the loop's case lines and the writer thread's lines
        self._writer: _WriteBehind | None = None
        self.lock: OutLock | None = None
        """The folder's writer lock when the journal holds it (released by :meth:`close`), else None."""
        self.ahead: TableAhead | None = None
        """What makes the metrics table's rows of the runs written, while they run (see :mod:`.table_ahead`),
        when asked for: each run written is given to it, and the journal's thread makes their rows after
        each batch it made durable (whatever is left, its ``made()`` makes)."""

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
        loop = _running_loop()
        if loop is None:
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
        with self._io:
            self._f.flush()
            self._pos = self._f.tell()
            self.offsets = array("q")

    def _put(self, lines: Sequence[str]) -> None:
        """Write whole lines (each without its newline) and flush them, noting where the run lines
        start when tracked. Holds the file (``_io``): the caller's thread may be the loop's or the writer's."""
        if not lines:
            return
        with self._io:
            if self.offsets is not None:
                pos, offsets = self._pos, self.offsets
                for line in lines:
                    if line.startswith('{"kind":"run"'):
                        offsets.append(pos)
                    pos += (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1
                self._pos = pos
            self._f.write("\n".join(lines) + "\n")
            self._f.flush()

    def _take(self) -> list[_Line]:
        """The lines not handed over yet, in order: the case lines left, then what was queued."""
        cases, self._cases = self._cases, collections.deque()
        lines: list[_Line] = [(_case_line, (c, self._fingerprints[c.case_id])) for c in cases]
        lines += self._pending
        self._pending = []
        return lines

    def _write_some_cases(self) -> None:
        """Write the next case lines, and ask the loop to come back for the rest (until the first
        runs are handed to the writer thread, which takes the rest with them)."""
        if not self._cases or self._failed is not None or self._f.closed:
            return
        batch = [self._cases.popleft() for _ in range(min(_CASES_A_TURN, len(self._cases)))]
        try:
            self._put([_case_line(c, self._fingerprints[c.case_id]) for c in batch])
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
        self._pending.append((_case_line, (case, fingerprint)))

    def write(self, run: AgentRun, scores: Mapping[str, Score] | None = None) -> asyncio.Future[None] | None:
        """Append one finished run (and its scores so far); ``run`` and ``scores`` are not changed after.

        Inside an event loop the run is handed to the journal's thread once the loop has run what is
        ready (runs that finish together share one hand-over, one write and one ``fsync``), or at
        :meth:`hand_over`; that thread serialises, writes and fsyncs while the loop goes on. The
        future returned is done once the line is durable, so a caller can wait for its run to be on
        disk. Outside a loop it is written and made durable at once (None).
        """
        self._pending.append((_run_line, (run, scores, self._fingerprints.get(run.case_id))))
        self.written += 1
        if self.ahead is not None:
            self.ahead.add(run, scores)
        if self._flushed is not None:
            return self._flushed
        loop = _running_loop()
        if loop is None:
            self.flush()
            self._sync()
            return None
        if self._writer is None:
            self._writer = _WriteBehind(self, loop)
        self._flushed = loop.create_future()
        loop.call_soon(self.hand_over)
        return self._flushed

    def hand_over(self) -> None:
        """Hand the runs written so far to the journal's thread now, rather than at the end of the
        loop's turn (a caller that wrote every run that finished together)."""
        flushed, self._flushed = self._flushed, None
        if flushed is None and not self._pending:
            return
        lines = self._take()
        if self._writer is None:  # lines queued without a loop (write_case): written at once
            self._pending = lines
            self.flush()
            return
        self._writer.submit(lines, flushed)

    def flush(self) -> None:
        """Write and flush every pending line now (after what the journal's thread holds). A failure
        is raised here unless the runs waiting for those lines were told of it."""
        if self._writer is not None:
            self.hand_over()
            self._writer.wait_written()
            unreported, self._unreported = self._unreported, None
            if unreported is not None:
                raise unreported
            return
        try:
            if self._failed is not None:
                raise self._failed
            if (self._cases or self._pending) and not self._f.closed:
                self._put([make(*args) for make, args in self._take()])
        except Exception as exc:  # a full disk, or a line that cannot be encoded: loud, never a hang
            self._failed = self._failed or _journal_error(self.path, exc)
            self._unreported = None
            raise self._failed from exc

    def _sync(self) -> None:
        """Make what was written durable (``fsync``): a run is acknowledged only once it survives a crash."""
        if self.durable and not self._f.closed:
            os.fsync(self._f.fileno())

    def _fail(self, exc: BaseException) -> RecordError:
        self._failed = self._failed or _journal_error(self.path, exc)  # type: ignore[arg-type]
        return self._failed

    def close(self) -> None:
        """Write what is pending and close the file; after a failed write, just close it (raising
        the failure if no run was told of it: case lines that could not be written, no run since)."""
        if self._f.closed:
            return
        try:
            if self._writer is not None:
                self.hand_over()
                self._writer.stop()  # every line handed over is written and durable, or failed
            if self._failed is None:
                self.flush()
                if self._writer is None:  # else its last fsync made every line durable
                    self._sync()
        except OSError as exc:
            self._failed = _journal_error(self.path, exc)
            raise self._failed from exc
        finally:
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


class _WriteBehind:
    """A journal's own thread: takes the lines the loop hands over, serialises them, writes them and
    makes them durable, then tells the loop which runs are on disk.

    One ``fsync`` at a time: what is handed over while one is under way is written after it and made
    durable by the next, together (a group commit). Serialising here keeps the JSON of each run off
    the event loop, whose turns hand the next calls to the agents' threads. The loop collects the
    acknowledgements when it next hands lines over; only when it hands none over within
    ``_ACK_WAIT`` is it woken for them (a wake-up per fsync would cost the loop a turn each)."""

    def __init__(self, journal: Journal, loop: asyncio.AbstractEventLoop) -> None:
        self._journal = journal
        self._loop = loop
        self._ready = threading.Condition()
        self._queue: list[tuple[list[_Line], asyncio.Future[None] | None]] = []
        self._durable: list[tuple[list[asyncio.Future[None]], BaseException | None]] = []  # not acknowledged yet
        self._handed = 0  # hand-overs so far
        self._written = 0  # hand-overs written (or failed) so far
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="levelfield-journal", daemon=True)
        self._thread.start()

    def submit(self, lines: list[_Line], flushed: asyncio.Future[None] | None) -> None:
        """On the loop: hand ``lines`` over (``flushed`` is done once they are durable), and acknowledge
        the runs made durable since the last hand-over."""
        with self._ready:
            self._queue.append((lines, flushed))
            self._handed += 1
            durable, self._durable = self._durable, []
            self._ready.notify_all()
        for waiting, failed in durable:
            _acknowledge(waiting, failed)

    def wait_written(self) -> None:
        """Until every hand-over so far is written (not necessarily durable yet)."""
        with self._ready:
            target = self._handed
            self._ready.wait_for(lambda: self._written >= target or not self._thread.is_alive())

    def stop(self) -> None:
        """Write what is handed over, make it durable, and end the thread."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                if self._durable and not self._queue and not self._stopping:
                    # The loop's next hand-over collects these; if none comes soon, wake the loop.
                    self._ready.wait_for(lambda: bool(self._queue) or self._stopping, timeout=_ACK_WAIT)
                late: list[tuple[list[asyncio.Future[None]], BaseException | None]] = []
                if not self._queue:  # no hand-over on its way to collect them
                    late, self._durable = self._durable, []
            for waiting, failed in late:
                try:
                    self._loop.call_soon_threadsafe(_acknowledge, waiting, failed)
                except RuntimeError:  # the loop is closed: no one is waiting any more
                    pass
            with self._ready:
                while not self._queue and not self._stopping:
                    self._ready.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
            waiting, failed = self._write(batch)
            if waiting:
                with self._ready:
                    self._durable.append((waiting, failed))
            ahead = self._journal.ahead
            if ahead is not None:
                # The tables' rows of the runs written, now that their lines are durable: this thread
                # holds the interpreter once a batch anyway. Their acknowledgements wait as before, for
                # the loop's next hand-over (or, with none, go out after these rows); a batch handed over
                # meanwhile is written once the rows are made (~20 us a run).
                ahead.make_waiting()

    def _write(self, batch: list[tuple[list[_Line], asyncio.Future[None] | None]]
               ) -> tuple[list[asyncio.Future[None]], BaseException | None]:
        """Serialise, write and fsync ``batch``; the futures waiting for it, and its failure if any."""
        journal = self._journal
        waiting = [flushed for _, flushed in batch if flushed is not None]
        before = failed = journal._failed
        if failed is None:
            try:
                journal._put([make(*args) for lines, _ in batch for make, args in lines])
            except Exception as exc:  # noqa: BLE001 - a full disk, a line that cannot be encoded: the runs hear it
                failed = journal._fail(exc)
        with self._ready:
            self._written += len(batch)
            self._ready.notify_all()
        if failed is None and journal.durable:
            try:
                os.fsync(journal._f.fileno())
            except Exception as exc:  # noqa: BLE001 - likewise
                failed = journal._fail(exc)
        if failed is not None:
            if waiting:
                journal._unreported = None  # the runs waiting are told
            elif before is None:
                journal._unreported = journal._failed  # no run to tell: close() raises it
        return waiting, failed


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """This thread's running event loop, or None. Asked outside an ``except RuntimeError`` block: a write
    made inside one would carry that RuntimeError as the context of any error it raised (a full disk
    then read "During handling of ... no running event loop")."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _acknowledge(waiting: Sequence[asyncio.Future[None]], failed: BaseException | None) -> None:
    """On the loop: the runs whose lines are durable (or failed) hear it."""
    for flushed in waiting:
        if flushed.done():
            continue
        if failed is None:
            flushed.set_result(None)
        else:
            flushed.set_exception(failed)


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
