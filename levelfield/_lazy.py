"""Names of a package loaded on first use: the one ``__getattr__`` / ``__dir__`` pair every lazy
package uses, so that ``import levelfield`` stays light (a heavy member loads when it is named).

It also shows what a package exports under the package's name (:func:`rehome`): a traceback prints
``levelfield.DatasetError``, ``help(lf.stats.sample_size)`` names ``levelfield.stats``, not the private
module (``levelfield._core...``) that happens to define them."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_members", "rehome"]


def lazy_members(
    package: str, members: Mapping[str, str | tuple[str, str]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``members`` maps a public name to the module that
    holds it (relative to the package), or to ``(module, name there)``; a name whose module is
    ``.<name>`` is that submodule. A member once loaded is kept in ``namespace`` (the package's
    globals), so later look-ups skip ``__getattr__``; one defined in a private module is shown under
    ``package`` (:func:`rehome`)."""

    def __getattr__(name: str) -> Any:
        where = members.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        loaded = importlib.import_module(module, package)
        value = loaded if module == f".{name}" else getattr(loaded, attribute)
        rehome(package, {name: value})
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(members))

    return __getattr__, __dir__


def rehome(package: str, objects: Mapping[str, Any]) -> None:
    """Shows each exception, warning and function of ``objects`` (by the name ``package`` exports it
    under, which must be its own: pickle finds it at ``package.<its name>``) that a private module of levelfield
    defines (a ``_`` part in its path: ``levelfield._core.errors``) as a member of ``package``, its
    public home: ``__module__`` is what tracebacks, ``repr`` of a class and ``help`` print, and what
    pickle looks the object up by (``package.<qualname>``, which resolves to the same object).

    Left alone: objects of public modules, and every other class. A class's string annotations are
    resolved in the module its ``__module__`` names (``typing.get_type_hints``, pydantic building a
    schema of a user's model that holds an ``lf.AgentOutput``), so a data class shown elsewhere would
    stop resolving them; and a metric's class path is saved in run records as its evaluator's kind.
    An exception's or a function's annotations never are resolved that way (a function's through its
    own ``__globals__``)."""
    for name, value in objects.items():
        module = getattr(value, "__module__", None)
        if not isinstance(module, str) or not _private(module) or getattr(value, "__qualname__", None) != name:
            continue  # a public module's object, a nested one, or one exported under another name
        if isinstance(value, types.FunctionType) or (isinstance(value, type) and issubclass(value, (BaseException, Warning))):
            value.__module__ = package


def _private(module: str) -> bool:
    """Whether ``module`` is a private module of levelfield (``levelfield._core.errors``)."""
    head, _, rest = module.partition(".")
    return head == "levelfield" and any(part.startswith("_") for part in rest.split("."))
