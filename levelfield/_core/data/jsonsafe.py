"""Turn whatever an agent returned into JSON-safe data, faithfully and without ever raising.

Agents put anything in their answers and tool calls: dates, sets, bytes, NumPy scalars, pydantic
models, open sockets, NaN, structures that contain themselves. Saving a run must never fail on
them, so every writer of agent data passes it through :func:`to_jsonable` first. The rules:

=============================================  ==========================================================
value                                          written as
=============================================  ==========================================================
``None``, ``bool``, ``int``, ``str``, finite   itself (subclasses as their plain base type)
``float``
NaN, +inf, -inf (float, NumPy, Decimal)        ``null``: JSON has no such numbers, and null is how pandas,
                                               Vertex and the run record write a number that is not one
``Enum`` member                                its ``value``, converted by these rules
dict / any ``Mapping``                         an object; a key that is not a string is converted by
                                               these rules and, if still not a string, written as its
                                               JSON text (``1`` -> ``"1"``, ``None`` -> ``"null"``,
                                               ``(1, 2)`` -> ``"[1, 2]"``); a key that collides with
                                               one already written gets `` (2)``, `` (3)``... appended
list, tuple, deque                             an array, in order
set, frozenset                                 an array, sorted by each item's JSON text (stable output)
bytes, bytearray, memoryview                   the text if it is valid UTF-8, else ``"base64:<base64>"``
datetime, date, time                           ISO 8601 text (``isoformat()``)
timedelta                                      ISO 8601 duration text (``"P1DT2H"``), as pydantic writes it
Decimal                                        its exact decimal text (``"0.1000"``)
NumPy scalar / array, pandas Series            the Python value / nested list (``tolist()``), then these rules
pandas ``NA``                                  ``null`` (``NaT`` is a datetime: ``"NaT"``)
pydantic model                                 an object of its fields (``exclude``d fields left out)
dataclass instance                             an object of its fields
a path (``os.PathLike``)                       its text (``os.fspath``)
UUID, IP address, regex pattern...             the text pydantic gives them
anything else                                  its ``repr()`` (``"<unrepresentable Foo>"`` if that raises)
a container already being written (a cycle)    ``"<cycle: list>"`` (naming the type)
nesting deeper than 100 levels                 ``"<nested too deep: list>"``
=============================================  ==========================================================

The result holds only ``dict`` (string keys), ``list``, ``str``, ``int``, finite ``float``,
``bool`` and ``None``: ``json.dumps(to_jsonable(x), allow_nan=False)`` always succeeds, and
``to_jsonable`` of its own result gives that result back.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import datetime as _dt
import enum
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

__all__ = ["to_jsonable", "dumps", "model_json", "MAX_DEPTH", "clean_text", "clean_strings", "has_lone_surrogates", "too_deep", "SURROGATE"]

MAX_DEPTH = 100
"""Containers nested deeper than this are written as a marker (JSON encoders recurse too)."""

_NATIVE = (str, int, bool, type(None))
_SEQUENCES = (list, tuple, collections.deque)


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON-safe data by the module's rules; never raises (KeyboardInterrupt excepted)."""
    try:
        return _walk(value, 0, set())
    except KeyboardInterrupt:
        raise
    except BaseException:  # a last resort: the rules below already catch per value
        return _marker("unrepresentable", value)


def _marker(what: str, value: Any) -> str:
    try:
        name = type(value).__name__
    except BaseException:  # noqa: BLE001 - a type whose name cannot be read
        name = "object"
    return f"<{what} {name}>" if what == "unrepresentable" else f"<{what}: {name}>"


def _float(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _walk(value: Any, depth: int, path: set[int]) -> Any:
    kind = type(value)
    if kind in _NATIVE:
        return value
    if kind is float:
        return _float(value)
    try:
        return _convert(value, depth, path)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a hostile __repr__/__iter__/__eq__ must not sink a save
        return _marker("unrepresentable", value)


def _container(value: Any, depth: int, path: set[int], items: Any) -> Any:
    """Walk a container's children with cycle and depth guards; ``items`` builds the result."""
    if depth >= MAX_DEPTH:
        return _marker("nested too deep", value)
    ident = id(value)
    if ident in path:
        return _marker("cycle", value)
    path.add(ident)
    try:
        return items()
    finally:
        path.discard(ident)


def _key(key: Any, depth: int, path: set[int]) -> str:
    if type(key) is str:
        return key
    converted = _walk(key, depth + 1, path)
    if isinstance(converted, str):
        return converted
    return json.dumps(converted, sort_keys=True, ensure_ascii=False)


def _mapping(value: Mapping, depth: int, path: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in list(value.items()):
        name = _key(key, depth, path)
        if name in out:
            n = 2
            while f"{name} ({n})" in out:
                n += 1
            name = f"{name} ({n})"
        out[name] = _walk(item, depth + 1, path)
    return out


def _sorted_set(value: Any, depth: int, path: set[int]) -> list[Any]:
    items = [_walk(v, depth + 1, path) for v in list(value)]
    return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))


def _bytes(value: Any) -> str:
    data = bytes(value)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def _convert(value: Any, depth: int, path: set[int]) -> Any:
    kind = type(value)
    if kind is dict:  # the common containers first: no ABC checks on the hot path
        return _container(value, depth, path, lambda: _mapping(value, depth, path))
    if kind is list:
        return _container(value, depth, path, lambda: [_walk(v, depth + 1, path) for v in list(value)])
    # Enum before int/str: an IntEnum member is an int too, but its value is what it means.
    if isinstance(value, enum.Enum):
        return _walk(value.value, depth + 1, path)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value)  # a subclass may override __int__/__str__; take the number itself
    if isinstance(value, float):
        return _float(float.__float__(value))
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Mapping):
        return _container(value, depth, path, lambda: _mapping(value, depth, path))
    if isinstance(value, _SEQUENCES):
        return _container(value, depth, path, lambda: [_walk(v, depth + 1, path) for v in list(value)])
    if isinstance(value, (set, frozenset)):
        return _container(value, depth, path, lambda: _sorted_set(value, depth, path))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _bytes(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return path if isinstance(path, str) else _bytes(path)
    if isinstance(value, Decimal):
        return str(value) if value.is_finite() else None
    module = (getattr(type(value), "__module__", "") or "").split(".")[0]
    if module in ("numpy", "pandas"):
        return _array_like(value, depth, path)
    if hasattr(type(value), "model_fields") and hasattr(type(value), "model_dump"):
        return _container(value, depth, path, lambda: _model(value, depth, path))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _container(
            value,
            depth,
            path,
            lambda: {f.name: _walk(getattr(value, f.name, None), depth + 1, path) for f in dataclasses.fields(value)},
        )
    known = _pydantic_leaf(value)
    if known is not None:
        return known
    return _repr(value)


def _array_like(value: Any, depth: int, path: set[int]) -> Any:
    if _is_pandas_missing(value):
        return None
    if isinstance(value, (_dt.datetime, _dt.timedelta)):  # pandas Timestamp / Timedelta
        return value.isoformat()  # type: ignore[union-attr]  # pandas' Timedelta has one; a plain timedelta is not array-like
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        converted = tolist()
        if converted is value:
            return _repr(value)
        return _container(value, depth, path, lambda: _walk(converted, depth + 1, path))
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # a DataFrame: one object per row, as pandas' "records"
        return _container(value, depth, path, lambda: _walk(to_dict(orient="records"), depth + 1, path))
    return _repr(value)


def _is_pandas_missing(value: Any) -> bool:
    pandas = sys.modules.get("pandas")  # loaded already: the value came from it
    return pandas is not None and value is getattr(pandas, "NA", None)


def _model(value: Any, depth: int, path: set[int]) -> dict[str, Any]:
    # Field by field rather than model_dump(): the same rules (and cycle guard) all the way down.
    out = {
        name: _walk(getattr(value, name, None), depth + 1, path)
        for name, info in type(value).model_fields.items()
        if not getattr(info, "exclude", False)
    }
    extra = getattr(value, "__pydantic_extra__", None) or {}
    for name, item in extra.items():
        out.setdefault(str(name), _walk(item, depth + 1, path))
    return out


def _pydantic_leaf(value: Any) -> Any:
    """The JSON text pydantic gives a known scalar type (UUID, Path, timedelta, IP...), else None."""
    from pydantic_core import to_jsonable_python

    try:
        converted = to_jsonable_python(value)
    except Exception:
        return None
    return converted if isinstance(converted, (str, int, float, bool)) else None


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        return _marker("unrepresentable", value)
    return str.__str__(text) if isinstance(text, str) else _marker("unrepresentable", value)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether dicts, lists, tuples or pydantic models in ``value`` nest deeper than ``limit``
    (without recursing itself): data read from a file must fit what the writers keep."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            children: Any = item.values()
        elif kind is list or kind is tuple:
            children = item
        elif hasattr(kind, "model_fields"):
            children = item.__dict__.values()
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list, tuple) or hasattr(type(child), "model_fields"))
    return False


# -- text that UTF-8 cannot hold ---------------------------------------------------------------

SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate (half of a UTF-16 pair) in a str: text UTF-8 cannot encode."""


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate (``"\\ud800"``: half of a UTF-16 pair, as truncated model
    output or ``json.loads`` of an escaped half pair leaves) replaced by U+FFFD; a high and low
    half that stand together become the character they encode. Such text cannot be written as
    UTF-8 (``UnicodeEncodeError``), so it is cleaned where it enters; other text is returned as is."""
    if text.isascii() or SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def has_lone_surrogates(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (dict keys and values, lists, tuples, pydantic
    models' fields) holds a lone surrogate; other objects are not looked into."""
    # A loop over a stack rather than recursion: it runs on every run the runner records.
    stack = [value]
    seen: set[int] = set()
    search = SURROGATE.search
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and search(item) is not None:
                return True
            continue
        if kind is dict:
            children: Any = item.values()
            stack.extend(key for key in item if type(key) is str)
        elif kind is list or kind is tuple:
            children = item
        elif hasattr(kind, "model_fields"):
            children = item.__dict__.values()
        elif isinstance(item, str):
            stack.append(str.__str__(item))
            continue
        else:
            continue
        if id(item) in seen:  # a structure that contains itself
            continue
        seen.add(id(item))
        stack.extend(child for child in children if child is not None and type(child) not in _SCALARS)
    return False


_SCALARS = (int, float, bool)


def clean_strings(value: Any) -> Any:
    """``value`` with :func:`clean_text` applied to every string in its dicts (keys too), lists and
    tuples; anything else (numbers, objects, models) is kept as it is. Shares what needs no change."""
    return _clean(value, 0)


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if depth >= MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {_clean(k, depth + 1): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(_clean(v, depth + 1) for v in value)
    return value


def dumps(value: Any) -> str:
    """``value`` as one line of JSON (UTF-8 text kept as is) via :func:`to_jsonable`'s rules; never raises.

    The common case (plain data) goes straight through the C encoder; only values it cannot
    write (NaN, odd keys, cycles) take the slower walk.
    """
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError):
        return _ENCODER.encode(to_jsonable(value))


# One encoder, built once: json.dumps with options builds a new one on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=to_jsonable, separators=(",", ":"))


def _c_encoder() -> Callable[[Any], str]:
    """``_ENCODER.encode`` without making its C encoder again on every call (a third of the time a
    small value takes): the same C encoder with the same options, made once. Made without a table
    of objects being encoded (``check_circular``), so one encoder serves every thread: a cycle
    ends in a RecursionError rather than a ValueError, and :func:`dumps` walks the value either way."""
    make = getattr(json.encoder, "c_make_encoder", None)
    text = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or text is None:  # pragma: no cover - a Python without the C accelerator
        return _ENCODER.encode
    e = _ENCODER
    encoder = make(None, e.default, text, None, e.key_separator, e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)

    def encode(value: Any) -> str:
        return text(value) if isinstance(value, str) else "".join(encoder(value, 0))

    return encode


_encode = _c_encoder()


def model_json(model: Any, **options: Any) -> str:
    """A pydantic model as JSON by pydantic's own serializer (fast), with :func:`to_jsonable` for
    values it does not know; never raises."""
    try:
        return model.model_dump_json(fallback=to_jsonable, **options)
    except Exception:  # a cycle or a value the fallback cannot settle: walk it the slow way
        return dumps(model.model_dump(mode="python", **options))
