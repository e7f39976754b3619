"""Databricks' judged agent-evaluation metrics, on levelfield's judge: any chat model as the judge.

    import levelfield as lf
    from levelfield.judge import databricks as dbx
    lf.evaluate("inference_table.parquet", metrics=[dbx.correctness(judge="openai:gpt-4o"),
                                                    dbx.groundedness(judge=my_model), "document_recall"])

Each is a :class:`~levelfield.metrics.PointwiseMetric` with a yes(1)/no(0) rubric over the
Databricks columns: ``correctness`` (the response against ``expected_facts``, else against
``expected_response``), ``groundedness`` (the response against ``retrieved_context``),
``relevance_to_query`` (the response against the request), ``chunk_relevance`` (the share of
retrieved chunks relevant to the request, one judge call per chunk) and ``guideline_adherence``
(the response against ``guidelines``). A row lacking what a metric needs is NaN, not a judge call.
The templates are module constants to read or copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._core.run.threads import run_coroutine
from .._core.score.metrics.base import NAN, Metric, Score, ScoringContext
from .._core.score.metrics.registry import register_metric_hint
from .metrics import PointwiseMetric
from .prompts import PointwiseMetricPromptTemplate

__all__ = [
    "CORRECTNESS_FACTS",
    "CORRECTNESS_RESPONSE",
    "GROUNDEDNESS",
    "RELEVANCE_TO_QUERY",
    "CHUNK_RELEVANCE",
    "GUIDELINE_ADHERENCE",
    "DatabricksJudged",
    "ChunkRelevance",
    "correctness",
    "groundedness",
    "relevance_to_query",
    "chunk_relevance",
    "guideline_adherence",
]

_YES_NO = {"1": "Yes: the statement holds.", "0": "No: it does not hold."}
_INSTRUCTION = (
    "You are checking one answer of an AI assistant, as a careful reviewer would. Judge only what is "
    "asked, from what is shown; the texts may be in any language."
)

CORRECTNESS_FACTS = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether the response states every expected fact, without contradicting any.",
    criteria={"Facts present": "Each expected fact is stated or clearly implied by the response.",
              "No contradiction": "Nothing in the response contradicts an expected fact."},
    rating_rubric={"1": "Yes: every expected fact is supported by the response.", "0": "No: a fact is missing or contradicted."},
    input_variables=["prompt", "response", "expected_facts"],
)

CORRECTNESS_RESPONSE = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether the response is correct, taking the expected response as the truth.",
    criteria={"Same substance": "The response gives the facts and outcome of the expected response; wording may differ."},
    rating_rubric={"1": "Yes: the response agrees with the expected response.", "0": "No: it is wrong or misses what matters."},
    input_variables=["prompt", "response", "reference"],
)

GROUNDEDNESS = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether everything the response claims is supported by the retrieved context.",
    criteria={"Supported": "Each factual claim of the response can be found in, or follows from, the retrieved context."},
    rating_rubric={"1": "Yes: the response is grounded in the retrieved context.", "0": "No: it claims something the context does not support."},
    input_variables=["response", "retrieved_context"],
)

RELEVANCE_TO_QUERY = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether the response addresses the user's request.",
    criteria={"On topic": "The response answers what was asked, or explains why it cannot."},
    rating_rubric={"1": "Yes: the response is relevant to the request.", "0": "No: it does not address the request."},
    input_variables=["prompt", "response"],
)

CHUNK_RELEVANCE = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether one retrieved chunk is relevant to the user's request.",
    criteria={"Useful": "The chunk holds information that helps answer the request."},
    rating_rubric={"1": "Yes: the chunk is relevant to the request.", "0": "No: the chunk does not help answer it."},
    input_variables=["prompt", "chunk"],
)

GUIDELINE_ADHERENCE = PointwiseMetricPromptTemplate(
    instruction=_INSTRUCTION,
    metric_definition="Whether the response follows every guideline given for this request.",
    criteria={"Follows all": "The response complies with each guideline listed."},
    rating_rubric={"1": "Yes: the response follows every guideline.", "0": "No: it breaks at least one guideline."},
    input_variables=["prompt", "response", "guidelines"],
)


def _listed(value: Any) -> Any:
    """A list cell (list, JSON text, numpy array) as a Python list or dict; None when absent or empty."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [value] if value.strip() else None
    if hasattr(value, "tolist") and not isinstance(value, (list, dict)):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _listed(v) or [] for k, v in value.items()} or None
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value] or None
    return None


def _bullets(value: Any) -> str:
    if isinstance(value, Mapping):  # named guideline groups
        return "\n".join(f"{name}:\n" + _bullets(items) for name, items in value.items())
    return "\n".join(f"- {item}" for item in value)


def _context_text(docs: list[dict[str, Any]]) -> str:
    return "\n\n".join(f"[{i + 1}] ({d.get('doc_uri') or 'no uri'})\n{d.get('content') or ''}" for i, d in enumerate(docs))


def _fields(ctx: ScoringContext) -> dict[str, Any]:
    """The Databricks values a template may use, as the judge reads them; None when the row lacks one."""
    facts = _listed(ctx.metadata.get("expected_facts"))
    guidelines = _listed(ctx.metadata.get("guidelines"))
    return {
        "expected_facts": _bullets(facts) if facts else None,
        "guidelines": _bullets(guidelines) if guidelines else None,
        "retrieved_context": _context_text(ctx.retrieved_context) if ctx.retrieved_context else None,
    }


class DatabricksJudged(Metric):
    """A yes/no judged metric over Databricks columns; rows lacking a needed column are NaN without a judge call."""

    is_async = True

    def __init__(self, name: str, templates: list[tuple[tuple[str, ...], PointwiseMetricPromptTemplate]], judge: Any, **options: Any) -> None:
        self.name = name
        # The first template whose needed fields the row has is used (correctness: facts, else reference).
        self._choices = [(needs, PointwiseMetric(name, template, judge, **options)) for needs, template in templates]

    @property
    def judge(self) -> Any:
        """The judge (shared by the metric's templates)."""
        return self._choices[0][1].judge

    @property
    def expected_answer(self) -> str:
        """The answer format the judge is asked for."""
        return self._choices[0][1].expected_answer

    def use_default_judge(self, judge: Any) -> None:
        """Judge with the run's ``judge`` unless this metric was given its own."""
        for _, judged in self._choices:
            judged.use_default_judge(judge)

    def evaluator_details(self) -> dict[str, Any]:
        """The judge and every template's prompt and rubric set, for this metric's provenance."""
        from .provenance import combined_details

        return combined_details(judged for _, judged in self._choices)

    def _pick(self, ctx: ScoringContext) -> tuple[PointwiseMetric, ScoringContext] | None:
        extra = _fields(ctx)
        for needs, judged in self._choices:
            if all((extra[n] if n in extra else getattr(ctx, n, None)) is not None for n in needs):
                return judged, replace(ctx, metadata={**ctx.metadata, **{k: v for k, v in extra.items() if v is not None}})
        return None

    def computable(self, ctx: ScoringContext) -> bool:
        return not ctx.failure and self._pick(ctx) is not None

    async def ascore(self, ctx: ScoringContext) -> Score:
        picked = self._pick(ctx)
        if picked is None:
            return Score(NAN)
        judged, row = picked
        return await judged.ascore(row)

    def score(self, ctx: ScoringContext) -> Score:
        return run_coroutine(self.ascore(ctx))


class ChunkRelevance(Metric):
    """``chunk_relevance``: the share of retrieved chunks the judge finds relevant to the request (precision)."""

    is_async = True
    requires = ("prompt", "retrieved_context")

    def __init__(self, judge: Any, *, name: str = "chunk_relevance", **options: Any) -> None:
        self.name = name
        self._judge = PointwiseMetric(name, CHUNK_RELEVANCE, judge, **options)
        self.expected_answer = self._judge.expected_answer

    @property
    def judge(self) -> Any:
        """The judge (the run's default when this metric was given none)."""
        return self._judge.judge

    def evaluator_details(self) -> dict[str, Any]:
        """The judge, prompt and rubric set behind this metric's scores, for its provenance."""
        return self._judge.evaluator_details()

    def use_default_judge(self, judge: Any) -> None:
        """Judge with the run's ``judge`` unless this metric was given its own."""
        self._judge.use_default_judge(judge)

    def computable(self, ctx: ScoringContext) -> bool:
        return super().computable(ctx) and bool(ctx.retrieved_context)

    async def ascore(self, ctx: ScoringContext) -> Score:
        import asyncio

        chunks = ctx.retrieved_context or []
        rows = [replace(ctx, metadata={**ctx.metadata, "chunk": _context_text([d])}) for d in chunks]
        verdicts = await asyncio.gather(*(self._judge.ascore(r) for r in rows))
        judged = [(i, v) for i, v in enumerate(verdicts) if v.value == v.value]  # NaN: the judge gave no rating
        if not judged:
            # No chunk could be judged: the row fails as the first chunk's verdict did (its judge error or unreadable answer).
            return replace(verdicts[0], usage=_summed(v.usage for v in verdicts))
        relevant = sum(v.value for _, v in judged)
        lines = "; ".join(f"[{i + 1}] {'relevant' if v.value else 'not relevant'}" for i, v in judged)
        return Score(relevant / len(judged), explanation=f"{int(relevant)} of {len(judged)} chunks relevant: {lines}",
                     extra={"judged_chunks": len(judged)}, usage=_summed(v.usage for v in verdicts))

    def score(self, ctx: ScoringContext) -> Score:
        return run_coroutine(self.ascore(ctx))


def _summed(usages: Any) -> Any:
    """The usages added up (None when none is known)."""
    total = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total


def correctness(judge: Any = None, *, name: str = "correctness", **options: Any) -> DatabricksJudged:
    """1 when the response states the ``expected_facts`` (or, without them, agrees with ``expected_response``)."""
    return DatabricksJudged(name, [(("prompt", "response", "expected_facts"), CORRECTNESS_FACTS),
                                   (("prompt", "response", "reference"), CORRECTNESS_RESPONSE)], judge, **options)


def groundedness(judge: Any = None, *, name: str = "groundedness", **options: Any) -> DatabricksJudged:
    """1 when everything the response claims is supported by the ``retrieved_context``."""
    return DatabricksJudged(name, [(("response", "retrieved_context"), GROUNDEDNESS)], judge, **options)


def relevance_to_query(judge: Any = None, *, name: str = "relevance_to_query", **options: Any) -> DatabricksJudged:
    """1 when the response addresses the request."""
    return DatabricksJudged(name, [(("prompt", "response"), RELEVANCE_TO_QUERY)], judge, **options)


def chunk_relevance(judge: Any = None, *, name: str = "chunk_relevance", **options: Any) -> ChunkRelevance:
    """The share of retrieved chunks relevant to the request (one judge call per chunk)."""
    return ChunkRelevance(judge, name=name, **options)


def guideline_adherence(judge: Any = None, *, name: str = "guideline_adherence", **options: Any) -> DatabricksJudged:
    """1 when the response follows every one of the row's ``guidelines`` (a list, or named lists)."""
    return DatabricksJudged(name, [(("prompt", "response", "guidelines"), GUIDELINE_ADHERENCE)], judge, **options)


# Named as bare strings they cannot be built (each needs a judge): say how.
for _name in ("correctness", "groundedness", "relevance_to_query", "chunk_relevance", "guideline_adherence"):
    register_metric_hint(_name, f"lf.metrics.databricks.{_name}(judge=...)")
del _name
