"""Where work executes: agent runs ``local`` (this process, the default) or on ``ray`` (a Ray
cluster), and saved predictions scored batch by batch (``saved``: local processes, or Ray Data).

``RunConfig.executor`` names one (``"local"``, ``"ray"``) or is an executor object
(``RayExecutor(address=..., num_workers=...)``). Whichever runs the agents, the journal, the
scoring and the results stay in the calling process, so they are the same.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigError
from ..core.run.runner import Executor
from .local import LocalExecutor
from .ray import RayExecutor

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "resolve_executor", "ships_agents"]


def resolve_executor(executor: Any) -> Executor:
    """The executor object ``RunConfig.executor`` stands for (a name becomes its default executor)."""
    if executor == "local":
        return LocalExecutor()
    if executor == "ray":
        return RayExecutor()
    if isinstance(executor, str):
        raise ConfigError(f"executor={executor!r}: must be 'local', 'ray' or an executor object such as lf.RayExecutor(...)")
    return executor


def ships_agents(executor: Any) -> bool:
    """Whether the agents run in other processes, so agent spec strings are sent as strings."""
    return not (executor == "local" or isinstance(executor, LocalExecutor))
