"""The entry points' options: run options in RunConfig, statistics options in StatsConfig, sync
twins that are their async twins run to completion, and the report as a reader of a comparison."""

import asyncio

import pandas as pd
import pytest

import levelfield as lf
from levelfield import AllRunsFailedWarning

CASES = [
    {"case_id": "a", "prompt": "turn on light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": True}}]},
    {"case_id": "b", "prompt": "turn off light", "reference": "done",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"on": False}}]},
    {"case_id": "c", "prompt": "说你好", "reference": "你好", "reference_trajectory": []},
]
METRICS = ["trajectory_exact_match", "exact_match"]


def right(prompt):
    if "light" in prompt:
        return {"response": "done", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"on": "on " in prompt}}]}
    return {"response": "你好", "predicted_trajectory": []}


def every_other(prompt, _calls={"n": 0}):  # noqa: B006 (state kept across calls on purpose)
    _calls["n"] += 1
    return right(prompt) if _calls["n"] % 2 else {"response": "no", "predicted_trajectory": []}


def broken(prompt):
    raise RuntimeError("jammed")


# -- StatsConfig ------------------------------------------------------------------------------------


@pytest.mark.parametrize("option, value, words", [
    ("failed_runs", "drop", "use 'zero' or 'exclude'"),
    ("confidence", 1.0, "between 0 and 1"),
    ("test", "t-test", "use one of auto, mcnemar, t, wilcoxon, permutation"),
    ("seed", 1.5, "whole number"),
    ("reducer", "best", "use one of mean, max, min, median"),
    ("alpha", 0.0, "between 0 and 1"),
    ("margin", -0.1, "at least 0"),
])
def test_a_bad_statistics_option_is_a_config_error_naming_it(option, value, words):
    with pytest.raises(lf.ConfigError, match=f"{option}=.*{words}"):
        lf.StatsConfig(**{option: value})


def test_an_unknown_statistics_option_suggests_the_nearest():
    with pytest.raises(lf.ConfigError, match="'confidnce' \\(did you mean 'confidence'\\?\\)"):
        lf.StatsConfig().replace(confidnce=0.9)


def test_compare_takes_its_statistics_options_in_one_object():
    cmp = lf.compare(CASES, {"x": right}, METRICS, progress=False,
                     stats=lf.StatsConfig(confidence=0.8, reducer="max", failed_runs="exclude"))
    assert (cmp.confidence, cmp.reducer, cmp.failed_runs) == (0.8, "max", "exclude")
    assert cmp.summary.attrs["confidence"] == 0.8


def test_a_statistics_option_given_as_a_keyword_is_refused_with_the_object_to_put_it_in():
    with pytest.raises(lf.ConfigError, match=r"compare\(reducer='max'\).*stats=lf.StatsConfig\(reducer='max'\)"):
        lf.compare(CASES[:2], {"x": every_other}, METRICS, trials=2, concurrency=1, progress=False, reducer="max")
    with pytest.raises(lf.ConfigError, match=r"compare\(seed=7\)"):
        lf.compare(CASES, {"x": right}, METRICS, progress=False, stats=lf.StatsConfig(confidence=0.8), seed=7)


def test_a_comparison_takes_its_statistics_options_only_as_one_object():
    with pytest.raises(TypeError, match="reducer"):
        lf.Comparison(lf.load_dataset(CASES), {}, [], reducer="max")


def test_the_statistics_options_are_saved_and_loaded_with_the_run(tmp_path):
    settings = lf.StatsConfig(confidence=0.9, seed=3, alpha=0.01, margin=0.02)
    lf.compare(CASES, {"x": right}, METRICS, progress=False, stats=settings, out=tmp_path)
    assert lf.Comparison.load(tmp_path).stats == settings


def test_the_gate_takes_alpha_and_margin_from_the_comparison(tmp_path):
    lf.compare(CASES, {"main": right}, METRICS, progress=False, out=tmp_path / "main")
    cmp = lf.compare(CASES, {"new": right}, METRICS, progress=False, baseline=tmp_path / "main",
                     stats=lf.StatsConfig(alpha=0.01, margin=0.05))
    change = lf.gate.baseline_changes(cmp, ["trajectory_exact_match"])[0]
    assert (change.alpha, change.margin) == (0.01, 0.05)


# -- twins -------------------------------------------------------------------------------------------


def test_evaluate_and_aevaluate_give_the_same_table():
    sync = lf.evaluate(CASES, right, METRICS, progress=False)
    async_ = asyncio.run(lf.aevaluate(CASES, right, METRICS, progress=False))
    columns = ["case_id", "response", "failure", "trajectory_exact_match/score", "exact_match/score"]
    pd.testing.assert_frame_equal(sync.metrics_table[columns], async_.metrics_table[columns])


def test_aevaluate_raises_the_short_error_and_warns_as_evaluate_does():
    with pytest.raises(lf.MetricError, match="rouge_l") as info:
        asyncio.run(lf.aevaluate(CASES, right, ["rogue_l"], progress=False))
    assert "levelfield/_core" not in "".join(str(entry.path) for entry in info.traceback)  # no engine frames
    with pytest.warns(AllRunsFailedWarning, match="every run of agent 'broken' failed") as caught:
        asyncio.run(lf.aevaluate(CASES, broken, METRICS, progress=False))
    assert caught[0].filename == __file__


def test_acompare_accepts_what_compare_accepts():
    cmp = asyncio.run(lf.acompare(CASES, {"x": right}, METRICS, progress=False, stats=lf.StatsConfig(seed=1),
                                  experiment=None))
    assert cmp.summary.loc["x", "trajectory_exact_match/mean"] == 1.0 and cmp.seed == 1


# -- options that do not apply ---------------------------------------------------------------------


def test_evaluate_refuses_agent_concurrency_for_an_agent_it_does_not_run():
    with pytest.raises(lf.ConfigError, match="agent_concurrency names unknown agents: other"):
        lf.evaluate(CASES, right, METRICS, name="mine", progress=False, agent_concurrency={"other": 1})


def test_scoring_saved_predictions_refuses_agent_concurrency():
    rows = [dict(c, response="done", predicted_trajectory=[]) for c in CASES]
    with pytest.raises(lf.ConfigError, match="runs no agent"):
        lf.evaluate(rows, metrics=METRICS, progress=False, agent_concurrency={"x": 1})


def test_evaltask_evaluate_with_a_config_keeps_the_tasks_own_options():
    task = lf.EvalTask(CASES, METRICS, config=lf.RunConfig(trials=2, progress=False))
    result = task.evaluate(runnable=right, config=lf.RunConfig(concurrency=1))
    assert result.config.trials == 2 and result.config.concurrency == 1
    assert len(result.metrics_table) == 2 * len(CASES)


# -- the report reads a comparison -----------------------------------------------------------------


def test_the_report_is_written_by_the_report_package_and_the_comparison_knows_no_html(tmp_path):
    cmp = lf.compare(CASES, {"x": right}, METRICS, progress=False)
    assert not hasattr(cmp, "to_html")
    page = lf.report.write(cmp, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "你好" in page and "trajectory_exact_match" in page
    paths = lf.report.save(cmp, tmp_path / "out")
    assert paths["report"].name == "report.html" and paths["runs"].exists()
    assert "report" not in cmp.save(tmp_path / "bare") and not (tmp_path / "bare" / "report.html").exists()


def test_compare_with_out_writes_the_report_beside_the_run_record(tmp_path):
    lf.compare(CASES, {"x": right}, METRICS, progress=False, out=tmp_path)
    assert {"runs.jsonl", "report.html", "summary.json"} <= {p.name for p in tmp_path.iterdir()}
