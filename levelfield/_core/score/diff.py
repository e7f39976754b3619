"""A predicted trajectory set against the reference, call by call: what matched, what differs, what is missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..data.types import ToolCall
from .matching import DEFAULT_MATCHER, ToolCallMatcher, align

__all__ = ["MarkedCall", "mark_trajectory"]


@dataclass(frozen=True)
class MarkedCall:
    """One line of a trajectory set against the reference.

    ``status``: ``match`` (same call as a reference call), ``mismatch`` (a reference call's tool
    with other arguments), ``extra`` (no reference call for it) or ``missing`` (a reference call
    the agent did not make; ``predicted`` is None).
    """

    status: Literal["match", "mismatch", "extra", "missing"]
    predicted: ToolCall | None
    reference: ToolCall | None
    predicted_index: int | None
    reference_index: int | None


def mark_trajectory(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall] | None, matcher: ToolCallMatcher | None = None
) -> list[MarkedCall]:
    """The predicted calls in order, each marked against the reference, then the missing reference calls.

    Matches come from the same maximum one-to-one alignment the trajectory metrics use. Of the
    calls left over, a predicted and a reference call of the same tool are paired as a mismatch
    (right tool, wrong arguments), in order of appearance. Without a reference nothing is marked
    missing and every call is ``extra``.
    """
    reference = list(reference or [])
    alignment = align(predicted, reference, matcher or DEFAULT_MATCHER, pairs=True)
    ref_of = dict(alignment.matched_pairs or ())
    free_refs = [j for j in range(len(reference)) if j not in set(ref_of.values())]
    mismatch_of: dict[int, int] = {}
    for i, call in enumerate(predicted):
        if i in ref_of:
            continue
        for j in free_refs:
            if reference[j].tool_name == call.tool_name:
                mismatch_of[i] = j
                free_refs.remove(j)
                break
    marked = []
    for i, call in enumerate(predicted):
        if i in ref_of:
            marked.append(MarkedCall("match", call, reference[ref_of[i]], i, ref_of[i]))
        elif i in mismatch_of:
            marked.append(MarkedCall("mismatch", call, reference[mismatch_of[i]], i, mismatch_of[i]))
        else:
            marked.append(MarkedCall("extra", call, None, i, None))
    marked.extend(MarkedCall("missing", None, reference[j], None, j) for j in free_refs)
    return marked
