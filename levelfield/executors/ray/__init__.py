"""Ray: agent runs fan out to a Ray cluster (``executor``), and saved rows are scored on Ray Data (``data``).

One module a job: ``executor`` (``RayExecutor`` and the driver's dispatch), ``plan`` (the runs,
numbered and batched), ``workers`` (the actor side), ``runtime_env`` (connecting to Ray and what
the workers get), ``data`` (saved predictions scored on Ray Data). ``ray`` itself is imported only
when a Ray run starts: ``pip install 'levelfield[ray]'``.
"""

from __future__ import annotations

from .data import score_saved_on_ray, scores_on_ray_data
from .executor import RayExecutor

__all__ = ["RayExecutor", "score_saved_on_ray", "scores_on_ray_data"]
