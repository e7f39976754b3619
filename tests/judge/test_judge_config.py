"""``lf.JudgeConfig``: how a judge is asked, one object for every judged metric and the entry points; its
fields checked, the old keywords refused naming the field, and given where it would do nothing, refused."""

from __future__ import annotations

import math
import re
import threading

import pytest

import levelfield as lf

ROWS = [{"case_id": "a", "prompt": "Wie spät ist es?", "reference": "Zwölf Uhr."},
        {"case_id": "b", "prompt": "Welcher Tag ist heute?", "reference": "Montag."}]
QUIET = {"progress": False}


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


class Counting:
    """A judge calling every answer valid, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.calls += 1
        return '{"reasoning": "passt", "is_the_agent_response_valid": "valid"}'


def agent(prompt: str) -> str:
    return "Zwölf Uhr."


def test_the_defaults_are_the_judge_clients():
    from levelfield.judge import client

    config = lf.JudgeConfig()
    assert (config.samples, config.cache, config.structured_output) == (None, True, None)
    assert (config.concurrency, config.retries, config.backoff, config.timeout) == (
        client.JUDGE_MAX_CONCURRENCY, client.JUDGE_RETRIES, client.JUDGE_BACKOFF, client.JUDGE_TIMEOUT)
    with pytest.raises(Exception, match="cannot assign"):
        config.samples = 3  # frozen


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("samples", 0, "must be a whole number >= 1"),
    ("samples", 2.5, "must be a whole number >= 1"),
    ("samples", True, "must be a whole number >= 1"),
    ("concurrency", 0, "must be a whole number >= 1"),
    ("retries", -1, "must be a whole number >= 0"),
    ("backoff", -0.5, "must be a number of seconds >= 0"),
    ("backoff", math.inf, "must be a number of seconds >= 0"),
    ("timeout", 0, "must be a number of seconds > 0, or None"),
    ("timeout", math.nan, "must be a number of seconds > 0, or None"),
    ("cache", 3, "must be True .*False .*a folder"),
    ("structured_output", "yes", "must be True, False or None"),
])
def test_a_field_out_of_range_is_refused_naming_it(field, value, rule):
    with pytest.raises(lf.ConfigError, match=re.escape(f"JudgeConfig({field}={value!r}): ") + rule):
        lf.JudgeConfig(**{field: value})


def test_replace_checks_the_names():
    config = lf.JudgeConfig(samples=3).replace(timeout=30)
    assert (config.samples, config.timeout) == (3, 30)
    with pytest.raises(lf.ConfigError, match=r"unknown judge option 'sample' \(did you mean 'samples'\?\)"):
        config.replace(sample=2)


def test_a_metric_takes_its_judge_config():
    metric = lf.metrics.judged.safety(judge=Counting(), judge_config=lf.JudgeConfig(samples=3, concurrency=2, retries=0,
                                                                                    timeout=9, cache=False))
    assert metric.num_samples == 3 and metric.cache is None
    assert (metric.judge.max_concurrency, metric.judge.retries, metric.judge.timeout) == (2, 0, 9)
    # ADK's criteria keep ADK's 5 samples unless told otherwise; Vertex's are sampled once.
    assert lf.metrics.adk.final_response_match_v2(Counting()).num_samples == 5
    assert lf.metrics.adk.final_response_match_v2(Counting(), judge_config=lf.JudgeConfig(samples=2)).num_samples == 2
    assert lf.metrics.RubricMetric.MULTI_TURN_TASK_SUCCESS(judge=Counting()).num_samples == 1


@pytest.mark.parametrize("build", [
    lambda **kw: lf.metrics.PointwiseMetric("m", "Rate {response}", Counting(), **kw),
    lambda **kw: lf.metrics.PairwiseMetric("p", judge=Counting(), **kw),
    lambda **kw: lf.metrics.judged.safety(Counting(), **kw),
    lambda **kw: lf.metrics.adk.final_response_match_v2(Counting(), **kw),
    lambda **kw: lf.metrics.databricks.correctness(Counting(), **kw),
    lambda **kw: lf.TaskSuccess(Counting(), **kw),
], ids=["pointwise", "pairwise", "judged", "adk", "databricks", "task_success"])
def test_the_old_keywords_are_refused_naming_the_field(build):
    with pytest.raises(lf.ConfigError, match=r"\(num_samples=3, max_concurrency=2\): the judge's options go in one "
                                             r"object, judge_config=lf\.JudgeConfig\(samples=3, concurrency=2\)"):
        build(num_samples=3, max_concurrency=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'judge_confg'"):
        build(judge_confg=lf.JudgeConfig())


def test_samples_are_refused_where_the_judge_is_asked_once():
    with pytest.raises(lf.ConfigError, match=r"hallucinations_v1: JudgeConfig\(samples=3\) does not apply: the judge "
                                             r"is asked once per step"):
        lf.metrics.adk.hallucinations_v1(Counting(), judge_config=lf.JudgeConfig(samples=3))
    assert lf.metrics.adk.hallucinations_v1(Counting(), judge_config=lf.JudgeConfig(samples=1)).num_samples == 1


def test_evaluate_and_compare_give_it_to_the_metrics_built_from_names():
    judge = Counting()
    result = lf.evaluate(ROWS, agent, metrics=["final_response_match_v2"], judge=judge,
                         judge_config=lf.JudgeConfig(samples=2, cache=False), **QUIET)
    assert judge.calls == 2 * 2  # two rows, two samples each (ADK's default would be 5)
    assert list(result.metrics_table["final_response_match_v2/score"]) == [1.0, 1.0]
    judge = Counting()
    cmp = lf.compare(ROWS, {"a": agent, "b": agent}, metrics=["final_response_match_v2"], judge=judge,
                     judge_config=lf.JudgeConfig(samples=1, cache=False), **QUIET)
    assert judge.calls == 2 * 2 and set(cmp.results) == {"a", "b"}


def test_a_judge_config_that_would_do_nothing_is_refused():
    with pytest.raises(lf.ConfigError, match=r"judge_config=\.\.\. says how the metrics built from names .* and none "
                                             r"of these metrics is one \(trajectory_exact_match\): a metric object "
                                             r"takes its own"):
        lf.evaluate(ROWS, agent, metrics=["trajectory_exact_match"], judge=Counting(),
                    judge_config=lf.JudgeConfig(samples=2), **QUIET)
    metric = lf.metrics.judged.safety(Counting())
    with pytest.raises(lf.ConfigError, match=r"none of these metrics is one \(safety\)"):
        lf.compare(ROWS, {"a": agent, "b": agent}, metrics=[metric], judge=Counting(),
                   judge_config=lf.JudgeConfig(samples=2), **QUIET)
    with pytest.raises(lf.ConfigError, match=r"and no judge=\.\.\. is given: give judge=\.\.\. too"):
        lf.evaluate(ROWS, agent, metrics=["final_response_match_v2"], judge_config=lf.JudgeConfig(), **QUIET)
    with pytest.raises(lf.ConfigError, match=r"judge_config=\{'samples': 2\}: expected an lf\.JudgeConfig\(\.\.\.\)"):
        lf.evaluate(ROWS, agent, metrics=["final_response_match_v2"], judge=Counting(),
                    judge_config={"samples": 2}, **QUIET)
