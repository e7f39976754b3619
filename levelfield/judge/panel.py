"""Panels of judges: one judged metric asked of several judges, each ``num_samples`` times; the verdict is their majority.

A metric built with ``judges=[a, b, c]`` (or ``judges={"name": judge, ...}``) asks every judge the
same prompt ``num_samples`` times. Each judge × sample answer is a vote; the row keeps every
judge's votes and its own verdict, and the panel's verdict is the majority of all votes, as the
metric combines samples (``aggregation``): with ``"majority"`` a tie between ratings gives their
mean (0.5 for a pass/fail tie), with ``"mean"`` the mean of the votes.

The row's columns, for a judge named ``<name>``:

- ``<metric>/judge/<name>/votes``: that judge's reading of each sample (None for a sample without one);
- ``<metric>/judge/<name>/score``: that judge's own verdict over its samples (NaN when it gave none);
- ``<metric>/judge/<name>/error``: why it gave none, when it failed on the row;
- ``<metric>/judge/<name>/calls`` and ``/tokens``: what it cost on the row (tokens when the model reports them);
- ``<metric>/judges_failed`` and ``<metric>/panel``: how many judges failed on the row, and in words
  which, with the number whose votes made the verdict.

A judge that fails on a row (errors, or answers no parser reads) is a recorded failure of that judge
on that row; the verdict is the other judges'. Every judge failing is the row's judge failure (NaN,
``<metric>/failed``), as for a single judge. What a panel is worth (accuracy, error correlation,
effective number of independent votes, the cheapest subset) is ``lf.panel_report(result)``
(``levelfield._core.stats.panel``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.errors import MetricError
from .client import Judge, resolve_judge

__all__ = ["PanelJudge", "resolve_panel", "judge_name"]

_HOW = "give judges=[judge_a, judge_b, ...] (two or more different judges) or judges={'name': judge, ...}"


@dataclass(frozen=True)
class PanelJudge:
    """One judge of a panel and the name its columns carry."""

    name: str
    judge: Judge


def judge_name(judge: Judge) -> str:
    """A short name for a judge's columns: its ``provider:model`` string, its model's name, or its function's or agent's name."""
    if judge.spec:
        return judge.spec
    model = judge.model
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    if isinstance(name, str) and name:
        return name
    target = getattr(model, "_target", None)  # a TextJudge: the function or agent it asks
    if target is not None:
        name = getattr(target, "__name__", None) or getattr(target, "name", None)
        if isinstance(name, str) and name:
            return name
        return type(target).__name__
    return judge.label


def resolve_panel(judges: Any, *, metric: str, judge: Any, **settings: Any) -> tuple[PanelJudge, ...]:
    """The panel ``judges=`` names, each judge resolved with the metric's settings; bad panels are errors saying how to fix them."""
    owner = f"metric {metric!r}"
    if judge is not None:
        raise MetricError(f"{owner}: give judge= (one judge) or judges= (a panel), not both; "
                          "put the single judge into the panel's list to add it")
    if isinstance(judges, Mapping):
        items = []
        for key, value in judges.items():
            if not isinstance(key, str) or not key.strip():
                raise MetricError(f"{owner}: judges={{...}} needs a non-empty name for each judge, got {key!r}")
            items.append((key.strip(), value))
    elif isinstance(judges, (str, bytes)) or not isinstance(judges, (Sequence, set, frozenset, tuple)):
        raise MetricError(f"{owner}: judges= must be a list of judges or {{name: judge}}, got {type(judges).__name__}; "
                          f"for one judge use judge=; {_HOW}")
    else:
        items = [(None, value) for value in judges]  # type: ignore[misc]  # unnamed: each judge's own name is used
    if not items:
        raise MetricError(f"{owner}: judges= is empty; {_HOW}, or judge= for one judge")
    resolved: list[tuple[str, Judge]] = []
    seen: dict[str, int] = {}
    for i, (name, value) in enumerate(items):
        where = f"judges[{i}]" if name is None else f"judges[{name!r}]"
        if value is None:
            raise MetricError(f"{owner}: {where} is None; {_HOW}")
        made = resolve_judge(value, metric=metric, **settings)
        if made.identity in seen:
            first = seen[made.identity]
            raise MetricError(
                f"{owner}: {where} is the same judge as judges[{first}] ({made.label}, same model and settings); "
                "a panel needs different judges. Remove one, or ask one judge several times with judge_config=lf.JudgeConfig(samples=...)")
        seen[made.identity] = i
        label = name if name is not None else judge_name(made)
        if "/" in label:
            if name is not None:
                raise MetricError(f"{owner}: judge name {name!r} has a '/', which separates column names; rename it")
            label = label.replace("/", "_")
        resolved.append((label, made))
    names: dict[str, int] = {}
    for i, (label, _) in enumerate(resolved):
        if label in names:
            raise MetricError(
                f"{owner}: judges[{names[label]}] and judges[{i}] are both called {label!r}; "
                f"name them: judges={{'{label}_a': ..., '{label}_b': ...}}")
        names[label] = i
    return tuple(PanelJudge(label, made) for label, made in resolved)
