"""Any value an agent returns, as JSON that says what it was: saving a run never fails on agent data."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["to_jsonable", "dumps", "model_json"]


def to_jsonable(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` with everything JSON cannot hold replaced by a faithful form; never raises.

    NaN and infinities become None (JSON has no such numbers); dict keys become strings; tuples
    and sets become lists; pydantic models and NumPy values their plain Python form; anything
    else its ``str()`` (or its type name when even that fails).
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if id(value) in _seen:
        return f"<cycle: {type(value).__name__}>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [to_jsonable(v, seen) for v in items]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return to_jsonable(dump(), seen)
        except Exception:
            pass
    item = getattr(value, "item", None)  # NumPy scalars
    if callable(item) and type(value).__module__ == "numpy":
        try:
            return to_jsonable(item(), seen)
        except Exception:
            pass
    tolist = getattr(value, "tolist", None)  # NumPy arrays
    if callable(tolist) and type(value).__module__ == "numpy":
        try:
            return to_jsonable(tolist(), seen)
        except Exception:
            pass
    iso = getattr(value, "isoformat", None)  # dates, times
    if callable(iso):
        try:
            return iso()
        except Exception:
            pass
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def dumps(value: Any) -> str:
    """``value`` as one line of JSON (UTF-8 text kept as is) via :func:`to_jsonable`'s rules; never raises.

    The common case (plain data) goes straight through the C encoder; only values it cannot
    write (NaN, odd keys, cycles) take the slower walk.
    """
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        return _ENCODER.encode(to_jsonable(value))


# One encoder, built once: json.dumps with options builds a new one on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=to_jsonable, separators=(",", ":"))


def model_json(model: Any, **options: Any) -> str:
    """A pydantic model as JSON by pydantic's own serializer (fast), with :func:`to_jsonable` for
    values it does not know; never raises."""
    try:
        return model.model_dump_json(fallback=to_jsonable, **options)
    except Exception:  # a cycle or a value the fallback cannot settle: walk it the slow way
        return dumps(model.model_dump(mode="python", **options))
