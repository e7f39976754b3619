"""Names of a package loaded on first use: the one ``__getattr__`` / ``__dir__`` pair every lazy
package uses, so that ``import levelfield`` stays light (a heavy member loads when it is named)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_members"]


def lazy_members(
    package: str, members: Mapping[str, str | tuple[str, str]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``members`` maps a public name to the module that
    holds it (relative to the package), or to ``(module, name there)``; a name whose module is
    ``.<name>`` is that submodule. A member once loaded is kept in ``namespace`` (the package's
    globals), so later look-ups skip ``__getattr__``."""

    def __getattr__(name: str) -> Any:
        where = members.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        loaded = importlib.import_module(module, package)
        value = loaded if module == f".{name}" else getattr(loaded, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(members))

    return __getattr__, __dir__
