"""Benchmarks with worlds of their own, run on any agent: ``lf.benchmarks.tau2("retail")``.

A benchmark gives a dataset, the tools of its environment in each framework's shape, the environment
itself (``tools=`` of ``lf.evaluate`` / ``lf.compare``) and its own metrics. See ``docs/guide/tau2.md``.
Names load on first use: ``import levelfield`` does not import a benchmark's package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_members

_LAZY = {
    "tau2": (".tau2_bench", "tau2"),
    "Tau2Benchmark": (".tau2_bench.benchmark", "Tau2Benchmark"),
}

if TYPE_CHECKING:
    from .tau2_bench import tau2
    from .tau2_bench.benchmark import Tau2Benchmark

__all__ = ["tau2", "Tau2Benchmark"]

__getattr__, __dir__ = lazy_members(__name__, _LAZY, globals())
