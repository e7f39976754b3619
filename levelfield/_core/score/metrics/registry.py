"""Metric names: the strings users write, and turning a metric list into metric objects.

The names of the metrics in ``core`` are listed here. Packages above core add theirs when they
are imported (the LLM judge registers its prebuilt judged metrics), so this module knows none of
them: it imports no package above core. Those packages are loaded (by name, :data:`_PLUGINS`) the
first time a name or metric object that the registries do not hold is met, so that scoring with
the built-in metrics alone never imports the judges or the simulator.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...errors import ConfigError, MetricError
from .agents import HandoffMatch, ToolAttribution
from .base import Metric, Score, ScoringContext
from .conversation import TurnsUsed
from .efficiency import ModelCallCount, RepeatedToolCalls, TokenCount, ToolCallCount
from .efficiency_adk import EFFICIENCY_METRICS
from .response import Bleu, ExactMatch, ResponseMatchScore, Rouge
from .retrieval import DocumentPrecision, DocumentRecall
from .trajectory import (
    ToolTrajectoryAvgScore,
    TrajectoryAnyOrderMatch,
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryPrecision,
    TrajectoryRecall,
)

__all__ = [
    "register_metric",
    "register_metric_hint",
    "register_judged_metric",
    "register_metric_converter",
    "is_judged_metric",
    "metric_names",
    "resolve_metrics",
    "nearest_name",
    "MetricSpec",
]

MetricSpec = "str | Metric"

_REGISTRY: dict[str, Callable[[], Metric]] = {
    "trajectory_exact_match": TrajectoryExactMatch,
    "trajectory_in_order_match": TrajectoryInOrderMatch,
    "trajectory_any_order_match": TrajectoryAnyOrderMatch,
    "trajectory_precision": TrajectoryPrecision,
    "trajectory_recall": TrajectoryRecall,
    "tool_trajectory_avg_score": ToolTrajectoryAvgScore,
    "exact_match": ExactMatch,
    "bleu": Bleu,
    "rouge_1": lambda: Rouge("rouge1"),
    "rouge_2": lambda: Rouge("rouge2"),
    "rouge_l": lambda: Rouge("rougeL"),
    "rouge_l_sum": lambda: Rouge("rougeLsum"),
    "response_match_score": ResponseMatchScore,
    "turns_used": TurnsUsed,
    "document_recall": DocumentRecall,
    "document_precision": DocumentPrecision,
    **EFFICIENCY_METRICS,
    "handoff_match": HandoffMatch,
    "handoff_in_order_match": lambda: HandoffMatch("in_order"),
    "handoff_any_order_match": lambda: HandoffMatch("any_order"),
    "tool_attribution": ToolAttribution,
    "tool_call_count": ToolCallCount,
    "model_call_count": ModelCallCount,
    "repeated_tool_calls": RepeatedToolCalls,
    "token_count": TokenCount,
}

SCORED_0_TO_1 = frozenset({
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match", "trajectory_precision",
    "trajectory_recall", "tool_trajectory_avg_score", "exact_match", "bleu", "rouge_1", "rouge_2", "rouge_l",
    "rouge_l_sum", "response_match_score", "document_recall", "document_precision", "handoff_match",
    "handoff_in_order_match", "handoff_any_order_match", "tool_attribution",
})
"""Built-in names whose every score lies from 0 to 1 (the counts, durations and token numbers do not):
a threshold or margin above 1 on one of them is a percent written for a share."""

# Names whose metric needs a judge model: built when resolve_metrics is given one (see register_judged_metric).
_JUDGED: dict[str, Callable[..., Metric]] = {}

# Names that exist but need arguments: say how to build them (see register_metric_hint).
_NEEDS_ARGS = {
    "trajectory_single_tool_use": "lf.metrics.TrajectorySingleToolUse(tool_name=...)",
    "rouge": "lf.metrics.Rouge(rouge_type='rougeL') or one of rouge_1, rouge_2, rouge_l, rouge_l_sum",
    "state_check": "lf.metrics.StateCheck(fn, name=...), fn(state, case) returning pass/fail or a score",
}

DEFAULT_METRICS = (
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "rouge_l_sum",
)


_PLUGINS = ("levelfield.judge", "levelfield.simulation")
"""The packages above core that register metric names, hints and converters when imported."""
_plugins_loaded = False


def _load_plugins() -> None:
    """Import :data:`_PLUGINS` once, so that the names they register are known."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True
        for name in _PLUGINS:
            importlib.import_module(name)


def _known(spec: Any) -> bool:
    """Whether ``spec`` resolves without the packages above core: a built-in name or a Metric object."""
    return spec in _REGISTRY if isinstance(spec, str) else isinstance(spec, Metric)


def register_metric(name: str, factory: Callable[[], Metric]) -> None:
    """Make ``name`` usable as a string in ``metrics=[...]``."""
    if name in _REGISTRY:
        raise MetricError(f"a metric named {name!r} is already registered")
    _REGISTRY[name] = factory


def register_metric_hint(name: str, how_to_build: str) -> None:
    """Make ``name`` in ``metrics=[...]`` an error that says how to build the metric.

    For metrics that cannot be built from a bare name because they need arguments, e.g. a
    judged metric needs a judge model, which is never chosen silently:
    ``register_metric_hint("safety", "lf.metrics.judged.safety(judge=...)")``.
    """
    if name in _REGISTRY:
        raise MetricError(f"a metric named {name!r} is already registered; it needs no hint")
    _NEEDS_ARGS[name] = how_to_build


def register_judged_metric(name: str, factory: Callable[..., Metric], how_to_build: str) -> None:
    """Make ``name`` usable in ``metrics=[...]`` when a judge is given: ``factory(judge)`` builds it
    (``factory(judge, judge_config=...)`` when the run gives one).

    Without a judge the name is an error saying ``how_to_build`` it (a judge is never chosen silently).
    """
    if name in _REGISTRY or name in _JUDGED:
        raise MetricError(f"a metric named {name!r} is already registered")
    _JUDGED[name] = factory
    _NEEDS_ARGS[name] = how_to_build


# Functions turning other libraries' metric objects into metrics (see register_metric_converter).
_CONVERTERS: list[Callable[[Any, Any], Metric | None]] = []


def register_metric_converter(convert: Callable[[Any, Any], Metric | None]) -> None:
    """Make other objects usable in ``metrics=[...]``: ``convert(obj, judge)`` returns a metric, or None when ``obj``
    is not one of its objects (e.g. the judge package turns Vertex's ``RubricMetric.GENERAL_QUALITY`` into its metric)."""
    _CONVERTERS.append(convert)


def is_judged_metric(name: str) -> bool:
    """Whether the metric named ``name`` is built with a judge (see :func:`register_judged_metric`)."""
    if name not in _REGISTRY:
        _load_plugins()
    return name in _JUDGED


def metric_names() -> list[str]:
    """Every metric name usable as a string (judged ones included: they need a judge)."""
    _load_plugins()
    return sorted({*_REGISTRY, *_JUDGED})


def nearest_name(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the known name closest to a misspelt one, else ""."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


class _ObjectMetric(Metric):
    """A metric object that is not a :class:`Metric` subclass but has a ``name`` and ``score(ctx)``:
    given the rest of the interface (``requires``, ``computable``, ``ascore``) so the engine can
    score it like any other; its own versions are used where it has them."""

    def __init__(self, obj: Any) -> None:
        self.wrapped = obj
        self.name = obj.name
        self.requires = tuple(getattr(obj, "requires", ()))  # type: ignore[misc]
        self.is_async = bool(getattr(obj, "is_async", False))  # type: ignore[misc]

    def score(self, ctx: ScoringContext) -> float | Score:
        return self.wrapped.score(ctx)

    async def ascore(self, ctx: ScoringContext) -> float | Score:
        own = getattr(self.wrapped, "ascore", None)
        return await own(ctx) if own is not None else self.wrapped.score(ctx)

    def computable(self, ctx: ScoringContext) -> bool:
        own = getattr(self.wrapped, "computable", None)
        return bool(own(ctx)) if own is not None else super().computable(ctx)

    def __getattr__(self, attr: str) -> Any:
        # Only reached for attributes this adapter lacks: the user's object answers for itself.
        return getattr(self.__dict__["wrapped"], attr)

    def __repr__(self) -> str:
        return repr(self.wrapped)


def resolve_metrics(metrics: Sequence[str | Metric] | None, *, judge: Any = None, judge_config: Any = None) -> list[Metric]:
    """Turn names and metric objects into metric objects; unknown or duplicate names are errors.

    ``judge`` (a chat model, a callable, an agent...) builds the names that need one, e.g.
    ``"final_response_match_v2"``, and is the judge of every judged metric object given without
    one (a metric's own judge wins); without it those are errors saying how to give one.
    ``judge_config`` (an ``lf.JudgeConfig``) is how the metrics built from names ask the judge; it is
    refused when no metric is built so (a metric object takes its own), as an option that would do nothing.
    """
    if judge_config is not None and judge is None:
        raise ConfigError("judge_config=... says how the metrics built from names (e.g. 'safety_v1') ask the run's "
                          "judge, and no judge=... is given: give judge=... too, or give the metric object its own "
                          "judge and judge_config")
    if metrics is None:
        metrics = DEFAULT_METRICS
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    metrics = list(metrics)
    if not all(_known(spec) for spec in metrics):
        _load_plugins()
    out: list[Metric] = []
    built: list[str] = []
    for spec in metrics:
        if isinstance(spec, str):
            if spec in _JUDGED and judge is not None:
                out.append(_JUDGED[spec](judge) if judge_config is None else _JUDGED[spec](judge, judge_config=judge_config))
                built.append(spec)
                continue
            if spec in _NEEDS_ARGS:
                raise MetricError(f"metric {spec!r} needs arguments: use {_NEEDS_ARGS[spec]}")
            factory = _REGISTRY.get(spec)
            if factory is None:
                hint = nearest_name(spec, [*_REGISTRY, *_NEEDS_ARGS])
                raise MetricError(f"unknown metric {spec!r}.{hint} Known names: {', '.join(metric_names())}")
            out.append(factory())
        elif isinstance(spec, Metric):
            out.append(spec)
        elif isinstance(getattr(spec, "name", None), str) and callable(getattr(spec, "score", None)):
            out.append(_ObjectMetric(spec))
        else:
            converted = next((m for m in (convert(spec, judge) for convert in _CONVERTERS) if m is not None), None)
            if converted is None:
                raise MetricError(f"{spec!r} is not a metric name or a Metric object")
            out.append(converted)
    if judge_config is not None and not built:
        raise ConfigError(f"judge_config=... says how the metrics built from names (e.g. 'safety_v1') ask the run's "
                          f"judge, and none of these metrics is one ({', '.join(m.name for m in out) or 'none given'}): "
                          "a metric object takes its own, e.g. PointwiseMetric(..., judge_config=lf.JudgeConfig(...))")
    for metric in out:
        # A judged metric built without a judge takes this one; with neither, its error says how to give one.
        use_default_judge = getattr(metric, "use_default_judge", None)
        if callable(use_default_judge):
            use_default_judge(judge)
    seen: dict[str, Metric] = {}
    for metric in out:
        if metric.name in seen:
            raise MetricError(
                f"two metrics are named {metric.name!r} ({seen[metric.name]!r} and {metric!r}); "
                "give one a different name=..."
            )
        seen[metric.name] = metric
    return out
