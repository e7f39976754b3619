"""What a function judge does, as a hash: the part of a judge's cache key that changes when its code does.

A function's module and name say which judge it is, not what it answers: edit its body and rerun,
and a key of the name alone replays the old judge's verdicts. :func:`code_identity` hashes what
decides the answers instead: the function's bytecode, constants and names (nested functions
included), its defaults, the values its closure holds, and the functions and plain constants of
its own module that it refers to by name (a helper it calls, a rubric string), each by the same
rules. A callable object judge stands for its type, its ``__call__`` code and its public
attributes (its settings); an object the judge holds (a client, a counter) for its type and code
only, never its state or its ``repr`` with a memory address, so equal code gives one hash in
every process. An agent used as a judge stands for its
name, URL and agent card.

Not seen: code in other modules it calls (a library's), and state read at call time (a file, an
environment variable). Change those and clear the cache (or pass ``cache=False``).
"""

from __future__ import annotations

import functools
import hashlib
import types
from typing import Any

__all__ = ["code_identity"]

_MAX_DEPTH = 6


def code_identity(obj: Any) -> str:
    """A hex hash of what the judge ``obj`` (a function, a callable object, a ``partial``, an agent) does."""
    parts: list[str] = []
    _describe(obj, parts, 0, set())
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _describe(obj: Any, out: list[str], depth: int, seen: set[int]) -> None:
    if depth > _MAX_DEPTH:
        out.append(f"<deep {_type_name(obj)}>")
        return
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        out.append(repr(obj))
        return
    if id(obj) in seen:  # a function that calls itself, a structure that holds itself
        out.append(f"<seen {_type_name(obj)}>")
        return
    seen.add(id(obj))
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        out.append(f"{type(obj).__name__}[{len(items)}]")
        for item in items:
            _describe(item, out, depth + 1, seen)
    elif isinstance(obj, dict):
        out.append(f"dict[{len(obj)}]")
        for key in sorted(obj, key=repr):
            _describe(key, out, depth + 1, seen)
            _describe(obj[key], out, depth + 1, seen)
    elif isinstance(obj, types.CodeType):
        _code(obj, out, depth, seen)
    elif isinstance(obj, functools.partial):
        out.append("partial")
        _describe(obj.func, out, depth + 1, seen)
        _describe(obj.args, out, depth + 1, seen)
        _describe(obj.keywords, out, depth + 1, seen)
    elif isinstance(obj, types.MethodType):
        out.append("method")
        _describe(obj.__func__, out, depth + 1, seen)
        _describe(obj.__self__, out, depth + 1, seen)
    elif isinstance(obj, types.FunctionType):
        _function(obj, out, depth, seen)
    elif isinstance(obj, (types.ModuleType, type, types.BuiltinFunctionType)):
        out.append(_type_name(obj) if not isinstance(obj, type) else f"{obj.__module__}.{obj.__qualname__}")
    else:
        _object(obj, out, depth, seen)


def _function(fn: types.FunctionType, out: list[str], depth: int, seen: set[int]) -> None:
    out.append(f"function {fn.__module__}.{fn.__qualname__}")
    _code(fn.__code__, out, depth + 1, seen)
    _describe(fn.__defaults__, out, depth + 1, seen)
    _describe(fn.__kwdefaults__, out, depth + 1, seen)
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not filled yet
            value = "<empty cell>"
        _describe(value, out, depth + 1, seen)
    # What it refers to by name in its own module: a helper it calls, a rubric constant.
    module_globals = getattr(fn, "__globals__", {})
    for name in sorted(set(_names(fn.__code__))):
        value = module_globals.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            out.append(f"global {name}")
            _describe(value, out, depth + 1, seen)
        elif isinstance(value, (str, int, float, bool, bytes)) and not isinstance(value, type):
            out.append(f"global {name}={value!r}")


def _names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_names(const))
    return names


def _code(code: types.CodeType, out: list[str], depth: int, seen: set[int]) -> None:
    out.append(code.co_code.hex())
    out.append(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount, code.co_kwonlyargcount)))
    for const in code.co_consts:
        _describe(const, out, depth + 1, seen)


def _object(obj: Any, out: list[str], depth: int, seen: set[int]) -> None:
    """An object judge (a class with ``__call__``, an agent): its type, its code, its public settings."""
    cls = type(obj)
    out.append(f"object {cls.__module__}.{cls.__qualname__}")
    call = getattr(cls, "__call__", None)  # noqa: B004 (the method, not a test)
    if isinstance(call, types.FunctionType):
        _describe(call, out, depth + 1, seen)
    for name in ("name", "url", "card_url"):
        value = getattr(obj, name, None)
        if isinstance(value, str):
            out.append(f"{name}={value}")
    card = getattr(obj, "card", None) or getattr(obj, "agent_card", None) or getattr(obj, "_card", None)
    if card is not None:
        dump = getattr(card, "model_dump_json", None)
        serialize = getattr(card, "SerializeToString", None)  # a2a-sdk 1.x cards are protobuf messages
        if callable(serialize):
            try:
                out.append(f"card={serialize(deterministic=True).hex()}")
            except Exception:  # noqa: BLE001
                pass
        elif callable(dump):
            try:
                out.append(f"card={dump()}")
            except Exception:  # noqa: BLE001 - a card we cannot write is named by the fields above
                pass
        else:
            out.append(f"card={card!r}" if isinstance(card, (dict, str)) else f"card {_type_name(card)}")
    if depth > 0 or hasattr(obj, "arun"):
        # An object the judge holds (a client, a counter) or an agent (its attributes are clients
        # and sessions): its type and code, not its state, which changes from call to call.
        return
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        public = {k: v for k, v in attributes.items() if isinstance(k, str) and not k.startswith("_")}
        _describe(public, out, depth + 1, seen)


def _type_name(obj: Any) -> str:
    kind = obj if isinstance(obj, type) else type(obj)
    return f"{getattr(obj, '__module__', kind.__module__)}.{getattr(obj, '__qualname__', kind.__qualname__)}"
