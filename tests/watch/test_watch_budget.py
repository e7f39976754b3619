"""``levelfield watch --max-cost``: a judges' budget per hour. A real judged metric (a scripted
LangChain chat model that reports its token usage, priced per token) scores traces pushed over
OTLP by the OpenTelemetry SDK; the budget's hour is read from a clock the test moves."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.results.record import read_record
from levelfield.watch import Watcher
from levelfield.watch.windows import window_files

pytest.importorskip("langchain_core")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from levelfield.testing import ScriptedChatModel, last_human_text
from levelfield.testing.chat_model import count_tokens  # noqa: E402
from tests.watch.test_watch import agent_trace, exporter_provider, references, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRICE = 1000.0  # dollars per million tokens, in and out: a call of n tokens costs n / 1000 dollars
HOUR = 3600.0


class Judge:
    """Answers every rating with 'score: 1' and keeps what each call cost, as the price table says."""

    def __init__(self) -> None:
        self.costs: list[float] = []

    def __call__(self, messages) -> str:
        answer = "Die Antwort ist hilfreich.\nscore: 1"
        tokens = sum(count_tokens(m.content if isinstance(m.content, str) else str(m.content)) for m in messages)
        self.costs.append((tokens + count_tokens(answer)) * PRICE / 1e6)
        assert last_human_text(messages)
        return answer


def helpful(judge: Judge) -> lf.metrics.PointwiseMetric:
    template = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"Hilfreich": "Hilft die Antwort dem Nutzer?"}, rating_rubric={"1": "ja", "0": "nein"},
        input_variables=["prompt", "response"])
    return lf.metrics.PointwiseMetric("helpful", template, ScriptedChatModel(judge, model_name="judge-j"),
                                      judge_config=lf.JudgeConfig(structured_output=False, concurrency=1, cache=False))


PRICES = {"judge-j": {"input_per_mtok": PRICE, "output_per_mtok": PRICE}}


def send(port: int, n: int, start: int = 0) -> None:
    provider = exporter_provider(port)
    tracer = provider.get_tracer("app")
    for i in range(start, start + n):
        agent_trace(tracer, i)
    provider.force_flush()
    provider.shutdown()


def scores(out: Path) -> list[dict]:
    """Every journaled trace's scores (the run record's Score objects), in journal order."""
    return [row for path in window_files(out) for _, row in read_record(path).runs.values()]


def test_the_hours_budget_stops_the_judge_the_rest_are_skipped_not_failed_and_the_next_hour_judges_again(tmp_path):
    judge = Judge()
    now = [1_900_000_000.0 + 10]  # ten seconds into an hour
    out = tmp_path / "out"
    budget = 0.5
    with Watcher(["trajectory_exact_match", helpful(judge)], out, otlp_port=0, references=references(tmp_path / "r.jsonl"),
                 max_cost=budget, prices=PRICES, trace_timeout=5) as w:
        w.budget.clock = lambda: now[0]
        send(w.port, 20)
        wait_for(lambda: w.stats.scored_traces == 20)
        first_hour = list(judge.costs)
        assert 0 < len(first_hour) < 20
        assert math.fsum(first_hour) <= budget  # never past the budget
        assert w.stats.judge_skipped_for_budget == 20 - len(first_hour)
        now[0] += HOUR  # the next hour: a fresh budget
        send(w.port, 5, start=20)
        wait_for(lambda: w.stats.scored_traces == 25)
    assert len(judge.costs) > len(first_hour)
    rows = scores(out)
    assert len(rows) == 25
    assert all(row["trajectory_exact_match"].value == 1.0 for row in rows)  # unjudged metrics score every trace
    judged = [r["helpful"] for r in rows if not math.isnan(r["helpful"].value)]
    skipped = [r["helpful"] for r in rows if math.isnan(r["helpful"].value)]
    assert len(judged) == len(judge.costs) and all(s.value == 1.0 and not s.failed for s in judged)
    assert len(skipped) == w.stats.judge_skipped_for_budget > 0
    for s in skipped:  # neither a failure nor a zero
        assert not s.failed and s.error is None and s.extra["skipped_for_budget"] is True
        assert "budget" in s.explanation
    state = json.loads((out / "state" / "judge_budget.json").read_text())
    assert state["hour"] == math.floor(now[0] / HOUR) * HOUR
    assert math.fsum(v[0] for v in state["spent"].values()) == pytest.approx(math.fsum(judge.costs[len(first_hour):]))
    # The report says how many were skipped, and leaves them out of the mean.
    report = subprocess.run([sys.executable, "-m", "levelfield", "report", str(out)], check=True, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert f"{len(skipped)} judged score(s) skipped" in report
    assert "helpful" in report and "1.000" in report
    table = lf.EvalResult.load(window_files(out)[0]).metrics_table
    assert table["helpful/skipped_for_budget"].fillna(False).astype(bool).sum() == len(skipped)


def test_a_restart_within_the_hour_does_not_spend_the_budget_again(tmp_path):
    judge = Judge()
    now = [1_900_000_000.0 + 100]
    out = tmp_path / "out"
    refs = references(tmp_path / "r.jsonl")
    with Watcher(["trajectory_exact_match", helpful(judge)], out, otlp_port=0, references=refs, max_cost=0.2,
                 prices=PRICES, trace_timeout=5) as w:
        w.budget.clock = lambda: now[0]
        send(w.port, 12)
        wait_for(lambda: w.stats.scored_traces == 12)
    asked = len(judge.costs)
    assert 0 < asked < 12
    now[0] += 60  # a minute later, same hour
    with Watcher(["trajectory_exact_match", helpful(judge)], out, otlp_port=0, references=refs, max_cost=0.2,
                 prices=PRICES, trace_timeout=5) as w:
        w.budget.clock = lambda: now[0]
        send(w.port, 4, start=12)
        wait_for(lambda: w.stats.scored_traces == 4)
        assert w.stats.judge_skipped_for_budget == 4
    assert len(judge.costs) == asked  # the hour's budget was spent before the restart


@pytest.mark.parametrize("bad", [-1, "5", float("nan")])
def test_a_bad_max_cost_is_a_config_error(tmp_path, bad):
    with pytest.raises(lf.ConfigError, match="max_cost"):
        Watcher(["trajectory_exact_match"], tmp_path / "out", otlp_port=0, max_cost=bad)
    assert not (tmp_path / "out").exists()


def test_the_cli_takes_max_cost_and_prices(tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-j": {"input_per_mtok": -1, "output_per_mtok": 1}}))
    done = subprocess.run([sys.executable, "-m", "levelfield", "watch", "--out", str(tmp_path / "o"), "--otlp-port", "0",
                           "--max-cost", "2", "--prices", str(prices)], check=False, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "judge-j" in done.stderr and "input_per_mtok" in done.stderr
