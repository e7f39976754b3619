"""document_recall / document_precision: retrieved against expected documents, compared by doc_uri."""

from __future__ import annotations

import math

import pytest

import levelfield as lf


def _score(metric: str, retrieved, expected) -> float:
    row = {"request_id": "r", "request": "q", "response": "a"}
    if retrieved is not None:
        row["retrieved_context"] = retrieved
    if expected is not None:
        row["expected_retrieved_context"] = expected
    return lf.evaluate([row], metrics=[metric]).metrics_table.iloc[0][f"{metric}/score"]


def docs(*uris):
    return [{"content": f"Text über {u}", "doc_uri": u} for u in uris]


def test_recall_counts_distinct_expected_documents_found():
    assert _score("document_recall", docs("a", "a", "c"), docs("a", "b")) == 0.5


def test_precision_counts_every_retrieved_chunk():
    assert _score("document_precision", docs("a", "a", "c", "d"), docs("a", "b")) == 0.5


def test_recall_is_one_when_nothing_is_expected():
    assert _score("document_recall", docs("a"), []) == 1.0


def test_precision_with_nothing_retrieved_is_zero_when_documents_were_expected():
    assert _score("document_precision", [], docs("a")) == 0.0


@pytest.mark.parametrize("metric", ["document_recall", "document_precision"])
def test_a_row_without_ground_truth_is_nan(metric):
    assert math.isnan(_score(metric, docs("a"), None))


@pytest.mark.parametrize("metric", ["document_recall", "document_precision"])
def test_a_row_without_a_known_retrieval_is_nan(metric):
    assert math.isnan(_score(metric, None, docs("a")))


def test_retrieved_context_as_json_text_is_read():
    assert _score("document_recall", '[{"content": "x", "doc_uri": "文档/1"}]', docs("文档/1")) == 1.0


def test_retrieved_context_of_the_wrong_shape_names_row_and_field():
    with pytest.raises(lf.DatasetError, match=r"row 1, field 'retrieved_context'"):
        lf.load_dataset([{"request": "q", "retrieved_context": 5}])


def test_recall_explains_which_documents_are_missing():
    row = {"request": "q", "response": "a", "retrieved_context": docs("a"), "expected_retrieved_context": docs("a", "b")}
    table = lf.evaluate([row], metrics=["document_recall"]).with_explanations()
    assert "missing: b" in table.iloc[0]["document_recall/explanation"]
