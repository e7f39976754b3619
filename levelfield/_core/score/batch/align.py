"""Tool calls keyed and aligned many rows at once: each call's match key as a small int (cached by
the call's JSON text), and the alignments of a whole batch of rows as arrays."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...data.types import ToolCall
from ..matching import Alignment, ToolCallMatcher
from .rows import _Call, _calls, _missing

try:  # the fastest JSON we have; the standard library otherwise
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson ships with the 'parquet' and 'traces' extras
    _orjson = None  # type: ignore[assignment]  # the name stays, None: the standard library is used

__all__ = ["align_batch", "CallKeys"]


class CallKeys:
    """Each call's match key under one equivalence matcher, as a small int; keys are cached by
    the call's JSON text, so a call seen before costs one serialisation and one lookup."""

    _LIMIT = 1_000_000  # cached texts before the cache starts again: bounded memory on any data

    def __init__(self, matcher: ToolCallMatcher) -> None:
        self.matcher = matcher
        self._ids: dict[Hashable, int] = {}
        self._by_text: dict[bytes | str, int] = {}

    def _id(self, name: str, args: dict[str, Any]) -> int:
        key = self.matcher.key(_Call(name, args))  # type: ignore[arg-type]  # reads tool_name and tool_input only
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._ids)
        return found

    def keys(self, cell: Any) -> list[int] | None:
        """The match keys of a trajectory cell's calls (None for an empty cell).

        A call is keyed by its JSON text as given: the same text always reads as the same call,
        so only a call never seen before is read by ``ToolCall``'s rules (and checked)."""
        if _missing(cell):
            return None
        if not isinstance(cell, list) and hasattr(cell, "tolist") and not isinstance(cell, (str, dict)):
            cell = cell.tolist()  # a list cell of a DataFrame read from Parquet
        if not isinstance(cell, list):
            calls = _calls(cell)
            return None if calls is None else [self._id(*c) for c in calls]
        if _orjson is None:  # pragma: no cover - without orjson every call is read and keyed
            return [self._id(*c) for c in _calls(cell) or ()]
        get = self._by_text.get
        # The text as written (keys unsorted): a call whose keys come in another order is just
        # another entry, read once, with the same key.
        dumps = _orjson.dumps
        try:
            out = [get(dumps(item)) for item in cell]
        except TypeError:  # not JSON (an object from a DataFrame): each call read and keyed, not cached
            return [self._id(*c) for c in _calls(cell) or ()]
        if None in out:
            for j, found in enumerate(out):
                if found is None:
                    out[j] = self._miss(cell[j], dumps(cell[j]))
        return out  # type: ignore[return-value]  # every None was filled just above

    def of_calls(self, calls: Sequence[ToolCall]) -> list[int]:
        """The match keys of tool calls already read (a run's output, a loaded case), cached by
        their JSON text as a saved call's are (a call seen before costs one serialisation)."""
        if _orjson is None:  # pragma: no cover - without orjson every call is keyed
            return [self._id(c.tool_name, c.tool_input) for c in calls]
        dumps, get, out = _orjson.dumps, self._by_text.get, []
        for call in calls:
            try:
                text = dumps((call.tool_name, call.tool_input))  # an array: never a saved call's text (an object)
            except TypeError:  # not JSON (an object an agent passed): keyed, not cached
                out.append(self._id(call.tool_name, call.tool_input))
                continue
            found = get(text)
            if found is None:
                found = self._id(call.tool_name, call.tool_input)
                if b"null" not in text:  # NaN and None write alike: keyed every time, never cached
                    if len(self._by_text) >= self._LIMIT:
                        self._by_text.clear()
                    self._by_text[text] = found
            out.append(found)
        return out

    def _miss(self, item: Any, text: bytes) -> int:
        """The key of a call whose text is not cached yet: read by ``ToolCall``'s rules, then cached."""
        (call,) = _calls([item]) or ()  # type: ignore[misc]  # one item read is one call
        found = self._id(*call)
        # JSON writes NaN and None alike: such calls are read and keyed every time, never cached.
        if b"null" not in text:
            if len(self._by_text) >= self._LIMIT:
                self._by_text.clear()
            self._by_text[text] = found
        return found


def align_batch(predicted: Sequence[list[int]], reference: Sequence[list[int]]) -> Alignment:
    """The alignments of many rows at once, each field an array with one entry a row, from the
    rows' call keys (small ints): what ``align`` gives row by row, for an equivalence matcher."""
    m = len(reference)
    n_p = np.fromiter(map(len, predicted), dtype=np.int64, count=m)
    n_r = np.fromiter(map(len, reference), dtype=np.int64, count=m)
    exact = np.fromiter(map(operator.eq, predicted, reference), dtype=bool, count=m)
    # Matched calls: the size of the multiset intersection of each row's keys, for all rows
    # together: count each (row, key) on both sides, and add up the smaller counts by row.
    flat_p = np.fromiter(itertools.chain.from_iterable(predicted), dtype=np.int64, count=int(n_p.sum()))
    flat_r = np.fromiter(itertools.chain.from_iterable(reference), dtype=np.int64, count=int(n_r.sum()))
    width = int(max(flat_p.max(initial=0), flat_r.max(initial=0))) + 1
    codes_p = np.repeat(np.arange(m, dtype=np.int64), n_p) * width + flat_p
    codes_r = np.repeat(np.arange(m, dtype=np.int64), n_r) * width + flat_r
    keys_p, counts_p = np.unique(codes_p, return_counts=True)
    keys_r, counts_r = np.unique(codes_r, return_counts=True)
    common, at_p, at_r = np.intersect1d(keys_p, keys_r, assume_unique=True, return_indices=True)
    matched = np.bincount(common // width, weights=np.minimum(counts_p[at_p], counts_r[at_r]), minlength=m).astype(np.int64)
    # In order: the reference is a subsequence of the prediction. Only rows where every reference
    # call is matched but not one for one can go either way; the rest are decided already.
    in_order = exact | (n_r == 0)
    for i in np.flatnonzero(~in_order & (matched == n_r)).tolist():
        it = iter(predicted[i])
        in_order[i] = all(k in it for k in reference[i])
    return Alignment(n_p, n_r, matched, exact, in_order)  # type: ignore[arg-type]  # the batch's: a column each
