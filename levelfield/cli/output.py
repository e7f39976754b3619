"""What the ``levelfield`` command says besides its tables and verdict: progress notes and failures.

Kept apart from ``cli.py`` so the command's wiring and its wording change independently.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..comparison._failures import format_failures, unreadable_judges

if TYPE_CHECKING:
    from .._core.results.result import EvalResult
    from ..comparison._comparison import Comparison

__all__ = ["status", "report_failures", "report_unreadable_judges", "warnings_as_lines", "limit_lines"]


def limit_lines(cmp: Comparison) -> list[str]:
    """What the endpoints' limits did, when they did anything: the concurrency each ran at, the
    rate-limited answers absorbed, the time waiting on limits (nothing when no limit was met: a
    window still opening by slow start, below the ceiling at the end of a short run, is not a limit met)."""
    met = [s for s in cmp.limits if s.met]
    if not met:
        return []
    return ["", "Rate limits (calls in flight per endpoint; --no-adaptive keeps --concurrency fixed):",
            *(f"  {s.describe()}" for s in met)]


def status(message: str, *, quiet: bool = False) -> None:
    """A progress note on stderr (the first seconds go to imports; say so rather than stay silent)."""
    if not quiet:
        print(f"levelfield: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def warnings_as_lines(command: str) -> Iterator[None]:
    """Print levelfield's warnings (``LevelfieldWarning``) as they come, as ``levelfield CMD: warning: ...``
    lines on stderr (each one, not once per place); other warnings print as Python prints them."""
    from .._core.run.notices import LevelfieldWarning

    with warnings.catch_warnings():
        warnings.simplefilter("always", LevelfieldWarning)
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
            if issubclass(category, LevelfieldWarning):
                print(f"levelfield {command}: warning: {message}", file=sys.stderr, flush=True)
            else:
                shown(message, category, *args, **kwargs)  # type: ignore[arg-type]

        warnings.showwarning = show
        yield


def report_failures(cmp: Comparison, *, command: str, allow_failures: bool = False) -> int:
    """Print the failures of ``cmp`` (if any); 1 when every run of some agent failed, unless allowed."""
    s = cmp.summary  # the counts every readout prints (print(cmp), the report, view, MLflow)
    counts = {a: (int(s.loc[a, "failures"]), int(s.loc[a, "runs"])) for a in cmp.results}
    # journaled runs: only the failed ones are read back, for their error types and examples
    text = format_failures({a: r.failures for a, r in cmp.results.items()}, counts=counts)
    if text:
        print()
        print(text)
    dead = [a for a, r in cmp.results.items() if len(failed := r.run_failures()) and failed.all()]
    if not dead:
        return 0
    names = ", ".join(dead)
    if allow_failures:
        print(f"levelfield {command}: every run of {names} failed (tolerated: --allow-failures)", file=sys.stderr)
        return 0
    print(
        f"levelfield {command}: every run of {names} failed; fix the agent (see the errors above) "
        "or pass --allow-failures to exit 0 anyway",
        file=sys.stderr,
    )
    return 1


def report_unreadable_judges(results: Mapping[str, EvalResult], metrics: Sequence[Any], *, command: str) -> int:
    """Print, for each judged metric most of whose rows failed on answers no parser reads, the warning
    ``evaluate``/``compare`` give; 1 when there is one (the numbers are not the judge's), else 0."""
    found = unreadable_judges(results, metrics)
    for judge in found:
        print(f"levelfield {command}: {judge.message()}", file=sys.stderr)
    return 1 if found else 0
