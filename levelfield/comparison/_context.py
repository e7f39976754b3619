"""What a run adds to a comparison beyond its results (:class:`ComparisonContext`, frozen, given to
``Comparison(..., context=...)`` when it is made), and the one way a comparison shows its statistics
options as attributes (:class:`StatsOption`: ``cmp.confidence`` is ``cmp.stats.confidence``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

__all__ = ["ComparisonContext", "StatsOption"]

T = TypeVar("T")


@dataclass(frozen=True)
class ComparisonContext:
    """How a comparison came to be, beside its dataset, results and metrics: made once by whoever made
    the runs (``lf.compare``, ``Comparison.load``, ``Comparison.of_evaluation``) and never changed;
    a comparison with another context is a new comparison (``cmp.with_context(...)``)."""

    kind: str = "compare"
    """What made it, as the run record's header names it (``run_kind``): ``compare``, or ``evaluate`` for
    one agent evaluated (``levelfield eval --agent``, ``lf.evaluate`` logged to MLflow)."""
    baseline: Any = None
    """``compare(baseline=...)``: the ``levelfield.comparison._baseline.Baseline`` that joined as an agent."""
    saved_baseline: str | None = None
    """When loaded from a folder: the agent that was the baseline of the run that saved it."""
    evaluator_notes: list[str] = field(default_factory=list)
    """Lines that label a comparison made across different evaluators (``allow_different_evaluators=True``):
    what differs, per metric, between the baseline's evaluators and this run's; kept in the record."""
    stopped_early: dict[str, Any] | None = None
    """``compare(stop_early=...)``: where the sequential test stopped, and each pair's decision."""
    missing_runs: list[tuple[str, str, int]] | None = None
    """Runs the plan had that the record lacks (an interrupted journal read back); None: the runs a
    spending limit kept from starting, read from the results."""
    complete: bool | None = None
    """Whether the record was finished; None: unless a spending limit kept runs from starting."""
    status: str | None = None
    """A loaded record's status (``complete``, ``budget_exhausted``, ...)."""
    tools_header: dict[str, Any] | None = None
    """What levelled the agents' tools (cassette, faults; the run record's ``tools`` header field)."""
    tool_levelling: dict[str, dict[str, Any]] | None = None
    """Per agent: its tools levelled or not (``levelled``, ``how`` | ``why``) and its calls counted by
    source (``replayed`` from the cassette or the shared record, ``recorded``, ``live``, ``missed``) and
    fault (``counts``); None when nothing was levelled (see ``levelfield.tools``)."""
    faulted: Any = None
    """``compare(faults=...)``: the comparison of the same agents on the same cases under the seeded faults."""
    faults: str = ""
    """With ``faulted``: how the faults were made (the schedule's description), for the read-out."""


class StatsOption(Generic[T]):
    """A statistics option read as an attribute of a comparison (``cmp.confidence``): always the value
    in ``cmp.stats`` (an ``lf.StatsConfig``), the one place it is set."""

    name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> StatsOption[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> T | StatsOption[T]:
        if obj is None:
            return self
        value: T = getattr(obj.stats, self.name)  # type: ignore[attr-defined]
        return value
