"""Databricks' judged metrics (correctness, groundedness, relevance_to_query, chunk_relevance,
guideline_adherence) over Databricks rows, with a scripted judge standing in for a chat model."""

from __future__ import annotations

import json
import math
import re

import pytest

import levelfield as lf
from levelfield.testing import ScriptedChatModel, last_human_text

dbx = lf.metrics.databricks


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


class Judge:
    """Answers by a rule over the prompt it is shown, recording every prompt."""

    def __init__(self, rule) -> None:
        self.rule = rule
        self.prompts: list[str] = []
        self.model = ScriptedChatModel(self, model_name="rule-judge")

    def __call__(self, messages) -> str:
        text = last_human_text(messages)
        self.prompts.append(text)
        return json.dumps({"explanation": "rule", "score": "1" if self.rule(text) else "0"})


def section(prompt: str, name: str) -> str:
    match = re.search(rf"## {name}\n(.*?)(?:\n\n## |\n\n# )", prompt, re.S)
    return match.group(1) if match else ""


ROW = {
    "request_id": "r1",
    "request": "Wie setze ich den Thermostat zurück?",
    "response": "Halten Sie die Taste zehn Sekunden gedrückt.",
    "expected_response": "Taste zehn Sekunden drücken.",
    "expected_facts": ["zehn Sekunden", "Taste"],
    "guidelines": ["Antworte auf Deutsch"],
    "retrieved_context": [
        {"content": "Zum Zurücksetzen die Taste zehn Sekunden gedrückt halten.", "doc_uri": "kb://reset"},
        {"content": "Das Gerät wiegt 200 g.", "doc_uri": "kb://weight"},
    ],
}


def run(metric, rows=(ROW,)):
    return lf.evaluate(list(rows), metrics=[metric]).metrics_table


def test_correctness_checks_each_expected_fact_against_the_response():
    judge = Judge(lambda p: all(f.strip("- ") in section(p, "response") for f in section(p, "expected_facts").splitlines()))
    table = run(dbx.correctness(judge.model, judge_config=lf.JudgeConfig(structured_output=False)))
    assert table.iloc[0]["correctness/score"] == 1.0
    assert "- zehn Sekunden" in section(judge.prompts[0], "expected_facts")


def test_correctness_without_facts_compares_with_the_expected_response():
    judge = Judge(lambda p: "zehn Sekunden" in section(p, "reference"))
    row = {k: v for k, v in ROW.items() if k != "expected_facts"}
    assert run(dbx.correctness(judge.model, judge_config=lf.JudgeConfig(structured_output=False)), [row]).iloc[0]["correctness/score"] == 1.0
    assert "expected_facts" not in judge.prompts[0]


def test_groundedness_shows_the_judge_the_retrieved_chunks_with_their_uris():
    judge = Judge(lambda p: "kb://reset" in section(p, "retrieved_context"))
    assert run(dbx.groundedness(judge.model, judge_config=lf.JudgeConfig(structured_output=False))).iloc[0]["groundedness/score"] == 1.0


def test_chunk_relevance_is_the_share_of_chunks_the_judge_finds_relevant():
    judge = Judge(lambda p: "Zurücksetzen" in section(p, "chunk"))
    table = run(dbx.chunk_relevance(judge.model, judge_config=lf.JudgeConfig(structured_output=False)))
    assert table.iloc[0]["chunk_relevance/score"] == 0.5
    assert len(judge.prompts) == 2
    assert "1 of 2 chunks relevant" in table.iloc[0]["chunk_relevance/explanation"]


def test_guideline_adherence_lists_named_guideline_groups():
    judge = Judge(lambda p: "Sprache:\n- Antworte auf Deutsch" in section(p, "guidelines"))
    row = dict(ROW, guidelines={"Sprache": ["Antworte auf Deutsch"]})
    assert run(dbx.guideline_adherence(judge.model, judge_config=lf.JudgeConfig(structured_output=False)), [row]).iloc[0]["guideline_adherence/score"] == 1.0


def test_relevance_to_query_reads_request_and_response():
    judge = Judge(lambda p: "Thermostat" in section(p, "prompt") and "Taste" in section(p, "response"))
    assert run(dbx.relevance_to_query(judge.model, judge_config=lf.JudgeConfig(structured_output=False))).iloc[0]["relevance_to_query/score"] == 1.0


@pytest.mark.parametrize(
    "make, missing",
    [(dbx.groundedness, "retrieved_context"), (dbx.guideline_adherence, "guidelines"), (dbx.chunk_relevance, "retrieved_context")],
)
def test_a_row_without_what_the_metric_needs_is_nan_and_costs_no_judge_call(make, missing):
    judge = Judge(lambda p: True)
    row = {k: v for k, v in ROW.items() if k != missing}
    metric = make(judge.model, judge_config=lf.JudgeConfig(structured_output=False))
    assert math.isnan(run(metric, [row]).iloc[0][f"{metric.name}/score"])
    assert judge.prompts == []


def test_judged_metrics_score_traces_loaded_from_otlp():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "重置恒温器？")
        with tracer.start_as_current_span("retrieve") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("retrieval.documents.0.document.content", "按住按钮十秒。")
            r.set_attribute("retrieval.documents.0.document.id", "kb://reset")
        root.set_attribute("output.value", "按住按钮十秒。")
    judge = Judge(lambda p: section(p, "response") in section(p, "retrieved_context"))
    table = lf.evaluate(lf.load_traces(exp.get_finished_spans()), metrics=[dbx.groundedness(judge.model, judge_config=lf.JudgeConfig(structured_output=False))]).metrics_table
    assert table.iloc[0]["groundedness/score"] == 1.0


def test_a_judged_databricks_name_as_a_string_says_how_to_build_it():
    with pytest.raises(lf.MetricError, match=r"lf\.metrics\.databricks\.groundedness\(judge=\.\.\.\)"):
        lf.evaluate([ROW], metrics=["groundedness"])
