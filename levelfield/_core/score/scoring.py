"""Scoring one row with every metric; a metric that cannot score a row gives NaN, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..data.cost_limit import CostLimit
from ..data.dataset import EvalCase
from ..data.prices import usage_cost
from ..data.types import AgentOutput, AgentRun, ToolCall, Usage, transcript_text
from ..errors import exception_text
from .matching import Alignment, align, align_keys
from .metrics.base import NAN, Metric, Score, ScoringContext, TurnContext
from .metrics.trajectory import _BUILT_IN, _TrajectoryMetric

__all__ = ["context_for", "conversation_context", "score_sync", "score_async", "order_like", "split_metrics", "run_spend",
           "explain_scores", "explain_run", "RunExplainer"]


def reference_text(reference: Any) -> str | None:
    """What text metrics and judges compare: the reference's text (a dataset keeps ``42`` a number)."""
    return reference if reference is None or isinstance(reference, str) else str(reference)


def _saved_turns(case: EvalCase) -> list[TurnContext]:
    turns = [
        TurnContext(
            prompt=t.prompt,
            reference=reference_text(t.reference),
            reference_trajectory=t.reference_trajectory,
            response=t.response,
            predicted_trajectory=list(t.predicted_trajectory or []),
            reference_thoughts=t.reference_thoughts,
        )
        for t in case.turns
    ]
    if turns and not any(t.has_prediction for t in case.turns) and (
        case.response is not None or case.predicted_trajectory is not None
    ):
        # Only a case-level answer was saved: it is the last turn's, as a live run's output is.
        turns[-1].response = case.response
        turns[-1].predicted_trajectory = list(case.predicted_trajectory or [])
    return turns


def _run_turns(case: EvalCase, run: AgentRun) -> list[TurnContext]:
    outputs: list[AgentOutput | None] = [*run.turns] if run.turns else ([run.output] if len(case.turns) == 1 else [])
    turns = []
    for i, t in enumerate(case.turns):
        got = outputs[i] if i < len(outputs) else None
        turns.append(
            TurnContext(
                prompt=t.prompt,
                reference=reference_text(t.reference),
                reference_trajectory=t.reference_trajectory,
                response=got.response if got is not None else None,
                predicted_trajectory=list(got.trajectory) if got is not None else [],
                reference_thoughts=t.reference_thoughts,
                **_costs(got),
            )
        )
    return turns


def _costs(out: AgentOutput | None) -> dict[str, Any]:
    """What one turn's output recorded besides its answer: tokens, model calls, texts before the answer, its time."""
    if out is None:
        return {}
    return {"usage": out.usage, "model_calls": out.model_calls, "inner_model_calls": out.inner_model_calls,
            "intermediate_responses": list(out.intermediate_responses), "duration_seconds": out.duration_seconds}


def context_for(case: EvalCase, run: AgentRun | None) -> ScoringContext:
    """The scoring context of one case: the saved prediction when ``run`` is None, else the run's output.

    A multi-turn case gets one :class:`TurnContext` per turn, from the run's per-turn outputs or
    from the answers saved on each turn, so saved and live multi-turn cases score alike.
    """
    if run is not None and run.conversation is not None and case.conversation_scenario is not None:
        return conversation_context(case, run)
    if run is None:
        response, trajectory, failure = case.response, case.predicted_trajectory or [], bool(
            case.metadata.get("failure") in (True, 1, "1", "true", "True")
        )
        turns = _saved_turns(case)
        retrieved = case.retrieved_context
        handoffs, state, usage, model_calls = list(case.predicted_handoffs or []), case.final_state, None, None
    else:
        out = run.output
        response = out.response if out is not None else None
        trajectory = out.trajectory if out is not None else []
        failure = run.failure
        turns = _run_turns(case, run)
        retrieved = out.retrieved_context if out is not None else None
        handoffs = list(out.handoffs) if out is not None else []
        state = out.state if out is not None else None
        usage, model_calls = run_spend(run.turns or ([out] if out is not None else []))
    return ScoringContext(
        case_id=case.case_id,
        prompt=case.prompt,
        response=response,
        predicted_trajectory=list(trajectory),
        reference=reference_text(case.reference),
        reference_trajectory=case.reference_trajectory,
        history=list(case.history),
        metadata=case.metadata,
        failure=failure,
        turns=turns,
        reference_thoughts=case.reference_thoughts,
        retrieved_context=retrieved,
        expected_retrieved_context=case.expected_retrieved_context,
        handoffs=handoffs,
        reference_handoffs=case.reference_handoffs,
        state=state,
        usage=usage,
        model_calls=model_calls,
        inner_model_calls=_inner_model_calls(run.turns or ([run.output] if run.output is not None else [])) if run is not None else None,
        intermediate_responses=list(run.output.intermediate_responses) if run is not None and run.output is not None else [],
        duration_seconds=run.output.duration_seconds if run is not None and run.output is not None else None,
    )


def _inner_model_calls(outputs: Sequence[AgentOutput]) -> int | None:
    known = [o.inner_model_calls for o in outputs if o.inner_model_calls is not None]
    return sum(known) if known else None


def run_spend(outputs: Sequence[AgentOutput]) -> tuple[Usage | None, int | None]:
    """Tokens and model calls of a run's turns added up; None where no turn reported them."""
    usage: Usage | None = None
    model_calls: int | None = None
    for out in outputs:
        if out.usage is not None:
            usage = out.usage + usage
        if out.model_calls is not None:
            model_calls = (model_calls or 0) + out.model_calls
    return usage, model_calls


def conversation_context(case: EvalCase, run: AgentRun) -> ScoringContext:
    """The scoring context of a simulated conversation: the whole conversation is one row.

    ``predicted_trajectory`` is every call of every turn (a scenario's reference trajectory, when it
    gives one, is what the whole conversation should call); ``response`` is the agent's last
    answer; judges can read ``{conversation}``, ``{conversation_plan}``, ``{starting_prompt}``,
    ``{user_persona}`` and ``{turns_used}``. A simulator failure is not scored (NaN), like a failed run.
    """
    conv = run.conversation
    scenario = case.scenario
    assert conv is not None and scenario is not None
    outputs = run.turns or ([run.output] if run.output is not None else [])
    metadata = dict(case.metadata)
    metadata.update(
        conversation=transcript_text(conv.user_turns, outputs),
        conversation_plan=scenario.conversation_plan,
        starting_prompt=scenario.starting_prompt,
        user_persona=scenario.persona_text,
        turns_used=len(outputs),
        conversation_status=conv.status,
    )
    out = run.output
    dialogue = [
        TurnContext(prompt=user, response=o.response, predicted_trajectory=list(o.trajectory), **_costs(o))
        for user, o in zip(conv.user_turns, outputs)
    ]
    usage, model_calls = run_spend(outputs)
    return ScoringContext(
        dialogue=dialogue,
        intermediate_responses=list(out.intermediate_responses) if out is not None else [],
        case_id=case.case_id,
        prompt=scenario.starting_prompt,
        response=out.response if out is not None else None,
        predicted_trajectory=[call for o in outputs for call in o.trajectory],
        reference=reference_text(case.reference),
        reference_trajectory=case.reference_trajectory,
        history=list(case.history),
        metadata=metadata,
        failure=run.failure or conv.simulator_failure,
        handoffs=[h for o in outputs for h in o.handoffs],
        reference_handoffs=case.reference_handoffs,
        state=out.state if out is not None else None,
        usage=usage,
        model_calls=model_calls,
    )


def _failed(exc: BaseException) -> Score:
    return Score(NAN, failed=True, error=exception_text(exc))


_UNSCORED = Score(NAN)
"""The score of a metric that does not apply to a row (no reference, failed run)."""


def score_sync(ctx: ScoringContext, metrics: Sequence[Metric]) -> dict[str, Score]:
    """The scores of the sync metrics for one row, by metric name: each metric's own ``score`` (the
    per-metric API; the engine, ``levelfield._core.score.batch``, calls it for metrics that declare nothing better)."""
    row: dict[str, Score] = {}
    for metric in metrics:
        if not metric.computable(ctx):
            row[metric.name] = _UNSCORED
            continue
        try:
            row[metric.name] = Score.of(metric.score(ctx))
        except Exception as exc:  # a metric bug must not lose the run
            row[metric.name] = _failed(exc)
    return row


async def score_async(
    rows: Sequence[dict[str, Score]], contexts: Sequence[ScoringContext], metrics: Sequence[Metric], concurrency: int,
    budget: CostLimit | None = None, refused: Callable[[], Score] | None = None,
) -> None:
    """The judged (async) metrics' Scores of ``contexts``, into ``rows``, ``concurrency`` judge calls at once."""
    limit = asyncio.Semaphore(concurrency)

    async def one(metric: Metric, row: dict[str, Score], ctx: ScoringContext) -> None:
        if not metric.computable(ctx):
            row[metric.name] = _UNSCORED
            return
        async with limit:
            if budget is not None and not await budget.acquire(metric.name):
                row[metric.name] = refused() if refused is not None else Score(
                    NAN, failed=True, error=f"not judged: judge_max_cost_usd={budget.limit:g} was reached (resume with "
                    "a larger one to judge it)")
                return
            try:
                row[metric.name] = Score.of(await metric.ascore(ctx))
            except Exception as exc:
                row[metric.name] = _failed(exc)
            if budget is not None:
                budget.settle(metric.name, usage_cost(row[metric.name].usage, budget.prices))

    await asyncio.gather(*(one(m, r, c) for m in metrics for r, c in zip(rows, contexts)))


def order_like(row: dict[str, Score], metrics: Sequence[Metric]) -> dict[str, Score]:
    """``row`` with its metrics in the order of ``metrics`` (sync and async ones are scored apart)."""
    return {m.name: row[m.name] for m in metrics if m.name in row}


def split_metrics(metrics: Sequence[Metric]) -> tuple[list[Metric], list[Metric]]:
    """The sync metrics and the judged (async) ones, each in the given order."""
    sync = [m for m in metrics if not getattr(m, "is_async", False)]
    return sync, [m for m in metrics if getattr(m, "is_async", False)]


def explain_scores(ctx: ScoringContext, metrics: Sequence[Metric], scores: Mapping[str, Score]) -> dict[str, Score]:
    """``scores`` (one row's, by metric) with the explanations the engine leaves out (metrics it
    scores for a whole batch at once), from each metric's own ``score`` on this row; the numbers
    stay the engine's. Asked for one row at a time (``EvalResult.explain``, a report, a viewer)."""
    out = dict(scores)
    unexplained = [m for m in metrics if not getattr(m, "is_async", False) and m.name in out
                   and out[m.name].explanation is None and not out[m.name].failed and out[m.name].value == out[m.name].value]
    if unexplained:
        for name, scored in score_sync(ctx, unexplained).items():
            if scored.explanation is not None:
                value = out[name].value  # the engine's number; a copy of the Score only when it differs
                same = type(scored.value) is type(value) and scored.value == value
                out[name] = scored if same else replace(scored, value=value)
    return out



class RunExplainer:
    """:func:`explain_scores` of runs (the same Scores), for a table of them: without a scoring
    context or the calls matched again where the counts of an alignment say why (a trajectory
    that matches the reference, as most do), through ``explained`` of the built-in trajectory
    metrics; a call's match key is made once for the table. Every other explanation comes from the
    metric's own ``score``, as :func:`explain_scores` gives it."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = [m for m in metrics if not getattr(m, "is_async", False)]
        # Each metric with itself again when it is a trajectory metric (asked once, not a run).
        self._counted: list[tuple[Metric, _TrajectoryMetric | None]] = [
            (m, m if isinstance(m, _TrajectoryMetric) else None) for m in self.metrics]
        self._keys: dict[int, Any] = {}  # id(matcher) -> its CallKeys (equivalence matchers)

    def __call__(self, case: EvalCase, run: AgentRun, scores: Mapping[str, Score]) -> dict[str, Score]:
        out = dict(scores)
        rest: list[Metric] = []
        quick = not run.failure and case.reference_trajectory is not None and not (
            run.conversation is not None and case.conversation_scenario is not None)
        aligned: dict[int, Any] = {}
        for m, t in self._counted:
            score = out.get(m.name)
            if score is None or score.explanation is not None or score.failed or score.value != score.value:
                continue
            text = None
            if quick and t is not None:
                a = aligned.get(id(t.matcher))
                if a is None:
                    a = aligned[id(t.matcher)] = self._align(run, case, t.matcher)
                text = None if a is False else t.explained(a)
            if text is None:
                rest.append(m)
            else:
                out[m.name] = Score(score.value, text)
        return explain_scores(context_for(case, run), rest, out) if rest else out

    def many(self, rows: Iterable[tuple[EvalCase, AgentRun, Mapping[str, Score]]]) -> list[dict[str, Score]]:
        """What this explainer gives each of many runs (case, run, scores), in one pass: a run whose
        calls are written like its reference's, as most are, takes the texts of a full match made
        once a count of calls and metric; every other run is explained as one alone is."""
        # Each metric: its name, and the metric when its text of a full match comes from the counts
        # (a built-in trajectory metric of an equivalence matcher), else None.
        plan = [(m.name, t if t is not None and type(t) in _BUILT_IN and t.agent is None and t.matcher.is_equivalence else None)
                for m, t in self._counted]
        texts: dict[tuple[int, int], str | None] = {}  # (metric, calls) -> the text of a full match
        out: list[dict[str, Score]] = []
        for case, run, scores in rows:
            reference, output = case.reference_trajectory, run.output
            if (reference is None or run.failure or output is None or run.conversation is not None
                    or len(output.trajectory) != len(reference) or not _same_text(output.trajectory, reference)):
                out.append(self(case, run, scores))
                continue
            n = len(reference)
            row = dict(scores)
            for j, (name, m) in enumerate(plan):
                score = row.get(name)
                if score is None or score.explanation is not None or score.failed or score.value != score.value:
                    continue
                text = None
                if m is not None:
                    key = (j, n)
                    text = texts[key] if key in texts else texts.setdefault(key, m.explained(Alignment(n, n, n, True, True)))
                if text is None:  # not from the counts: as one run alone is
                    row = self(case, run, scores)
                    break
                row[name] = Score(score.value, text)
            out.append(row)
        return out

    def _align(self, run: AgentRun, case: EvalCase, matcher: Any) -> Any:
        """The alignment of the run's calls with the case's reference calls (False: it cannot be
        made, and the metric's own ``score`` says why, as it would have)."""
        predicted = run.output.trajectory if run.output is not None else []
        reference = case.reference_trajectory or []
        try:
            if not matcher.is_equivalence:
                return align(predicted, reference, matcher)
            if len(predicted) == len(reference) and _same_text(predicted, reference):
                # The calls the reference has, written alike: each matches its own (the keys
                # below are cached by this text, so they would come out equal), no call keyed.
                n = len(reference)
                return Alignment(n, n, n, True, True)
            keys = self._keys.get(id(matcher))
            if keys is None:
                from .batch.align import CallKeys

                keys = self._keys[id(matcher)] = CallKeys(matcher)
            return align_keys(keys.of_calls(predicted), keys.of_calls(reference))
        except Exception:  # noqa: BLE001
            return False


_dumps: Callable[..., bytes] | None
try:  # the fastest JSON we have; the standard library otherwise
    from orjson import dumps as _dumps
except ImportError:  # pragma: no cover - orjson ships with the 'parquet' and 'traces' extras
    _dumps = None


def _same_text(predicted: Sequence[ToolCall], reference: Sequence[ToolCall]) -> bool:
    """Whether two lists of calls write the same JSON text, call by call, as ``CallKeys`` writes
    them to cache their keys (False where it would not cache one: no orjson, a call not JSON, a
    null, which NaN and None both write)."""
    if _dumps is None:  # pragma: no cover - without orjson every call is keyed
        return False
    try:
        text = _dumps([(c.tool_name, c.tool_input) for c in predicted])
        return b"null" not in text and text == _dumps([(c.tool_name, c.tool_input) for c in reference])
    except TypeError:  # not JSON (an object an agent passed): keyed, as before
        return False


def explain_run(case: EvalCase, run: AgentRun, metrics: Sequence[Metric], scores: Mapping[str, Score]) -> dict[str, Score]:
    """:func:`explain_scores` of ``run`` of ``case`` (the same Scores), as :class:`RunExplainer` gives them."""
    return RunExplainer(metrics)(case, run, scores)
