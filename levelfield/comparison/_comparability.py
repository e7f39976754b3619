"""The comparability guard: scores given by different evaluators are not compared as if they were one.

Two runs are compared (a baseline joined to ``compare``, the gate against it, ``view``'s diff of two
runs, ``watch``'s drift against a baseline) only when each metric's evaluator is the same on both
sides (:class:`levelfield._core.results.provenance.Evaluator`: metric version and options, judge
model and settings, prompt and rubric hashes). Otherwise :func:`check_evaluators` refuses with an
:class:`EvaluatorsDifferError` naming what differs; with ``allow_different_evaluators=True``
(``--allow-different-evaluators``) it warns (:class:`EvaluatorsDifferWarning`) and returns the lines
that label the comparison. A side whose record predates provenance is not checked, and said so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .._core.errors import ConfigError
from .._core.results.provenance import Evaluator, evaluator_differences
from .._core.run.notices import LevelfieldWarning, warn_user

__all__ = ["EvaluatorsDifferError", "EvaluatorsDifferWarning", "check_evaluators", "ALLOW_HINT"]

ALLOW_HINT = "pass allow_different_evaluators=True (--allow-different-evaluators) to compare anyway"


class EvaluatorsDifferError(ConfigError):
    """Two runs' scores of a metric come from different evaluators (judge, prompt, rubrics, metric version)."""


class EvaluatorsDifferWarning(LevelfieldWarning):
    """A comparison made across different evaluators, because ``allow_different_evaluators=True`` asked for it."""


def check_evaluators(old: Mapping[str, Evaluator] | None, new: Mapping[str, Evaluator] | None, metrics: Iterable[str],
                     *, allow: bool, what: str, warn: bool = True) -> list[str]:
    """Refuse (or, with ``allow``, warn) when a metric's evaluators differ between ``old`` and ``new``.

    ``what`` names the comparison in the message (``"baseline 'main' (runs/main)"``). Returns the
    lines that label an allowed comparison (``[]`` when every evaluator agrees), and a line naming
    the metrics a side does not record (not checked). ``warn=False`` leaves the warning to the caller
    (a web page shows the lines instead)."""
    metrics = list(metrics)
    differ, unknown = evaluator_differences(old, new, metrics)
    if differ and not allow:
        raise EvaluatorsDifferError(f"{what}: scored by other evaluators than this run: {'; '.join(differ)}; {ALLOW_HINT}")
    lines = [f"compared across different evaluators: {d}" for d in differ]
    if differ and warn:
        warn_user(f"{what}: compared across different evaluators (allow_different_evaluators=True): {'; '.join(differ)}",
                  EvaluatorsDifferWarning)
    if unknown:
        lines.append(f"evaluators not recorded on both sides for {', '.join(map(repr, unknown))} "
                     "(a record written before levelfield kept them): not checked")
    return lines
