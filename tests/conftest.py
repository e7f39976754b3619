"""Fixtures shared by several test modules."""

from __future__ import annotations


import pytest

from levelfield.core.results.record import Journal


@pytest.fixture
def unwritable_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run line of a journal fails to write (a full disk), after its header and cases."""

    class FullDisk:
        """The journal's file, once the disk is full: its header and case lines fit, no run line does."""

        def __init__(self, handle):
            self._handle = handle
            self.closed = False

        def write(self, text):
            if '"kind":"run"' in text:
                raise OSError(28, "No space left on device")
            return self._handle.write(text)

        def flush(self):
            self._handle.flush()

        def close(self):
            self.closed = True
            self._handle.close()

    opened = Journal.__init__

    def init(self, path, handle, fingerprints):
        opened(self, path, FullDisk(handle), fingerprints)

    monkeypatch.setattr(Journal, "__init__", init)
