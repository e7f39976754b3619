"""Where work executes: agent runs ``local`` (this process, the default) or on ``ray`` (a Ray
cluster), and saved predictions scored batch by batch (``saved``: local processes, or Ray Data).

``RunConfig.executor`` names one (``"local"``, ``"ray"``) or is an executor object
(``RayExecutor(address=..., num_workers=...)``). Whichever runs the agents, the journal, the
scoring and the results stay in the calling process, so they are the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core.errors import ConfigError

if TYPE_CHECKING:
    from .._core.run.runner import Executor
    from .local import LocalExecutor

__all__ = ["Executor", "LocalExecutor", "resolve_executor", "ships_agents"]

# Scoring saved rows (``executors.saved``) needs neither the runner nor Ray's module: they load on first use.
from .._lazy import lazy_members

_LAZY = {"Executor": ".._core.run.runner", "LocalExecutor": ".local"}


__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
def resolve_executor(executor: Any) -> Executor:
    """The executor object ``RunConfig.executor`` stands for (a name becomes its default executor)."""
    if executor == "local":
        from .local import LocalExecutor

        return LocalExecutor()
    if executor == "ray":
        from .ray import RayExecutor

        return RayExecutor()
    if isinstance(executor, str):
        raise ConfigError(f"executor={executor!r}: must be 'local', 'ray' or an executor object such as lf.RayExecutor(...)")
    return executor


def ships_agents(executor: Any) -> bool:
    """Whether the agents run in other processes, so agent spec strings are sent as strings."""
    if isinstance(executor, str):  # a name: only "local" runs here (another name is refused by resolve_executor)
        return executor != "local"
    from .local import LocalExecutor

    return not isinstance(executor, LocalExecutor)
