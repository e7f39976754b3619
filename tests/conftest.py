"""Fixtures shared by several test modules."""

from __future__ import annotations

import io

import pytest

from levelfield.core.results.record import Journal


@pytest.fixture
def unwritable_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run line of a journal fails to write (a full disk), after its header and cases."""

    class FullDisk(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    opened = Journal.__init__

    def init(self, path, handle, fingerprints):
        handle.close()  # header and cases are written; every run line after them fails
        opened(self, path, FullDisk(), fingerprints)

    monkeypatch.setattr(Journal, "__init__", init)
