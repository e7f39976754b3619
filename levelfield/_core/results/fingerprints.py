"""Fingerprints of what agents are asked: a case's, and a dataset's, so a saved run knows its questions.

A resumed journal compares them with the dataset given now (:func:`levelfield._core.results.resume.check_resumable`),
and a record's header keeps the dataset's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..data.dataset import EvalCase
from ..data.jsonsafe import to_jsonable

__all__ = ["case_fingerprint", "dataset_fingerprint", "fingerprints_of"]


def _digest(obj: Any) -> str:
    try:
        text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, default=to_jsonable, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(to_jsonable(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def case_fingerprint(case: EvalCase) -> str:
    """A hash of what an agent is asked in ``case``: prompts, history and initial state.

    References are left out on purpose: changing an expectation does not invalidate a run
    (runs are re-scored when resumed), changing the question does.
    """
    asked: dict[str, Any] = {
        "prompt": case.prompt,
        "history": [m.model_dump() for m in case.history],
        "turns": [t.prompt for t in case.turns],
    }
    state = getattr(case, "state", None)
    if state:
        asked["state"] = state
    if case.conversation_scenario is not None:
        asked["scenario"] = case.conversation_scenario
    session = case.metadata.get("session_input")
    if session:
        asked["session_input"] = session
    return _digest(asked)


def fingerprints_of(cases: Iterable[EvalCase]) -> dict[str, str]:
    """Case id -> :func:`case_fingerprint` for a dataset (computed once per dataset object)."""
    cached = getattr(cases, "_lf_fingerprints", None)
    if cached is not None:
        return cached
    out = {c.case_id: case_fingerprint(c) for c in cases}
    try:
        cases._lf_fingerprints = out  # type: ignore[attr-defined]  # a dataset object takes it; a list raises, below
    except AttributeError:  # a list or tuple of cases: nothing to cache on
        pass
    return out


def dataset_fingerprint(fingerprints: Mapping[str, str]) -> str:
    """A hash of a dataset's case ids and case fingerprints, in order."""
    return _digest(list(fingerprints.items()))
