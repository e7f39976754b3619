"""Writing a run's files: whole files or none, and one clear error naming the path and the cause.

A full disk or a folder that cannot be written is a :class:`~levelfield._core.errors.WriteError`
(a ``RecordError`` and an ``OSError``) naming the file, never a raw ``OSError`` traceback; a file
replaced by :func:`replacing` is either the old one or the whole new one, never cut short.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import WriteError

__all__ = ["writing", "replacing", "write_text"]


@contextlib.contextmanager
def writing(path: str | Path, what: str = "cannot write") -> Iterator[None]:
    """Turn an ``OSError`` raised in the block into a :class:`WriteError` naming ``path``."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(path, exc, what) from exc


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to, renamed over ``path`` when the block succeeds.

    A failure (a full disk mid-write) leaves the old file as it was and no temporary file behind.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield tmp
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically (see :func:`replacing`)."""
    path = Path(path)
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
