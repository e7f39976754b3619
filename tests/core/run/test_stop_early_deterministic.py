"""compare(stop_early=...) stops where the seed and the scores say, not where timing does: agents
whose runs take random times (from a generator levelfield does not seed) stop at the same case,
with the same verdict and the same numbers, every time; every count printed is that one number."""

import asyncio
import json
import random
import re

import pytest

import levelfield as lf
from levelfield._core.results.record import read_record
from levelfield.cli.main import main as cli_main

CASES = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference_trajectory": [{"tool_name": "t", "tool_input": {"i": i}}]}
         for i in range(300)]
METRIC = "trajectory_exact_match"
_clock = random.SystemRandom()  # latencies no seed of levelfield's can fix


def _answer(prompt: str, miss_every: int) -> dict:
    i = int(prompt[1:])
    return {"response": "", "predicted_trajectory": [] if i % miss_every == 0 else [{"tool_name": "t", "tool_input": {"i": i}}]}


async def good(prompt: str) -> dict:
    await asyncio.sleep(_clock.random() * 0.004)
    return _answer(prompt, 10)  # misses 1 case in 10


async def poor(prompt: str) -> dict:
    await asyncio.sleep(_clock.random() * 0.004)
    return _answer(prompt, 3)  # misses 1 case in 3


def stopped(seed: int = 3, **options) -> lf.Comparison:
    return lf.compare(CASES, {"good": good, "poor": poor}, [METRIC], stop_early=True, progress=False,
                      stats=lf.StatsConfig(seed=seed), concurrency=8, **options)


def what_it_says(cmp: lf.Comparison) -> tuple:
    """Everything a reader sees that should not depend on timing."""
    info = cmp.stopped_early
    pairs = [(p["decision"], p["winner"], p["n"], round(p["p_value"], 12), round(p["mean_difference"], 12))
             for p in info["pairs"]]
    # The runs made (those in flight at the stop included) and the latencies do depend on timing.
    text = [line for line in str(cmp).splitlines() if "not run" not in line and "latency" not in line]
    summary = cmp.summary[[c for c in cmp.summary.columns if not c.startswith("latency")]]
    return (info["cases_analysed"], info["runs_analysed"], info["verdict"], pairs, summary.round(12).to_dict(), text)


def test_the_same_seed_stops_at_the_same_case_with_the_same_verdict_whatever_the_latencies():
    seen = [what_it_says(stopped()) for _ in range(4)]
    assert seen[0][0] < len(CASES) / 2  # it did stop early
    assert all(s == seen[0] for s in seen[1:])


def test_the_results_hold_exactly_the_cases_analysed_and_the_runs_in_flight_are_counted_apart():
    cmp = stopped()
    info = cmp.stopped_early
    n = info["cases_analysed"]
    for result in cmp.results.values():
        assert len({r.case_id for r in result.runs}) == len(result.runs) == n
    assert {r.case_id for r in cmp.results["good"].runs} == {r.case_id for r in cmp.results["poor"].runs}
    assert info["runs_analysed"] == 2 * n
    assert info["runs_made"] == info["runs_analysed"] + info["runs_left_out"]


def test_every_number_of_cases_printed_is_the_one_the_statistics_are_over():
    cmp = stopped()
    text = str(cmp)
    n = cmp.stopped_early["cases_analysed"]
    assert int(re.search(r"Stopped early after (\d+) of 300 cases", text).group(1)) == n
    assert int(re.search(r"the (\d+) of 300 cases run before stopping", text).group(1)) == n
    assert set(cmp.summary[f"{METRIC}/n"]) == {n}
    assert set(cmp.summary["runs"]) == {n}
    for count in re.findall(r"in \d+ of (\d+) cases", text):  # the verdict's "skips ... in k of N cases"
        assert int(count) == n


def test_with_trials_each_analysed_case_has_every_trial_and_the_stop_is_the_same_every_time():
    seen = []
    for _ in range(3):
        cmp = stopped(seed=5, trials=2)
        n = cmp.stopped_early["cases_analysed"]
        for result in cmp.results.values():
            assert len(result.runs) == 2 * n and sorted({r.trial for r in result.runs}) == [0, 1]
        seen.append(what_it_says(cmp))
    assert all(s == seen[0] for s in seen[1:])


def test_the_saved_record_keeps_the_runs_in_flight_and_loads_the_same_comparison(tmp_path):
    cmp = stopped(out=tmp_path)
    info = cmp.stopped_early
    record = read_record(tmp_path)
    assert len(record.runs) == info["runs_made"]  # nothing made is lost
    loaded = lf.Comparison.load(tmp_path)
    assert loaded.stopped_early == info
    assert loaded.summary.round(12).equals(cmp.summary.round(12))
    again = lf.compare(CASES, {"good": good, "poor": poor}, [METRIC], stop_early=True, progress=False,
                       stats=lf.StatsConfig(seed=3), out=tmp_path, resume=True)
    assert again.stopped_early["cases_analysed"] == info["cases_analysed"]
    assert what_it_says(again) == what_it_says(cmp)


@pytest.mark.parametrize("repeat", [2])
def test_the_cli_prints_the_same_stop_for_the_same_seed(tmp_path, capsys, repeat):
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in CASES), encoding="utf-8")
    printed = []
    for _ in range(repeat):
        code = cli_main(["compare", str(data), "-a", "good=tests.core.run.test_stop_early_deterministic:good",
                         "-a", "poor=tests.core.run.test_stop_early_deterministic:poor", "-m", METRIC,
                         "--stop-early", "--seed", "3", "--quiet"])
        out = capsys.readouterr().out
        assert code == 0
        cases = re.search(r"Stopped early after (\d+) of 300 cases", out).group(1)
        rule = re.search(r"the (\d+) of 300 cases run before stopping", out).group(1)
        assert cases == rule
        printed.append([line for line in out.splitlines() if "not run" not in line and "latency" not in line])
    assert all(p == printed[0] for p in printed[1:])
