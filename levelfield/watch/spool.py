"""The spool: every accepted OTLP request, on disk before it is acknowledged, until its traces are journaled.

Requests are appended to segment files (``spool/seg-<n>-<created ms>.bin``) as length-prefixed,
checksummed frames. Requests that arrive together share one write (and one ``fsync``), so a burst
costs one disk flush per batch rather than per request. Each segment keeps the set of trace ids
it still holds spans of; when the watcher has journaled (or dropped) a trace it releases it, and a
sealed segment that holds nothing more is deleted. After a crash the surviving segments are
replayed in order; a frame cut short by the crash (never acknowledged) is ignored.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .._core.errors import WriteError

__all__ = ["Spool", "Frame", "PROTOBUF", "JSON"]

PROTOBUF, JSON = 0, 1
"""Frame kinds: how the request body was encoded."""

_HEADER = struct.Struct("<IIB")  # body length, CRC-32 of the body, kind


@dataclass(frozen=True)
class Frame:
    """One spooled request read back."""

    segment: int
    kind: int
    body: bytes


@dataclass
class _Segment:
    number: int
    path: Path
    created: float
    holds: set[str] = field(default_factory=set)
    sealed: bool = False
    size: int = 0


class Spool:
    """Segment files of accepted requests; see the module docs. Used from one event loop."""

    def __init__(self, folder: Path, *, fsync: bool = True, segment_bytes: int = 32 << 20, segment_seconds: float = 60.0):
        self.folder = Path(folder)
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self.segment_seconds = segment_seconds
        self._segments: dict[int, _Segment] = {}
        self._where: dict[str, set[int]] = {}  # trace id -> segments holding its spans
        self._current: _Segment | None = None
        self._handle: BinaryIO | None = None
        self._flushing: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references
        self._pending: list[tuple[bytes, Iterable[str], asyncio.Future[int]]] = []
        self._lock: asyncio.Lock | None = None
        self._next = 1

    # -- reading back what a previous process left -----------------------------------------------

    def open(self) -> list[Path]:
        """Take stock of the segments on disk (oldest first); they are sealed, to be replayed."""
        self.folder.mkdir(parents=True, exist_ok=True)
        found = []
        for path in self.folder.glob("seg-*.bin"):
            try:
                _, number_text, created_ms = path.stem.split("-")
                found.append((int(number_text), int(created_ms) / 1000, path))
            except ValueError:
                continue  # not ours
        for number, created, path in sorted(found):
            self._segments[number] = _Segment(number, path, created, sealed=True, size=path.stat().st_size)
            self._next = max(self._next, number + 1)
        return [s.path for s in self._segments.values()]

    def oldest(self) -> float | None:
        """When the oldest segment still on disk was created (seconds since the epoch), or None."""
        return min((s.created for s in self._segments.values()), default=None)

    def replay(self) -> Iterator[Frame]:
        """Every whole frame of the sealed segments, oldest first; a torn last frame ends its segment."""
        for seg in sorted(self._segments.values(), key=lambda s: s.number):
            if not seg.sealed:
                continue
            data = seg.path.read_bytes()
            at = 0
            while at + _HEADER.size <= len(data):
                length, crc, kind = _HEADER.unpack_from(data, at)
                body = data[at + _HEADER.size: at + _HEADER.size + length]
                if len(body) < length or zlib.crc32(body) != crc:
                    break  # cut short by a crash: never acknowledged
                yield Frame(seg.number, kind, body)
                at += _HEADER.size + length

    def hold(self, segment: int, trace_ids: Iterable[str]) -> None:
        """Mark ``segment`` as holding spans of ``trace_ids`` (until :meth:`release`)."""
        seg = self._segments.get(segment)
        if seg is None:
            return
        for tid in trace_ids:
            seg.holds.add(tid)
            self._where.setdefault(tid, set()).add(segment)

    def release(self, trace_ids: Iterable[str]) -> None:
        """The traces are journaled (or dropped): their spans need not be kept; empty sealed segments go."""
        emptied = set()
        for tid in trace_ids:
            for number in self._where.pop(tid, ()):
                seg = self._segments.get(number)
                if seg is not None:
                    seg.holds.discard(tid)
                    if not seg.holds:
                        emptied.add(number)
        for number in emptied:
            self._drop_if_done(self._segments[number])

    def settle(self) -> None:
        """Delete the sealed segments that hold nothing (after a replay that found every trace journaled)."""
        for seg in list(self._segments.values()):
            self._drop_if_done(seg)

    def _drop_if_done(self, seg: _Segment) -> None:
        if seg.sealed and not seg.holds:
            seg.path.unlink(missing_ok=True)
            self._segments.pop(seg.number, None)

    @property
    def segments(self) -> int:
        return len(self._segments)

    # -- appending ---------------------------------------------------------------------------------

    async def append(self, kind: int, body: bytes, trace_ids: Iterable[str]) -> int:
        """Write one request durably and return its segment; the traces are held there from now on."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        self._pending.append((_HEADER.pack(len(body), zlib.crc32(body), kind) + body, list(trace_ids), done))
        if len(self._pending) == 1:
            self._start_flush(loop)
        return await done

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._flush())
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def drain(self) -> None:
        """Wait until every request appended so far is written (before :meth:`close`)."""
        while self._flushing:
            await asyncio.gather(*self._flushing, return_exceptions=True)

    async def _flush(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one write and fsync at a time; requests arriving meanwhile form the next batch
            batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                seg, handle = self._writable()
                data = b"".join(frame for frame, _, _ in batch)
                for _, ids, _ in batch:  # before any await: the segment must not be sealed and dropped as empty
                    self.hold(seg.number, ids)
                handle.write(data)
                handle.flush()
                if self.fsync:
                    await asyncio.to_thread(os.fsync, handle.fileno())
                seg.size += len(data)
            except OSError as exc:
                error = WriteError(self._current.path if self._current else self.folder, exc, "cannot write the spool")
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(error)
                return
            for _, _, done in batch:
                if not done.done():
                    done.set_result(seg.number)
        if self._pending:  # arrived while this batch was being written
            self._start_flush(asyncio.get_running_loop())

    def _writable(self) -> tuple[_Segment, BinaryIO]:
        """The segment written now and its open file (a new one when the last is full or old)."""
        seg = self._current
        if seg is not None and (seg.size >= self.segment_bytes or time.time() - seg.created >= self.segment_seconds):
            self._seal()
            seg = None
        if seg is None:
            created = time.time()
            number = self._next
            self._next += 1
            path = self.folder / f"seg-{number:08d}-{int(created * 1000)}.bin"
            self._handle = path.open("ab")
            seg = self._current = self._segments[number] = _Segment(number, path, created)
        assert self._handle is not None  # open while there is a current segment
        return seg, self._handle

    def _seal(self) -> None:
        seg, self._current = self._current, None
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if seg is not None:
            seg.sealed = True
            self._drop_if_done(seg)

    def rotate_if_old(self) -> None:
        """Seal the current segment once it is old enough, so its space can be reclaimed when released."""
        seg = self._current
        busy = bool(self._pending) or (self._lock is not None and self._lock.locked())
        if seg is not None and not busy and time.time() - seg.created >= self.segment_seconds:
            self._seal()

    def close(self) -> None:
        """Seal the current segment (deleted when it holds nothing). Writes still in flight are
        cancelled: :meth:`drain` first to let them finish."""
        for task in list(self._flushing):
            task.cancel()
        self._seal()
