"""Whole lines of a file read a block at a time: the one reader of JSON Lines in blocks (the view's
index of a growing run record, the batches of saved predictions)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["LineBlocks"]


class LineBlocks:
    """The bytes of ``f`` from where it stands, read ``chunk`` bytes at a time (at most ``limit`` in
    all, else to the end of the file), yielded in pieces that each end at a newline: whole lines, their
    newlines included. What follows the last newline read (a line still being written, or a last line
    without one) is not yielded; it is :attr:`rest` once the pieces are read."""

    def __init__(self, f: BinaryIO, chunk: int, *, limit: int | None = None) -> None:
        self._file, self._chunk, self._limit = f, max(1, chunk), limit
        self.rest = b""

    def __iter__(self) -> Iterator[bytes]:
        left = self._limit
        while left is None or left > 0:
            block = self._file.read(self._chunk if left is None else min(self._chunk, left))
            if not block:
                break
            if left is not None:
                left -= len(block)
            data = self.rest + block
            cut = data.rfind(b"\n")
            if cut < 0:
                self.rest = data
                continue
            self.rest = data[cut + 1:]
            yield data[: cut + 1]
