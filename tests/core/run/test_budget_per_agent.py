"""max_cost_usd is a budget per agent: each agent's next run is estimated from its own runs, runs
start while they fit in what is left, only the agents whose next run would not fit stop, and the
result says what each agent spent and was kept from starting."""

import json
import math

import pytest

import levelfield as lf
from levelfield._core.run.notices import BudgetWarning

PRICES = {"cheap-model": {"input_per_mtok": 1.0, "output_per_mtok": 1.0},
          "dear-model": {"input_per_mtok": 100.0, "output_per_mtok": 100.0}}
FAST = dict(progress=False, retries=0)
ROWS = [{"case_id": f"c{i}", "prompt": f"question {i}", "reference": "ok"} for i in range(13)]


def agent(model: str, tokens: int):
    """A function agent whose every run reports ``tokens`` tokens of ``model`` (so a fixed cost)."""
    def run(prompt: str) -> dict:
        return {"response": "ok", "usage": {"input_tokens": tokens // 2, "output_tokens": tokens - tokens // 2,
                                            "model": model}}
    return run


CHEAP = agent("cheap-model", 5_500)     # $0.0055 a run
DEAR = agent("dear-model", 1_700)       # $0.17 a run


def compare(rows=ROWS, **options):
    return lf.compare(rows, {"cheap": CHEAP, "dear": DEAR}, ["exact_match"], prices=PRICES, **FAST, **options)


def test_the_cheap_agent_finishes_while_the_dear_one_stops_and_the_warning_says_each_ones_spend():
    with pytest.warns(BudgetWarning) as caught:
        cmp = compare(max_cost_usd=0.5)
    runs = {name: [r.case_id for r in result.runs] for name, result in cmp.results.items()}
    assert runs["cheap"] == [r["case_id"] for r in ROWS]  # every case: it was not stopped with the dear one
    assert runs["dear"] == ["c0", "c1"]  # the first cases in plan order: a third $0.17 would pass $0.50
    budget = cmp.budget
    assert budget.agents["cheap"].spent_usd == pytest.approx(13 * 0.0055)
    assert budget.agents["dear"].spent_usd == pytest.approx(2 * 0.17)
    assert budget.spent_usd == pytest.approx(13 * 0.0055 + 2 * 0.17) and budget.spent_usd <= 0.5
    assert budget.left_usd == pytest.approx(0.5 - budget.spent_usd)
    assert budget.agents["cheap"].not_started == 0 and budget.agents["dear"].not_started == 11
    assert budget.agents["dear"].next_run_usd == pytest.approx(0.17)
    assert sorted(cmp.not_started) == sorted(("dear", f"c{i}", 0) for i in range(2, 13))
    text = str(caught[0].message)
    assert f"${budget.spent_usd:.4g} spent, ${budget.left_usd:.4g} left; 11 run(s) not started" in text
    assert "cheap: $0.0715 spent on 13 run(s), $0.0055 a run; all its runs started" in text
    assert "dear: $0.34 spent on 2 run(s), $0.17 a run; stopped, 11 run(s) not started" in text
    assert str(budget).splitlines()[1:] == [f"  {line}" for line in budget.agent_lines()]


def test_in_flight_runs_hold_their_estimate_so_many_slots_do_not_overspend():
    with pytest.warns(BudgetWarning):
        cmp = compare(max_cost_usd=0.5, concurrency=8)
    assert cmp.budget.spent_usd <= 0.5
    assert len(cmp.results["cheap"].runs) == 13 and len(cmp.results["dear"].runs) == 2


def test_resume_with_a_larger_limit_runs_the_dear_agents_runs_not_started(tmp_path):
    with pytest.warns(BudgetWarning):
        compare(max_cost_usd=0.5, out=tmp_path / "run", concurrency=1)
    loaded = lf.Comparison.load(tmp_path / "run")
    assert loaded.budget is not None and loaded.budget.agents["dear"].not_started == 11  # the record keeps it
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "dear: $0.34 spent on 2 run(s), $0.17 a run; stopped, 11 run(s) not started" in page
    finished = compare(max_cost_usd=5.0, out=tmp_path / "run", resume=True, concurrency=1)
    assert finished.not_started == [] and finished.complete
    assert finished.budget.agents["dear"].runs == 13 and finished.budget.agents["dear"].not_started == 0
    assert finished.budget.spent_usd == pytest.approx(13 * (0.0055 + 0.17))
    whole = compare()
    assert finished.summary["cost_usd/sum"].to_dict() == pytest.approx(whole.summary["cost_usd/sum"].to_dict())


def test_a_longer_case_is_estimated_dearer_once_the_agents_runs_show_length_costs():
    # Cost grows with the prompt: $0.001 a character. Four short cases, then one ten times longer.
    rows = [{"case_id": f"s{n}", "prompt": "x" * n, "reference": "ok"} for n in (10, 20, 30, 40)]
    rows.append({"case_id": "long", "prompt": "x" * 400, "reference": "ok"})

    def by_length(prompt: str) -> dict:
        return {"response": "ok", "usage": {"input_tokens": 10 * len(prompt), "output_tokens": 0, "model": "dear-model"}}

    with pytest.warns(BudgetWarning, match="long|not started"):
        result = lf.evaluate(rows, by_length, ["exact_match"], prices=PRICES, max_cost_usd=0.3, concurrency=1, **FAST)
    # The mean of the short runs ($0.025) fits in the $0.20 left; the length-scaled estimate ($0.40) does not.
    assert [r.case_id for r in result.runs] == ["s10", "s20", "s30", "s40"]
    assert [case for _, case, _ in result.not_started] == ["long"]
    spend = next(iter(result.budget.agents.values()))
    assert spend.spent_usd == pytest.approx(0.1) and spend.next_run_usd == pytest.approx(0.4)


def test_a_shorter_case_is_never_estimated_below_the_agents_mean():
    from levelfield._core.data.cost_limit import RunBudget
    from levelfield._core.data.types import AgentOutput, AgentRun, Usage

    budget = RunBudget(1.0, PRICES, ["a"])
    for size in (10, 20, 30, 40):
        usage = Usage(input_tokens=10 * size, output_tokens=0, total_tokens=10 * size, model="dear-model")
        run = AgentRun(case_id=str(size), agent_name="a", trial=0, output=AgentOutput(response="", usage=usage),
                       latency_in_seconds=0.0, failure=False)
        budget.settle("a", size, budget.admit("a", size), run)
    assert budget.estimate("a", 1) == pytest.approx(0.025)  # the mean, not 1/25 of it
    assert budget.estimate("a", 25) == pytest.approx(0.025)
    assert budget.estimate("a", 125) == pytest.approx(0.125)  # the fitted line: $0.001 a character


def test_evaluate_keeps_the_budget_on_its_result_and_an_unlimited_run_has_none():
    with pytest.warns(BudgetWarning):
        result = lf.evaluate(ROWS, DEAR, ["exact_match"], prices=PRICES, max_cost_usd=0.4, **FAST)
    spend = result.budget.agents[result.agent_name]
    assert spend.runs == 2 and spend.not_started == 11 and len(result.not_started) == 11
    assert result.budget.left_usd == pytest.approx(0.4 - 0.34)
    assert lf.evaluate(ROWS[:2], DEAR, ["exact_match"], prices=PRICES, **FAST).budget is None


def test_a_budget_every_run_fits_in_reports_what_was_spent_and_warns_nothing(recwarn):
    cmp = compare(max_cost_usd=10.0)
    assert not [w for w in recwarn if issubclass(w.category, BudgetWarning)]
    assert cmp.budget.not_started == 0 and not cmp.budget.reached
    assert cmp.budget.spent_usd == pytest.approx(13 * (0.0055 + 0.17))


@pytest.mark.parametrize("value", [0, 0.0, -0.5, math.nan, "1", True])
def test_a_bad_limit_is_an_error_naming_the_option(value):
    with pytest.raises(lf.ConfigError, match=r"max_cost_usd=.*(> 0|dollars)"):
        lf.RunConfig(max_cost_usd=value)
    with pytest.raises(lf.ConfigError, match="max_cost_usd"):
        compare(max_cost_usd=value)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "lots"])
def test_the_cli_refuses_a_bad_max_cost_naming_it(tmp_path, capsys, value):
    from levelfield.cli.main import main

    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["compare", str(data), "--agent", "samples.home_automation.agents.function_agents:careful_agent",
              "--max-cost", value])
    assert exit_.value.code == 2 and "--max-cost" in capsys.readouterr().err


def test_the_cli_says_spent_left_and_not_started_per_agent(tmp_path, capsys, monkeypatch):
    from levelfield.cli.main import main

    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES), encoding="utf-8")
    (tmp_path / "budget_agents.py").write_text(
        "def cheap(prompt):\n    return {'response': 'ok', 'usage': {'input_tokens': 2750, 'output_tokens': 2750, "
        "'model': 'cheap-model'}}\n"
        "def dear(prompt):\n    return {'response': 'ok', 'usage': {'input_tokens': 850, 'output_tokens': 850, "
        "'model': 'dear-model'}}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["compare", str(data), "-a", "cheap=budget_agents:cheap", "-a", "dear=budget_agents:dear",
                 "-m", "exact_match", "-q", "--prices", str(prices), "--max-cost", "0.5"])
    err = capsys.readouterr().err
    assert code == 1
    assert "--max-cost 0.5 reached: $0.4115 spent, $0.0885 left; 11 run(s) not started" in err
    assert "  cheap: $0.0715 spent on 13 run(s), $0.0055 a run; all its runs started" in err
    assert "  dear: $0.34 spent on 2 run(s), $0.17 a run; stopped, 11 run(s) not started" in err
