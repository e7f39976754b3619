"""The pairwise judged metric: a judge compares two agents' work on the same case, in both orders by default.

A verdict that flips with the order is position bias: scored a tie and reported (``position_bias``).
It is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._core.errors import MetricError
from .._core.score.metrics.base import NAN, Score, ScoringContext
from .answers import parse_preference
from .client import JudgeReply
from .config import JudgeConfig, refuse_judge_keywords
from .metrics import JudgedMetric, Reading, aggregate
from .prompts import (
    PairwiseMetricPromptTemplate,
    answer_format,
    answer_schema,
    expected_json,
    pairwise_template,
    required_fields,
    row_value,
)

if TYPE_CHECKING:
    import pandas as pd

    from .._core.results.result import EvalResult

__all__ = ["PairwiseMetric"]

_PREFERENCE_VALUE = {"A": 1.0, "B": 0.0, "tie": 0.5}


class PairwiseMetric(JudgedMetric):
    """A judge model compares two agents' work on the same case: 1 = A better, 0 = B better, 0.5 = tie.

    By default (``both_orders=True``) every case is judged in both orders, A shown first and B
    shown first (each ``judge_config.samples`` times), and the verdicts are turned back to A's point of view.
    When the two orders disagree, the judge preferred a position, not an agent: the pair is
    scored a tie (0.5), never the verdict of one order, and ``<metric>/position_bias`` is True
    (False when the orders agree); :meth:`summarize` counts those cases. A tie rather than NaN, so
    a case the judge cannot tell apart still counts in the win rates instead of silently leaving
    them. ``<metric>/orders`` holds each order's verdict (``A``, ``B`` or ``tie``, from A's view).
    With ``both_orders=False`` one order is shown per sample, decided per case by a seeded hash
    (reproducible, about half the cases each way) and alternating across samples.
    Use :meth:`ascore_pair` on two scoring contexts of one case, or :meth:`compare_results` on two
    ``EvalResult``s of one dataset. It is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
    """

    def __init__(
        self,
        metric: str = "pairwise_preference",
        metric_prompt_template: PairwiseMetricPromptTemplate | str | None = None,
        judge: Any = None,
        *,
        seed: int = 0,
        both_orders: bool = True,
        judge_config: JudgeConfig | None = None,
        **moved: Any,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PairwiseMetric needs a metric name, got {metric!r}")
        refuse_judge_keywords(f"PairwiseMetric {metric!r}", moved)
        self.name = metric
        owner = f"PairwiseMetric {metric!r}"
        self.metric_prompt_template = pairwise_template(metric_prompt_template, owner)
        self.seed = seed
        self.both_orders = both_orders
        template = self.metric_prompt_template
        self.requires = required_fields([*template.case_variables, *template.agent_variables])
        self._schema = answer_schema("winner", ["A", "B", "tie"], "Which agent did better.")
        self._answer_format = answer_format("winner", ["A", "B", "tie"])
        self.expected_answer = expected_json("winner", ["A", "B", "tie"], example="A")
        self._setup_judging(judge, judge_config)

    def swapped(self, key: str, sample: int = 0) -> bool:
        """Whether agent B is shown first for this case key and sample (seeded, reproducible)."""
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return bool((digest[0] & 1) ^ (sample & 1))

    def render(self, a: ScoringContext, b: ScoringContext, *, swapped: bool = False) -> str:
        """The prompt the judge sees, with ``b`` shown first when ``swapped``."""
        template = self.metric_prompt_template
        case = {n: row_value(a, n, self.name) for n in template.case_variables}
        first, second = (b, a) if swapped else (a, b)
        shown = [{n: row_value(ctx, n, self.name) for n in template.agent_variables} for ctx in (first, second)]
        return f"{template.render(case, shown[0], shown[1])}\n\n{self._answer_format}"

    def read(self, reply: JudgeReply) -> Reading | None:
        """The preference in one judge answer, as shown (1 = the agent shown first), or None when it names no winner."""
        found = parse_preference(reply.text, reply.parsed)
        return None if found is None else (_PREFERENCE_VALUE[found[0]], found[1])

    def _missing(self, a: ScoringContext, b: ScoringContext) -> str | None:
        for label, ctx in (("A", a), ("B", b)):
            if ctx.failure:
                return f"agent {label}'s run failed; nothing to compare"
            lacking = [f for f in self.requires if getattr(ctx, f) is None]
            if lacking:
                return f"agent {label}'s row has no {', '.join(lacking)}"
        return None

    async def ascore_pair(self, a: ScoringContext, b: ScoringContext, *, key: str | None = None) -> Score:
        """Judge agent A's row against agent B's row of the same case: 1 A better, 0 B better, 0.5 tie.

        ``key`` (default: the case id) seeds which agent is shown first. A failed run or a row
        lacking a field the template needs gives NaN (not a judge failure).
        """
        reason = self._missing(a, b)
        if reason is not None:
            return Score(NAN, explanation=reason)
        key = key if key is not None else a.case_id
        if self.both_orders:
            first = self.swapped(key)
            orders = [first, not first] * self.num_samples
        else:
            orders = [self.swapped(key, i) for i in range(self.num_samples)]
        replies = await self.ask([self.render(a, b, swapped=s) for s in orders], self._schema, self.read)
        readings: list[Reading | None] = []
        for reply, swapped in zip(replies, orders):
            shown = self.read(reply) if reply.error is None else None
            # When swapped, the agent shown first was agent B: turn the verdict back to A's view.
            readings.append(None if shown is None else ((1.0 - shown[0]) if swapped else shown[0], shown[1]))
        score = self.verdict(replies, readings)
        score.extra["swapped"] = orders[0]
        if self.both_orders:
            _judge_position(score, orders, readings)
        return score

    def score_pair(self, a: ScoringContext, b: ScoringContext, *, key: str | None = None) -> Score:
        """Sync twin of :meth:`ascore_pair`."""
        from .._core.run.threads import run_coroutine

        return run_coroutine(self.ascore_pair(a, b, key=key))

    async def acompare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Async twin of :meth:`compare_results`."""
        import pandas as pd

        from .._core.score.scoring import context_for

        def rows(result: EvalResult) -> dict[tuple[str, int], ScoringContext]:
            cases = {c.case_id: c for c in result.dataset}
            out: dict[tuple[str, int], ScoringContext] = {}
            for run in result.runs:
                case = cases[run.case_id]
                # Saved predictions live on the case, not in a run output.
                out[(run.case_id, run.trial)] = context_for(case, None if result.scored_saved_predictions else run)
                out[(run.case_id, run.trial)].failure = run.failure
            return out

        side_a, side_b = rows(result_a), rows(result_b)
        only_a, only_b = sorted(set(side_a) - set(side_b)), sorted(set(side_b) - set(side_a))
        if only_a or only_b:
            raise MetricError(
                f"PairwiseMetric {self.name!r}: the two results do not cover the same cases and trials "
                f"(only in A: {only_a[:5]}, only in B: {only_b[:5]}); evaluate both agents on the same dataset"
            )
        keys = list(side_a)
        scores = await asyncio.gather(
            *(self.ascore_pair(side_a[k], side_b[k], key=f"{k[0]}#{k[1]}") for k in keys)
        )
        table_rows = []
        for (case_id, trial), score in zip(keys, scores):
            row: dict[str, Any] = {"case_id": case_id, "trial": trial}
            row.update(score.columns(self.name))
            table_rows.append(row)
        table = pd.DataFrame(table_rows)
        table.attrs["agents"] = (result_a.agent_name, result_b.agent_name)
        return table

    def compare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Judge every case (and trial) of two ``EvalResult``s of one dataset: one row each, ``<metric>/score`` 1 = A better.

        Columns: ``case_id``, ``trial``, ``<metric>/score``, ``/explanation``, ``/swapped``,
        ``/judge_latency``, ``/judge_calls``, ``/total_tokens`` (when known), ``/failed`` (when the
        judge failed on a row), written by :meth:`Score.columns` as every results table is.
        Summarize it with :meth:`summarize`.
        """
        from .._core.run.threads import run_coroutine

        return run_coroutine(self.acompare_results(result_a, result_b))

    def summarize(self, table: pd.DataFrame) -> dict[str, Any]:
        """Win rates of a :meth:`compare_results` table: ``<metric>/a_win_rate``, ``/b_win_rate``, ``/tie_rate``, ``/mean``,
        and, when judged in both orders, ``/position_bias_count`` (cases whose two orders disagreed, scored a tie)
        and ``/position_bias_rate`` (their share of the cases judged in both orders)."""
        import pandas as pd

        col = pd.to_numeric(table[f"{self.name}/score"], errors="coerce")
        judged = col.dropna()
        n = len(judged)

        def rate(mask: Any) -> float:
            return float(mask.sum() / n) if n else float("nan")

        out: dict[str, Any] = {
            "row_count": int(len(table)),
            f"{self.name}/mean": float(judged.mean()) if n else float("nan"),
            f"{self.name}/a_win_rate": rate(judged > 0.5),
            f"{self.name}/b_win_rate": rate(judged < 0.5),
            f"{self.name}/tie_rate": rate(judged == 0.5),
            f"{self.name}/nan_count": int(col.isna().sum()),
        }
        bias = table.get(f"{self.name}/position_bias")
        if bias is not None:
            known = bias.dropna()
            biased = int((known == True).sum())  # noqa: E712 (a column of True/False/None)
            out[f"{self.name}/position_bias_count"] = biased
            out[f"{self.name}/position_bias_rate"] = biased / len(known) if len(known) else float("nan")
        failed = table.get(f"{self.name}/failed")
        out[f"{self.name}/failure_count"] = int(failed.fillna(False).astype(bool).sum()) if failed is not None else 0
        tokens = table.get(f"{self.name}/total_tokens")
        if tokens is not None:
            out[f"{self.name}/total_tokens/sum"] = float(pd.to_numeric(tokens, errors="coerce").sum())
        return out

    def __repr__(self) -> str:
        return f"PairwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"


_LABEL = {1.0: "A", 0.0: "B", 0.5: "tie"}


def _judge_position(score: Score, orders: Sequence[bool], readings: Sequence[Reading | None]) -> None:
    """Each order's verdict (majority of its samples, from A's view) on ``score``; orders that disagree make it a tie.

    ``position_bias`` is True when they disagree, False when they agree, None when an order gave no
    readable verdict (then the score is the other order's, as :meth:`JudgedMetric.verdict` found it).
    """
    by_order: dict[bool, float] = {}
    for swapped in (False, True):
        values = [r[0] for r, s in zip(readings, orders) if s == swapped and r is not None]
        if values:
            by_order[swapped] = aggregate(values, "majority")[0]
    score.extra["orders"] = {
        "a_first": _LABEL.get(by_order.get(False, math.nan), by_order.get(False)),
        "b_first": _LABEL.get(by_order.get(True, math.nan), by_order.get(True)),
    }
    if len(by_order) < 2:
        score.extra["position_bias"] = None
        return
    biased = by_order[False] != by_order[True]
    score.extra["position_bias"] = biased
    if biased:
        score.value = 0.5
        score.explanation = (
            f"position bias: the judge preferred {score.extra['orders']['a_first']} with agent A shown first and "
            f"{score.extra['orders']['b_first']} with agent B shown first; scored a tie. {score.explanation or ''}"
        ).strip()
