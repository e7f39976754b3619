"""Ray: agent runs fan out to a Ray cluster, and saved rows are scored on Ray Data."""

from __future__ import annotations

from .executor import RayExecutor, score_saved_on_ray, scores_on_ray_data

__all__ = ["RayExecutor", "score_saved_on_ray", "scores_on_ray_data"]
