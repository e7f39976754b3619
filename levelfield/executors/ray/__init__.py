"""Ray: agent runs fan out to a Ray cluster (``executor``), and saved rows are scored on Ray Data (``data``).

One module a job: ``executor`` (``RayExecutor`` and the driver's dispatch), ``plan`` (the runs,
numbered and batched), ``workers`` (the actor side), ``runtime_env`` (connecting to Ray and what
the workers get), ``data`` (saved predictions scored on Ray Data). ``ray`` itself is imported only
when a Ray run starts: ``pip install 'levelfield[ray]'``.

The names load on first use: a worker actor imports ``workers`` (and so this package) when it
starts, and should not pay for the driver's side (``data`` loads pandas and the result tables),
which would add seconds to every worker's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_members

if TYPE_CHECKING:
    from .data import score_saved_on_ray, scores_on_ray_data
    from .executor import RayExecutor

__all__ = ["RayExecutor", "score_saved_on_ray", "scores_on_ray_data"]

_LAZY = {"RayExecutor": ".executor", "score_saved_on_ray": ".data", "scores_on_ray_data": ".data"}

__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
