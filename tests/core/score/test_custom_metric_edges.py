"""A user's metric function that hangs, exits or interrupts is one failed row, never the evaluation:
sync functions run on a worker thread under the metric's timeout, as sync agents and judges do."""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import threading
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.executors.saved import score_saved_rows
from tests.metric_functions import response_length

ROWS = [{"prompt": f"p{i}", "response": f"answer {i}"} for i in range(4)]


def test_a_sync_metric_that_hangs_fails_its_row_and_the_others_are_scored():
    release = threading.Event()

    def hangs_on_the_second(instance):
        if instance["prompt"] == "p1":
            release.wait(60)  # far beyond the metric's timeout
        return {"hangs": 1.0}

    try:
        metric = lf.metrics.CustomMetric("hangs", hangs_on_the_second, timeout=0.5)
        result = lf.evaluate(ROWS, metrics=[metric])
    finally:
        release.set()
    table = result.metrics_table.set_index("prompt")
    assert math.isnan(table.loc["p1", "hangs/score"])
    assert "no result within its timeout of 0.5 s" in table.loc["p1", "hangs/error"]
    assert table.drop("p1")["hangs/score"].tolist() == [1.0, 1.0, 1.0]
    assert result.summary_metrics["hangs/failure_count"] == 1


@pytest.mark.parametrize("raised", [KeyboardInterrupt("mine"), SystemExit(3), GeneratorExit()])
def test_a_sync_metric_raising_a_base_exception_fails_only_its_row(raised):
    def raises_on_the_first(instance):
        if instance["prompt"] == "p0":
            raise raised
        return 0.5

    result = lf.evaluate(ROWS, metrics=[lf.metrics.CustomMetric("base", raises_on_the_first)])
    table = result.metrics_table.set_index("prompt")
    assert math.isnan(table.loc["p0", "base/score"]) and type(raised).__name__ in table.loc["p0", "base/error"]
    assert table.drop("p0")["base/score"].tolist() == [0.5, 0.5, 0.5]


@pytest.mark.parametrize("raised", [SystemExit(3), GeneratorExit()])
async def test_an_async_metric_raising_a_base_exception_fails_only_its_row(raised):
    async def raises_on_the_first(instance):
        if instance["prompt"] == "p0":
            raise raised
        return 0.5

    result = await lf.aevaluate(ROWS, metrics=[lf.metrics.CustomMetric("base", raises_on_the_first)])
    table = result.metrics_table.set_index("prompt")
    assert math.isnan(table.loc["p0", "base/score"]) and type(raised).__name__ in table.loc["p0", "base/error"]
    assert table.drop("p0")["base/score"].tolist() == [0.5, 0.5, 0.5]


async def test_an_async_metric_that_hangs_fails_its_row():
    async def hangs_on_the_second(instance):
        if instance["prompt"] == "p1":
            await asyncio.sleep(60)
        return 1.0

    metric = lf.metrics.CustomMetric("slow", hangs_on_the_second, timeout=0.3)
    result = await lf.aevaluate(ROWS, metrics=[metric])
    table = result.metrics_table.set_index("prompt")
    assert "no result within its timeout of 0.3 s" in table.loc["p1", "slow/error"]
    assert table.drop("p1")["slow/score"].tolist() == [1.0, 1.0, 1.0]


def test_without_a_timeout_the_function_runs_on_the_calling_thread():
    threads = []

    def where(instance):
        threads.append(threading.current_thread())
        return 1.0

    lf.evaluate(ROWS[:1], metrics=[lf.metrics.CustomMetric("where", where, timeout=None)])
    lf.evaluate(ROWS[:1], metrics=[lf.metrics.CustomMetric("where", where)])
    assert threads[0] is threading.main_thread() and threads[1] is not threading.main_thread()


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), True, "60"])
def test_a_bad_timeout_is_refused_naming_the_metric(timeout):
    with pytest.raises(lf.MetricError, match=r"CustomMetric 'm': timeout="):
        lf.metrics.CustomMetric("m", response_length, timeout=timeout)


def test_a_metric_with_its_thread_still_reaches_worker_processes(tmp_path: Path):
    metric = lf.metrics.CustomMetric("response_length", response_length, timeout=30)
    lf.evaluate(ROWS[:1], metrics=[metric])  # its thread is started
    copy = pickle.loads(pickle.dumps(metric))
    assert copy.timeout == 30 and copy.metric_function is response_length
    path = tmp_path / "saved.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS * 50), encoding="utf-8")
    two = score_saved_rows(path, [metric], lf.RunConfig(progress=False, workers=2))
    assert two.metrics_table["response_length/score"].tolist() == [8.0] * 200
