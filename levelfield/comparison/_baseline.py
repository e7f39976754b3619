"""Saved runs as an agent: a baseline joins a comparison without being run again.

A baseline is the ``--out`` folder of ``levelfield eval``/``compare`` (or an ``EvalResult``, or
a one-agent ``Comparison``). Its runs are paired with the new runs by case id and trial, and
re-scored with the comparison's metrics from their saved outputs against the current dataset,
so both sides are scored by the same code against the same references; judged metrics keep
their saved scores (no second judge bill) unless the baseline lacks them. Cases found on one side
only are listed in :attr:`Baseline.missing_cases` and :attr:`Baseline.extra_cases`, never
silently dropped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core.data.dataset import EvalDataset
from .._core.errors import ConfigError, ConfigTypeError, LevelfieldError, RecordError
from .._core.results.provenance import evaluators_of
from .._core.results.result import EvalResult
from .._core.results.resume import levelling_changes
from .._core.score.batch.runs import RunScorer
from .._core.score.metrics.base import Metric
from ._comparability import check_evaluators
from ._comparison import Comparison

__all__ = ["Baseline", "load_baseline", "prepare_baseline"]


@dataclass
class Baseline:
    """A baseline's runs, ready to join a comparison as the agent ``name``."""

    name: str
    result: EvalResult
    source: str
    """Where the runs came from: a folder, or ``EvalResult``."""
    missing_cases: list[str] = field(default_factory=list)
    """Dataset cases the baseline has no run for (left out of every paired test)."""
    extra_cases: list[str] = field(default_factory=list)
    """Cases the baseline ran that the dataset no longer has (left out)."""
    trials: int = 1
    """Trials per case the baseline ran."""
    compared_trials: int = 1
    """Trials per case of the comparison it joined (baseline trials beyond these are left out)."""
    evaluator_notes: list[str] = field(default_factory=list)
    """What differs between the evaluators of the baseline's kept scores and this run's, when compared
    anyway (``allow_different_evaluators=True``); and metrics whose evaluator it does not record."""

    def describe(self) -> str:
        """One line on how the baseline pairs with the dataset: what is missing and what is extra."""
        parts = [f"baseline {self.name!r} from {self.source}"]
        if self.missing_cases:
            parts.append(f"no run for {len(self.missing_cases)} case(s): {_few(self.missing_cases)}")
        if self.extra_cases:
            parts.append(f"{len(self.extra_cases)} case(s) not in the dataset, left out: {_few(self.extra_cases)}")
        if not self.missing_cases and not self.extra_cases:
            parts.append("every case paired")
        if self.trials > self.compared_trials:
            parts.append(f"it ran {self.trials} trials per case; the first {self.compared_trials} are compared")
        elif self.trials < self.compared_trials:
            parts.append(f"it ran {self.trials} trial(s) per case against {self.compared_trials}; cases pair on their means")
        return "; ".join(parts)


def _few(ids: Sequence[str], k: int = 5) -> str:
    shown = ", ".join(ids[:k])
    return shown + (f" and {len(ids) - k} more" if len(ids) > k else "")


def load_baseline(source: Any, *, name: str | None = None) -> tuple[str, EvalResult, str]:
    """``(name, result, source)`` of a baseline given as a saved folder, an ``EvalResult``, a
    one-agent ``Comparison``, or ``{name: one of those}``."""
    if isinstance(source, Mapping):
        if len(source) != 1:
            raise ConfigError(f"baseline={{...}} names one baseline, got {len(source)}: {', '.join(map(str, source))}")
        [(key, value)] = source.items()
        return load_baseline(value, name=str(key))
    if isinstance(source, (str, os.PathLike)):
        directory = Path(source)
        if not directory.is_dir():
            raise ConfigError(
                f"baseline {str(source)!r}: no such folder; give the --out folder of an earlier levelfield eval or compare"
            )
        try:
            saved = Comparison.load(directory)
        except LevelfieldError as exc:
            raise RecordError(f"baseline {directory}: {exc}") from None
        _, result, _ = load_baseline(saved, name=name or directory.resolve().name)
        return name or directory.resolve().name, result, str(directory)
    if isinstance(source, Comparison):
        # A folder saved by a run that had a baseline holds that baseline too: the run is the other agent.
        candidates = [a for a in source.agents if a != getattr(source, "saved_baseline", None)]
        if len(candidates) == 1 and len(source.agents) > 1:
            return name or candidates[0], source.results[candidates[0]], "a comparison"
        if len(source.agents) != 1:
            raise ConfigError(
                f"the baseline holds {len(source.agents)} agents ({', '.join(source.agents)}); pick one: "
                f"baseline={{'main': Comparison.load(folder).results['{source.agents[0]}']}}"
            )
        [(agent, result)] = source.results.items()
        return name or agent, result, "a comparison"
    if isinstance(source, EvalResult):
        return name or source.agent_name or "baseline", source, "an EvalResult"
    raise ConfigTypeError(
        f"baseline: expected a saved run folder, an EvalResult or a Comparison, got {type(source).__name__}"
    )


async def prepare_baseline(
    source: Any, dataset: EvalDataset, metrics: Sequence[Metric], *, taken: Sequence[str] = (), trials: int = 1,
    tools: Mapping[str, Any] | None = None, allow_different_evaluators: bool = False,
) -> Baseline:
    """Load a baseline, keep its runs of the dataset's cases and score them with ``metrics``.

    ``taken``: names of the agents it joins; the baseline's name must differ from them.
    ``trials``: trials per case of the comparison it joins.
    ``tools``: the comparison's tool levelling (``levelfield.tools``); a baseline whose runs met
    another cassette or fault schedule is refused, naming what differs.
    ``allow_different_evaluators``: a baseline whose kept (judged) scores came from other evaluators
    (another judge, prompt, rubric set or metric version) is refused naming what differs, unless this is
    True: then it joins with a warning, and :attr:`Baseline.evaluator_notes` label the comparison.
    """
    name, saved, where = load_baseline(source)
    changes = levelling_changes(getattr(saved, "tools_header", None), tools)
    if changes:
        raise ConfigError(f"baseline {name!r} ({where}) ran with other tools than this comparison: "
                          f"{'; '.join(c.replace('the journal', 'the baseline') for c in changes)}; compare against "
                          "a baseline run with the same cassette and faults")
    if name in taken:
        raise ConfigError(
            f"the baseline is named {name!r} like an agent of this comparison; name it: baseline={{'main': ...}}"
        )
    ids = {c.case_id for c in dataset}
    runs, saved_scores, extra, seen = [], [], [], set()
    for run, scores in zip(saved.runs, saved.row_scores):
        if run.case_id in ids:
            runs.append(run.model_copy(update={"agent_name": name}))
            saved_scores.append(scores)
            seen.add(run.case_id)
        elif run.case_id not in extra:
            extra.append(run.case_id)
    missing = [c.case_id for c in dataset if c.case_id not in seen]
    # Sync metrics are cheap and re-scored so both sides use the same code and references; a
    # judged (async) metric keeps its saved scores when every kept run has one.
    keep = [m for m in metrics if getattr(m, "is_async", False) and runs and all(m.name in s for s in saved_scores)]
    rescore = [m for m in metrics if m not in keep]
    # Kept scores were given by the baseline's evaluators: they must be this run's, or the comparison is labelled.
    saved_evaluators = saved.evaluators
    notes = check_evaluators(saved_evaluators, evaluators_of(keep), [m.name for m in keep],
                             allow=allow_different_evaluators, what=f"baseline {name!r} ({where})") if keep else []
    fresh = await RunScorer(dataset, rescore).scores(runs) if rescore else [{} for _ in runs]
    rows = [{m.name: (new[m.name] if m.name in new else old[m.name]) for m in metrics if m.name in new or m.name in old}
            for old, new in zip(saved_scores, fresh)]
    result = EvalResult(dataset, runs, rows, metrics, agent_name=name)
    result._evaluators = {**evaluators_of(rescore), **{m.name: saved_evaluators[m.name] for m in keep if m.name in saved_evaluators}}
    ran = max((r.trial for r in runs), default=0) + 1
    return Baseline(name, result, where, missing, extra, ran, trials, notes)
