"""One scoring engine: live runs, loaded cases and saved rows are scored by the same code, and
explanations are computed for the rows asked for."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import levelfield as lf
from levelfield import load_dataset
from levelfield._core.data.types import AgentOutput, AgentRun, ToolCall
from levelfield._core.score import batch
from levelfield._core.score.batch.runs import RunScorer
from levelfield._core.score.batch.scorer import BatchScorer
from levelfield._core.score.metrics.registry import resolve_metrics
from levelfield._core.score.scoring import context_for, score_sync

TRAJECTORY = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
              "trajectory_precision", "trajectory_recall"]
WEATHER = {"tool_name": "get_weather", "tool_input": {"city": "北京"}}
TRAM = {"tool_name": "Straßenbahn_buchen", "tool_input": {"linie": 4}}
CASES = [
    {"case_id": "a", "prompt": "Wetter in Peking?", "reference_trajectory": [WEATHER], "reference": "晴"},
    {"case_id": "b", "prompt": "天気と電車", "reference_trajectory": [WEATHER, TRAM], "reference": "ok"},
    {"case_id": "c", "prompt": "Vou de bonde", "reference_trajectory": [TRAM], "reference": "sim"},
]


def agent(prompt: str) -> dict:
    calls = {"Wetter in Peking?": [WEATHER], "天気と電車": [WEATHER], "Vou de bonde": [TRAM, WEATHER]}[prompt]
    return {"response": "晴", "predicted_trajectory": calls}


def test_a_live_evaluation_leaves_explanations_out_of_the_table_and_gives_them_when_asked() -> None:
    result = lf.evaluate(CASES, agent, TRAJECTORY, progress=False)
    assert "trajectory_recall/explanation" not in result.metrics_table
    assert result.metrics_table["trajectory_recall/score"].tolist() == [1.0, 0.5, 1.0]
    assert result.explain("b")["trajectory_recall"].explanation == "matched 1/2 reference calls; missing Straßenbahn_buchen"
    table = result.with_explanations()
    assert table["trajectory_precision/explanation"].tolist()[2] == "matched 1/2 predicted calls; extra get_weather"
    only_b = result.with_explanations(["b"])
    assert only_b["trajectory_recall/explanation"].isna().tolist() == [True, False, True]


def test_the_journal_streams_scores_and_a_loaded_record_explains_them(tmp_path: Path) -> None:
    result = lf.evaluate(CASES, agent, TRAJECTORY, progress=False, out=tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    runs = [line for line in lines if "run" in line]
    assert len(runs) == 3
    loaded = lf.EvalResult.load(tmp_path)
    assert loaded.explain("b")["trajectory_recall"].explanation == result.explain("b")["trajectory_recall"].explanation
    assert loaded.summary_metrics["trajectory_recall/mean"] == result.summary_metrics["trajectory_recall/mean"]


def test_with_out_the_saved_tables_explain_every_row_as_the_record_read_back_does(tmp_path: Path, monkeypatch) -> None:
    """With out= the explanations are made at the end, for the tables (the journal holds the engine's
    scores); the tables saved hold exactly those a loaded record gives, judged metrics' own kept as they are."""
    metrics = [*TRAJECTORY, "exact_match", lf.metrics.CustomMetric("says_sunny", lambda i: {
        "says_sunny": float("晴" in (i.get("response") or "")), "explanation": f"Antwort: {i.get('response')}"})]
    cmp = lf.compare(CASES, {"a": agent, "b": agent}, metrics, trials=2, progress=False, out=tmp_path)
    made = {name: cmp.results[name].row_scores for name in ("a", "b")}
    loaded = lf.Comparison.load(tmp_path)
    for name in ("a", "b"):
        live, back = cmp.results[name], loaded.results[name]
        assert made[name] == back.row_scores  # made at the end; made from the record read back
        columns = [f"{m}/explanation" for m in TRAJECTORY]
        assert live.with_explanations()[columns].equals(back.with_explanations()[columns])
    recall = cmp.results["a"].with_explanations()["trajectory_recall/explanation"].tolist()
    assert recall[2] == "matched 1/2 reference calls; missing Straßenbahn_buchen"  # case b, trial 1


def _run(case_id: str, calls: list[dict], trial: int = 0) -> AgentRun:
    output = AgentOutput(response="ok", trajectory=[ToolCall(**c) for c in calls])
    return AgentRun(case_id=case_id, agent_name="x", trial=trial, output=output, latency_in_seconds=0.1, failure=False)


def test_runs_finished_together_are_scored_as_one_batch_with_each_metrics_own_numbers(monkeypatch) -> None:
    dataset = load_dataset(CASES)
    metrics = resolve_metrics([*TRAJECTORY, "exact_match"])
    runs = [_run("a", [WEATHER]), _run("b", [TRAM, WEATHER]), _run("c", []), _run("a", [TRAM], trial=1)]
    batches: list[int] = []
    real = BatchScorer.score_contexts

    def counting(self, contexts):
        batches.append(len(contexts))
        return real(self, contexts)

    monkeypatch.setattr(BatchScorer, "score_contexts", counting)
    scorer = RunScorer(dataset, metrics)

    async def finish_together() -> list:
        for run in runs:
            scorer.defer(run)
        await asyncio.sleep(0)  # the loop runs the deferred scoring: one batch
        return await scorer.scores(runs)

    got = asyncio.run(finish_together())
    assert batches == [4]
    by_id = {c.case_id: c for c in dataset}
    for run, row in zip(runs, got):
        want = score_sync(context_for(by_id[run.case_id], run), metrics)  # the per-metric API
        assert list(row) == [m.name for m in metrics]
        for name, score in want.items():
            assert (math.isnan(score.value) and math.isnan(row[name].value)) or row[name].value == score.value, name


def test_a_failed_run_and_a_case_without_reference_are_nan_in_the_engine() -> None:
    dataset = load_dataset(CASES + [{"case_id": "d", "prompt": "no reference"}])
    failed = AgentRun(case_id="a", agent_name="x", output=None, latency_in_seconds=0.1, failure=True, error="boom")
    scorer = BatchScorer(resolve_metrics(TRAJECTORY))
    rows = scorer.score_contexts([context_for(dataset[0], failed), context_for(dataset[3], _run("d", [WEATHER]))])
    assert all(math.isnan(s.value) for row in rows for s in row.values())


def test_score_rows_is_the_engine() -> None:
    assert lf._core.score.scoring.__dict__.get("score_rows") is None  # the row path is only each metric's score()
    assert batch.score_rows.__module__ == "levelfield._core.score.batch"
