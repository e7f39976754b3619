"""LineBlocks, the one reader of whole lines a block at a time (the view's index of a growing record,
saved predictions read in batches): whatever the block size, the pieces are whole lines and, with the
rest, exactly the bytes read."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from levelfield._core.data.lines import LineBlocks

TEXT = st.binary(max_size=300).map(lambda b: b.replace(b"\r", b"\n")) | st.lists(
    st.sampled_from([b"{}", b'{"a": 1}', b"", b"  "]), max_size=20).map(lambda lines: b"\n".join(lines))


@given(TEXT, st.integers(1, 64), st.none() | st.integers(0, 400))
def test_pieces_are_whole_lines_and_with_the_rest_every_byte_read(data, chunk, limit):
    blocks = LineBlocks(io.BytesIO(data), chunk, limit=limit)
    pieces = list(blocks)
    read = data if limit is None else data[:limit]
    assert b"".join(pieces) + blocks.rest == read
    assert all(piece.endswith(b"\n") for piece in pieces)
    assert b"\n" not in blocks.rest


def test_reading_starts_where_the_file_stands_and_a_line_being_written_waits():
    f = io.BytesIO(b'{"a": 1}\n{"b": 2}\n{"c": 3')
    f.seek(9)
    blocks = LineBlocks(f, 4)
    assert list(blocks) == [b'{"b": 2}\n'] and blocks.rest == b'{"c": 3'
