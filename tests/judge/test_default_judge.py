"""``judge=`` on a run is the judge of every judged metric given without one; a metric's own judge wins.

Entry points: ``lf.evaluate``, ``lf.compare``, ``lf.testing.check_eval`` and ``levelfield eval --judge``."""

from __future__ import annotations

import json
import threading

import pytest

import levelfield as lf
from levelfield.cli import main
from levelfield.testing import check_eval

RUBRICS = [{"rubric_id": "kurz", "rubric_content": {"text_property": "Die Antwort ist kurz."}}]
ROWS = [{"case_id": "a", "prompt": "Wie spät ist es?", "reference": "Zwölf Uhr."},
        {"case_id": "b", "prompt": "Welcher Tag ist heute?", "reference": "Montag."}]


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


class Counting:
    """A judge answering 'yes' to every rubric (or 'no' with ``verdict='no'``), counting its calls."""

    def __init__(self, verdict: str = "yes") -> None:
        self.verdict = verdict
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
        return f"ID: kurz\nProperty: Die Antwort ist kurz.\nRationale: geprüft\nVerdict: {self.verdict}"


def agent(prompt: str) -> str:
    return "Zwölf Uhr."


def rubric_metric(**kwargs):
    return lf.metrics.adk.rubric_based_final_response_quality_v1(rubrics=RUBRICS, judge_config=lf.JudgeConfig(samples=1, cache=False), **kwargs)


def test_a_judged_metric_built_without_a_judge_is_judged_by_evaluates_judge():
    judge = Counting()
    result = lf.evaluate(ROWS, agent, metrics=[rubric_metric()], judge=judge, progress=False)
    assert list(result.metrics_table["rubric_based_final_response_quality_v1/score"]) == [1.0, 1.0]
    assert judge.calls == 2


def test_a_metrics_own_judge_wins_over_the_runs():
    run_judge, own = Counting("yes"), Counting("no")
    metrics = [rubric_metric(), rubric_metric(judge=own, name="strict")]
    result = lf.evaluate(ROWS, agent, metrics=metrics, judge=run_judge, progress=False)
    assert list(result.metrics_table["rubric_based_final_response_quality_v1/score"]) == [1.0, 1.0]
    assert list(result.metrics_table["strict/score"]) == [0.0, 0.0]
    assert (run_judge.calls, own.calls) == (2, 2)


def test_without_any_judge_the_run_is_refused_before_the_agent_runs():
    called = []
    with pytest.raises(lf.MetricError, match=r"'rubric_based_final_response_quality_v1' has no judge: pass judge="):
        lf.evaluate(ROWS, lambda p: called.append(p) or "x", metrics=[rubric_metric()], progress=False)
    assert called == []


def test_compare_gives_its_judge_to_the_metrics_without_one():
    judge = Counting()
    cmp = lf.compare(ROWS, {"eins": agent, "zwei": agent}, [rubric_metric(), "exact_match"], judge=judge, progress=False)
    assert cmp.summary.loc["eins", "rubric_based_final_response_quality_v1/mean"] == 1.0
    assert cmp.summary.loc["zwei", "rubric_based_final_response_quality_v1/mean"] == 1.0
    assert judge.calls == 4


def test_check_eval_gives_its_judge_to_the_criteria_that_need_one(tmp_path):
    evalset = {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": [{
        "invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "Wie spät ist es?"}]},
        "final_response": {"role": "model", "parts": [{"text": "Zwölf Uhr."}]}}]}]}
    (tmp_path / "zeit.evalset.json").write_text(json.dumps(evalset), encoding="utf-8")
    config = {"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 1.0, "rubrics": RUBRICS}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    judge = Counting()
    report = check_eval(tmp_path / "zeit.evalset.json", agent, judge=judge)
    assert report.passed and judge.calls >= 1
    assert report.verdict("a").metrics["rubric_based_final_response_quality_v1"].score == 1.0


def test_the_cli_judge_judges_a_judged_metric_named_on_the_command_line(tmp_path, capsys):
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in ROWS), encoding="utf-8")
    code = main(["eval", str(data), "--agent", "tests.judge.test_default_judge:agent", "--metric", "final_response_match_v2",
                 "--judge", "tests.judged_fixture.judges:judge", "-q", "--out", str(tmp_path / "out")])
    assert code == 0, capsys.readouterr().err
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "metrics_table.csv")
    assert list(table["final_response_match_v2/score"]) == [1.0, 1.0]  # the fixture's judge finds both answers valid
