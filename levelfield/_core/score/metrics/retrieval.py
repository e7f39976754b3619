"""Retrieval metrics against ground truth: which expected documents the agent retrieved, by ``doc_uri``.

As in Databricks' agent evaluation, documents are compared by their ``doc_uri``;
``retrieved_context`` is what the agent's last retrieval step returned and
``expected_retrieved_context`` what the dataset says a good retrieval returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from .base import NAN, Metric, Score, ScoringContext

__all__ = ["DocumentRecall", "DocumentPrecision"]


def _uris(docs: Sequence[Any] | None) -> list[str]:
    out = []
    for doc in docs or []:
        uri = doc.get("doc_uri") if isinstance(doc, dict) else None
        if uri is not None:
            out.append(str(uri))
    return out


class DocumentRecall(Metric):
    """``document_recall``: the share of expected documents (distinct ``doc_uri``) that were retrieved.

    1.0 when nothing is expected. Rows without ``expected_retrieved_context`` or without a known
    retrieval (no retriever span, no ``retrieved_context`` column) are NaN.
    """

    name = "document_recall"
    requires: ClassVar[tuple[str, ...]] = ("retrieved_context", "expected_retrieved_context")

    def score(self, ctx: ScoringContext) -> Score:
        expected = set(_uris(ctx.expected_retrieved_context))
        if not expected:
            return Score(1.0, explanation="no document is expected")
        found = expected & set(_uris(ctx.retrieved_context))
        missing = sorted(expected - found)
        why = f"{len(found)} of {len(expected)} expected documents retrieved"
        return Score(len(found) / len(expected), explanation=why + (f"; missing: {', '.join(missing[:5])}" if missing else ""))


class DocumentPrecision(Metric):
    """``document_precision``: the share of retrieved chunks whose ``doc_uri`` is an expected document.

    Every retrieved chunk counts (two chunks of one document count twice). With nothing retrieved:
    1.0 when nothing is expected either, else 0.0 (as ``trajectory_precision``).
    """

    name = "document_precision"
    requires: ClassVar[tuple[str, ...]] = ("retrieved_context", "expected_retrieved_context")

    def score(self, ctx: ScoringContext) -> Score:
        expected = set(_uris(ctx.expected_retrieved_context))
        retrieved = _uris(ctx.retrieved_context)
        if not retrieved:
            if ctx.retrieved_context:
                return Score(NAN, explanation="the retrieved documents have no doc_uri to compare")
            return Score(1.0 if not expected else 0.0, explanation="nothing was retrieved")
        relevant = sum(uri in expected for uri in retrieved)
        return Score(relevant / len(retrieved), explanation=f"{relevant} of {len(retrieved)} retrieved chunks are expected documents")
