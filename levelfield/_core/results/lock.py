"""One writer per out folder: an OS file lock beside the journal, held while a process writes it.

Two processes resuming one journal at once would each read the same missing runs and run them
all: the journal ends consistent, the bill doubles. So the writer of ``out/runs.jsonl`` holds
``out/runs.jsonl.lock`` (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows) from before it
reads the journal until its results are saved; the file names the holder (PID, host, start time,
command). A second writer is refused at once with that name and what to do. The OS drops the
lock when the holder's process ends, however it ends (``kill -9`` included), so a crash never
leaves a folder locked; the file itself is removed on a clean release and rewritten by the next
holder otherwise.

Within one evaluation the lock is taken once (:func:`holding` is re-entrant in one task's
context); two evaluations of one process on one folder (two threads) are two writers, refused too.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import RecordError
from .writing import writing

__all__ = ["OutLock", "holding", "LOCK_FILE", "FolderInUseError"]

LOCK_FILE = "runs.jsonl.lock"
"""The lock file's name, beside ``runs.jsonl``."""

_WINDOWS_BYTE = 1 << 20  # msvcrt locks a byte range; one far past the holder's note, so the note stays readable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt
except ImportError:
    msvcrt = None  # type: ignore[assignment]


class FolderInUseError(RecordError):
    """Another process (or evaluation) is writing this out folder's journal."""

    __module__ = "levelfield"  # its public home, in tracebacks (raised before ``lf.FolderInUseError`` is named)


_held: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("levelfield_out_locks", default=())


class OutLock:
    """The lock of one out folder, held by this process. :meth:`acquire` it, :meth:`release` it."""

    def __init__(self, folder: Path, handle: IO[str], made_folder: bool = False) -> None:
        self.folder = folder
        self.path = folder / LOCK_FILE
        self._f = handle
        self._made_folder = made_folder

    @classmethod
    def acquire(cls, folder: str | os.PathLike[str]) -> OutLock:
        """Hold ``folder``'s lock (creating the folder), or raise :class:`FolderInUseError` naming the holder."""
        folder = Path(folder)
        made_folder = not folder.exists()
        # A folder that cannot be made (under a file, read-only) is the journal's error, said as the journal says it.
        with writing(folder / LOCK_FILE.removesuffix(".lock"), "cannot write the journal"):
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / LOCK_FILE
        for _ in range(10):  # the holder may remove the file between our open and our lock: open it again
            with writing(path, "cannot lock the out folder"):
                handle = open(path, "a+", encoding="utf-8")
            try:
                if not _try_lock(handle):
                    holder = _read_note(handle)
                    raise FolderInUseError(_refusal(folder, holder))
                try:
                    same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # we locked a file its last holder had removed: not the folder's lock
                    _unlock(handle)
                    handle.close()
                    continue
                _write_note(handle)
                return cls(folder, handle, made_folder)
            except BaseException:
                if not handle.closed:
                    handle.close()
                raise
        raise FolderInUseError(f"{folder}: could not take the lock {path} (it kept being replaced); try again")

    def release(self) -> None:
        """Let the folder go: the note is removed, then the lock dropped (never the other way round,
        so no one can lock a file that is about to be removed)."""
        if self._f.closed:
            return
        with contextlib.suppress(OSError):
            os.remove(self.path)
        with contextlib.suppress(OSError):
            _unlock(self._f)
        self._f.close()
        if self._made_folder:  # an evaluation refused before writing anything leaves no empty folder behind
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # only if empty

    def __repr__(self) -> str:
        return f"OutLock({str(self.folder)!r})"


@contextlib.contextmanager
def holding(folder: str | os.PathLike[str] | None) -> Iterator[OutLock | None]:
    """Hold ``folder``'s lock for the block (nothing for None, or a ``folder`` that is a file: the
    caller's checks refuse that with their own error). Re-entrant within one evaluation."""
    if folder is None:
        yield None
        return
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        yield None
        return
    key = str(folder.resolve())
    if key in _held.get():
        yield None
        return
    lock = OutLock.acquire(folder)
    token = _held.set(_held.get() + (key,))
    try:
        yield lock
    finally:
        _held.reset(token)
        lock.release()


def held_here(folder: str | os.PathLike[str]) -> bool:
    """Whether this evaluation already holds ``folder``'s lock."""
    return str(Path(folder).resolve()) in _held.get()


def _try_lock(handle: IO[str]) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):
            return False
        return True
    if msvcrt is not None:  # pragma: no cover - Windows
        handle.seek(_WINDOWS_BYTE)
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    raise RecordError(  # pragma: no cover - a platform with neither
        f"this platform ({sys.platform}) offers no file locks (fcntl or msvcrt): levelfield cannot make sure "
        "only one process writes a journal; run without out=... or on Linux, macOS or Windows"
    )


def _unlock(handle: IO[str]) -> None:
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    elif msvcrt is not None:  # pragma: no cover - Windows
        handle.seek(_WINDOWS_BYTE)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)


def _write_note(handle: IO[str]) -> None:
    note = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(sys.argv)[:300],
    }
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(note) + "\n")
    handle.flush()


def _read_note(handle: IO[str]) -> dict[str, Any]:
    try:
        handle.seek(0)
        note = json.loads(handle.readline() or "{}")
    except (OSError, ValueError):
        return {}
    return note if isinstance(note, dict) else {}


def _refusal(folder: Path, holder: dict[str, Any]) -> str:
    pid = holder.get("pid", "unknown")
    where = f" on {holder['host']}" if holder.get("host") and holder.get("host") != socket.gethostname() else ""
    started = holder.get("started", "an unknown time")
    command = f" ({holder['command']})" if holder.get("command") else ""
    mine = " (this process: another evaluation in it)" if pid == os.getpid() and not where else ""
    return (
        f"{folder} is being written by another levelfield run: PID {pid}{where}{mine}, started {started}{command}. "
        "A second writer would run the same missing runs again and pay for them twice. Wait for it to finish "
        f"(or stop it), then run again with resume=True (--resume) to finish what it left; or give another out "
        f"folder. The lock ({LOCK_FILE}) is the OS's: it goes away when that process ends, however it ends"
    )
