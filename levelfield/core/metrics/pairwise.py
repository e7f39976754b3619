"""The pairwise judged metric: a judge model compares two agents' work on the same case and says which did better.

:class:`PairwiseMetric` scores one pair of rows (1 = A better, 0 = B better, 0.5 = tie), showing
the agents in a seeded, per-case order to counter the judge's position bias; it also compares the
two ``EvalResult`` objects of one dataset case by case into a table, and summarizes that table as
win rates. It is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import TYPE_CHECKING, Any

from ..errors import MetricError
from .base import NAN, Score, ScoringContext
from .judge_answers import _aggregate, _answer_format, _cost_columns, _schema, parse_preference
from .judge_client import JudgeCache
from .judge_prompts import _OPTIONAL_FIELDS, PairwiseMetricPromptTemplate, _FreeformPairwiseTemplate, _row_value
from .judged_base import _Judging

if TYPE_CHECKING:
    import pandas as pd

    from ..results import EvalResult

__all__ = ["PairwiseMetric"]


class PairwiseMetric(_Judging):
    """A judge model compares two agents' work on the same case: 1 = A better, 0 = B better, 0.5 = tie.

    Which agent is shown first is decided per case by a seeded hash (reproducible, about half the
    cases each way) and alternates across ``num_samples``, to counter the judges' position bias;
    ``num_samples=2`` shows every case in both orders. Use :meth:`ascore_pair` on two scoring
    contexts of one case, or :meth:`compare_results` on two ``EvalResult``s of one dataset.
    It is not a per-row metric, so ``evaluate(metrics=[...])`` does not take it.
    """

    def __init__(
        self,
        metric: str = "pairwise_preference",
        metric_prompt_template: PairwiseMetricPromptTemplate | str | None = None,
        judge: Any = None,
        *,
        num_samples: int = 1,
        seed: int = 0,
        cache: bool | str | os.PathLike[str] | JudgeCache = True,
        max_concurrency: int = 8,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float | None = 120.0,
        structured_output: bool | None = None,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise MetricError(f"PairwiseMetric needs a metric name, got {metric!r}")
        self.name = metric
        owner = f"PairwiseMetric {metric!r}"
        if metric_prompt_template is None:
            metric_prompt_template = PairwiseMetricPromptTemplate()
        if isinstance(metric_prompt_template, str):
            self.metric_prompt_template: PairwiseMetricPromptTemplate | _FreeformPairwiseTemplate = (
                _FreeformPairwiseTemplate(metric_prompt_template, owner)
            )
        elif isinstance(metric_prompt_template, PairwiseMetricPromptTemplate):
            self.metric_prompt_template = metric_prompt_template
        else:
            raise MetricError(
                f"{owner}: metric_prompt_template must be a PairwiseMetricPromptTemplate or a str, "
                f"got {type(metric_prompt_template).__name__}"
            )
        self.seed = seed
        template = self.metric_prompt_template
        self.requires = tuple(
            v for v in [*template.case_variables, *template.agent_variables] if v in _OPTIONAL_FIELDS
        )
        self._schema = _schema("winner", ["A", "B", "tie"], "Which agent did better.")
        self._answer_format = _answer_format("winner", ["A", "B", "tie"])
        self._setup_judging(
            judge,
            num_samples=num_samples,
            cache=cache,
            max_concurrency=max_concurrency,
            retries=retries,
            backoff=backoff,
            timeout=timeout,
            structured_output=structured_output,
        )

    def swapped(self, key: str, sample: int = 0) -> bool:
        """Whether agent B is shown first for this case key and sample (seeded, reproducible)."""
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return bool((digest[0] & 1) ^ (sample & 1))

    def render(self, a: ScoringContext, b: ScoringContext, *, swapped: bool = False) -> str:
        """The prompt the judge sees, with ``b`` shown first when ``swapped``."""
        template = self.metric_prompt_template
        case = {n: _row_value(a, n, self.name) for n in template.case_variables}
        first, second = (b, a) if swapped else (a, b)
        shown = [{n: _row_value(ctx, n, self.name) for n in template.agent_variables} for ctx in (first, second)]
        return f"{template.render(case, shown[0], shown[1])}\n\n{self._answer_format}"

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
        orders = [self.swapped(key, i) for i in range(self.num_samples)]
        prompts = [self.render(a, b, swapped=s) for s in orders]
        replies = await self._ask_all(prompts, self._schema)
        extra, usage = _cost_columns(replies)
        extra["swapped"] = orders[0]
        good: list[tuple[float, str]] = []
        for reply, swapped in zip(replies, orders):
            if reply.error is not None:
                continue
            read = parse_preference(reply.text, reply.parsed)
            if read is None:
                continue
            choice, explanation = read
            value = {"A": 1.0, "B": 0.0, "tie": 0.5}[choice]
            if swapped:  # the agent shown as "A" was agent B
                value = 1.0 - value
            good.append((value, explanation))
        if self.num_samples > 1:
            extra["samples_failed"] = len(replies) - len(good)
        if not good:
            first = replies[0]
            if first.error is not None:
                extra["error"] = first.error
            explanation = f"judge error: {first.error}" if first.error is not None else (first.text or "(empty answer)")
            return Score(NAN, explanation=explanation, extra=extra, failed=True, usage=usage)
        value, agreement = _aggregate([v for v, _ in good], "majority")
        if self.num_samples > 1:
            extra["agreement"] = agreement
        explanation = min(good, key=lambda g: abs(g[0] - value))[1]
        return Score(value, explanation=explanation, extra=extra, usage=usage)

    def score_pair(self, a: ScoringContext, b: ScoringContext, *, key: str | None = None) -> Score:
        """Sync twin of :meth:`ascore_pair`."""
        from ..runner import run_coroutine

        return run_coroutine(self.ascore_pair(a, b, key=key))

    async def acompare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Async twin of :meth:`compare_results`."""
        import pandas as pd

        from ..scoring import context_for

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
            row.update(_score_columns(self.name, score))
            table_rows.append(row)
        table = pd.DataFrame(table_rows)
        table.attrs["agents"] = (result_a.agent_name, result_b.agent_name)
        return table

    def compare_results(self, result_a: EvalResult, result_b: EvalResult) -> pd.DataFrame:
        """Judge every case (and trial) of two ``EvalResult``s of one dataset: one row each, ``<metric>/score`` 1 = A better.

        Columns: ``case_id``, ``trial``, ``<metric>/score``, ``/explanation``, ``/swapped``,
        ``/judge_latency``, ``/judge_calls``, ``/total_tokens`` (when known), ``/failed``.
        Summarize it with :meth:`summarize`.
        """
        from ..runner import run_coroutine

        return run_coroutine(self.acompare_results(result_a, result_b))

    def summarize(self, table: pd.DataFrame) -> dict[str, Any]:
        """Win rates of a :meth:`compare_results` table: ``<metric>/a_win_rate``, ``/b_win_rate``, ``/tie_rate``, ``/mean``."""
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
        failed = table.get(f"{self.name}/failed")
        out[f"{self.name}/failure_count"] = int(failed.fillna(False).astype(bool).sum()) if failed is not None else 0
        tokens = table.get(f"{self.name}/total_tokens")
        if tokens is not None:
            out[f"{self.name}/total_tokens/sum"] = float(pd.to_numeric(tokens, errors="coerce").sum())
        return out

    def __repr__(self) -> str:
        return f"PairwiseMetric(metric={self.name!r}, judge={self.judge!r}, num_samples={self.num_samples})"


def _score_columns(name: str, score: Score) -> dict[str, Any]:
    """A score as ``<name>/...`` columns, the way the scoring engine writes them."""
    cols: dict[str, Any] = {f"{name}/score": score.value}
    if score.explanation is not None:
        cols[f"{name}/explanation"] = score.explanation
    for key, value in score.extra.items():
        cols[f"{name}/{key}"] = value
    cols[f"{name}/failed"] = bool(score.failed)
    if score.usage is not None:
        cols[f"{name}/total_tokens"] = score.usage.total_tokens
    return cols
