"""What makes two judge models give the same answers: the model's class, every setting, bound arguments."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["model_identity"]


def _plain(value: Any, depth: int = 0) -> Any:
    """A setting as stable JSON-able data: equal settings give equal data in every process.

    Objects that are not plain data (HTTP clients, callables, handlers) stand for their type,
    never their repr, which would hold a memory address and change the key on every run.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 8:
        return type(value).__qualname__
    if type(value).__name__ in ("SecretStr", "SecretBytes"):
        return "<secret>"  # a key does not change answers; never put one in a cache key
    if isinstance(value, enum.Enum):
        return _plain(value.value, depth + 1)
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v, depth + 1) for v in value), key=repr)
    if hasattr(type(value), "model_fields"):  # a pydantic model (e.g. a nested config object)
        return _settings(value, depth + 1)
    kind = value if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")) else type(value)
    return f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', type(kind).__name__)}"


def _settings(model: Any, depth: int = 0) -> dict[str, Any]:
    """Every setting of a model object: its pydantic fields (LangChain chat models are pydantic
    models), else its public attributes; LangChain marks plumbing (callbacks, clients, caches,
    rate limiters) as excluded fields, which are left out."""
    fields = getattr(type(model), "model_fields", None)
    if isinstance(fields, Mapping):
        names = [name for name, info in fields.items() if not getattr(info, "exclude", False)]
    else:
        names = [name for name in getattr(model, "__dict__", {}) if not name.startswith("_")]
    out: dict[str, Any] = {}
    for name in names:
        try:
            out[name] = _plain(getattr(model, name), depth)
        except Exception:  # a property that raises is not a setting we can read
            continue
    return out


def model_identity(model: Any) -> str:
    """What makes two judges give the same answers: model class, every setting, bound kwargs.

    Two judges of one class that differ in any field (model name, temperature, base URL, top_p,
    a nested config...) have different identities, so they never share cached answers.
    """
    kwargs: dict[str, Any] = {}
    inner = model
    # model.bind(temperature=0) wraps the model; its kwargs change answers, so they are part of it.
    while hasattr(inner, "bound") and isinstance(getattr(inner, "kwargs", None), dict):
        kwargs = {**inner.kwargs, **kwargs}
        inner = inner.bound
    cls = type(inner)
    try:
        params = _plain(dict(inner._identifying_params))
    except Exception:
        params = {}
    return json.dumps(
        {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "settings": _settings(inner),
            "params": params,
            "bound": _plain(kwargs),
        },
        sort_keys=True,
        default=str,
    )
