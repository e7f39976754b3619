"""The verdict of pass/fail criteria on every case: each criterion's pooled score, pass or FAIL, and the table that shows them.

The criteria themselves (ADK's ``test_config.json``, read and checked) are
:mod:`levelfield._core.results.criteria`. Scores over trials are pooled as ADK pools them: every
turn of every trial counts once, and the mean is compared with the threshold. A run that failed
(raised, timed out) fails its case.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.textwidth import ljust, width
from ..errors import MetricError
from .criteria import Criterion, _every

if TYPE_CHECKING:
    from ..data.types import AgentRun
    from .result import EvalResult

__all__ = ["MetricVerdict", "CaseVerdict", "apply_criteria", "format_verdicts"]


@dataclass
class MetricVerdict:
    """How one case did on one criterion, over all its trials."""

    criterion: Criterion
    score: float
    """Mean over every scored turn of every successful trial; NaN when nothing could be scored."""
    per_trial: list[float] = field(default_factory=list)
    """The metric's score in each trial (NaN for a failed run)."""

    @property
    def evaluated(self) -> bool:
        return not math.isnan(self.score)

    @property
    def passed(self) -> bool:
        if self.criterion.informational:
            return True  # reported, never a reason to fail (as in ADK)
        # Unscorable counts as failing: a gate that cannot check something must not pass it.
        return self.evaluated and self.score >= self.criterion.threshold


@dataclass
class CaseVerdict:
    """Whether one case passed every criterion, and why not."""

    case_id: str
    metrics: dict[str, MetricVerdict]
    runs: list[AgentRun]
    scores: list[dict[str, Any]]
    """The score columns of each run, in the order of ``runs``."""

    @property
    def failed_runs(self) -> list[AgentRun]:
        return [r for r in self.runs if r.failure]

    @property
    def passed(self) -> bool:
        return not self.failed_runs and all(v.passed for v in self.metrics.values())

    @property
    def reasons(self) -> list[str]:
        """One line per reason the case failed."""
        out = [f"trial {r.trial + 1} failed ({r.error_type}): {r.error}" for r in self.failed_runs]
        for name, v in self.metrics.items():
            if v.criterion.informational:
                continue
            if not v.evaluated:
                if len(self.failed_runs) < len(self.runs):
                    out.append(f"{name} could not be computed (no reference for it in this case)")
            elif not v.passed:
                out.append(f"{name} {v.score:.3f} < {v.criterion.threshold:g}")
        return out


def _pooled(column: dict[str, Any], name: str) -> list[float]:
    per_turn = column.get(f"{name}/per_turn")
    values = per_turn if isinstance(per_turn, list) else [column.get(f"{name}/score")]
    return [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def apply_criteria(
    result: EvalResult, criteria: Sequence[Criterion] | Mapping[str, Sequence[Criterion]]
) -> list[CaseVerdict]:
    """Every case's pass/fail verdict under its thresholds, in dataset order.

    ``criteria`` is one list for every case, or ``{case_id: [Criterion, ...]}`` when cases are
    held to different criteria (one ``test_config.json`` per folder). ``result`` must hold the
    criteria's scores (evaluate with :func:`criteria_metrics`).
    """
    missing = sorted({c.score_name for c in _every(criteria) if c.score_name not in result.metric_names})
    if missing:
        raise MetricError(f"the result has no scores for {', '.join(missing)}; evaluate with criteria_metrics(criteria)")
    grouped: dict[str, list[tuple[AgentRun, dict[str, Any]]]] = {c.case_id: [] for c in result.dataset}
    for run, scores in zip(result.runs, result.scores):
        grouped.setdefault(run.case_id, []).append((run, scores))
    verdicts = []
    for case_id, pairs in grouped.items():
        metrics = {}
        for criterion in criteria.get(case_id, []) if isinstance(criteria, Mapping) else criteria:
            pooled: list[float] = []
            per_trial = []
            for run, scores in pairs:
                value = scores.get(f"{criterion.score_name}/score")
                per_trial.append(float(value) if value is not None else math.nan)
                if not run.failure:
                    pooled.extend(_pooled(scores, criterion.score_name))
            score = sum(pooled) / len(pooled) if pooled else math.nan
            metrics[criterion.metric] = MetricVerdict(criterion, score, per_trial)
        verdicts.append(
            CaseVerdict(case_id, metrics, [r for r, _ in pairs], [s for _, s in pairs])
        )
    return verdicts


def format_verdicts(verdicts: Sequence[CaseVerdict], criteria: Sequence[Criterion]) -> str:
    """A plain-text table: one row per case, each criterion's pooled score and pass/FAIL, failed runs and PASS/FAIL.

    With per-file criteria, give every distinct criterion; a case shows ``-`` under the ones it
    is not held to. With many criteria, too many for one line, each case is a block instead: one
    line per criterion.
    """
    def label(c: Criterion) -> str:
        return f"{c.metric}{'' if c.column is None else ' ' + c.column[len(c.metric):]} " + (
            "(info)" if c.informational else f"(>= {c.threshold:g})"
        )

    def cell(v: CaseVerdict, c: Criterion) -> str:
        m = v.metrics.get(c.metric)
        if m is None or m.criterion != c:
            return "-"  # this case is held to another criterion (another test_config.json)
        mark = "" if m.criterion.informational or not m.evaluated else (" pass" if m.passed else " FAIL")
        return (f"{m.score:.3f}" if m.evaluated else "n/a") + mark

    passed = sum(v.passed for v in verdicts)
    footer = f"\n{passed} of {len(verdicts)} cases passed"
    gating = [c for c in criteria if not c.informational]
    informational = [c for c in criteria if c.informational]
    if informational and gating and len(gating) <= _WIDE:
        # The gate's table as without them, then what each case cost per turn (never a reason to fail).
        table = format_verdicts(verdicts, gating)
        head, _, tail = table.rpartition("\n")
        return f"{head.rstrip()}\n\n{_efficiency_table(verdicts, informational)}\n\n{tail}"
    if len(criteria) > _WIDE:
        label_w = max(len(label(c)) for c in criteria)
        blocks = []
        for v in verdicts:
            lines = [f"{v.case_id}: {'PASS' if v.passed else 'FAIL'} ({len(v.failed_runs)}/{len(v.runs)} runs failed)"]
            lines += [f"  {label(c):<{label_w}}  {cell(v, c)}" for c in criteria]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks) + "\n" + footer
    header = ["case", *[label(c) for c in criteria], "failed runs", "result"]
    rows = [[v.case_id, *[cell(v, c) for c in criteria], f"{len(v.failed_runs)}/{len(v.runs)}", "PASS" if v.passed else "FAIL"]
            for v in verdicts]
    # Case ids may be Chinese or Japanese: pad to the columns they take, not their length.
    widths = [max(width(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(ljust(str(c), w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    return "\n".join(lines) + footer


def _efficiency_table(verdicts: Sequence[CaseVerdict], criteria: Sequence[Criterion]) -> str:
    """Each case's informational criteria, averaged per turn: ``efficiency per turn (informational)``."""
    def cell(v: CaseVerdict, c: Criterion) -> str:
        m = v.metrics.get(c.metric)
        return "-" if m is None else (f"{m.score:.3f}" if m.evaluated else "n/a")

    header = ["efficiency per turn (info)", *[c.metric for c in criteria]]
    rows = [[v.case_id, *[cell(v, c) for c in criteria]] for v in verdicts]
    widths = [max(width(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(ljust(str(c), w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


_WIDE = 4
"""More criteria than this are shown a case at a time, a line per criterion, rather than one wide table."""
