"""Cost in dollars: the model behind the tokens, prices (yours over genai-prices), cost_usd per run,
per agent, per judge and per simulator, unknown prices as NaN with the model named, never 0."""

from __future__ import annotations

import json
import math
import sys

import genai_prices
import pytest

import levelfield as lf
from levelfield._core.data import prices as price_module
from levelfield._core.results.record import read_record
from levelfield.testing import ScriptedChatModel, last_human_text
from samples.home_automation.agents.langgraph_agent import make_graph

FAST = {"progress": False, "retries": 0}
OWN = {"cheap-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
       "dear-model": {"input_per_mtok": 5.0, "output_per_mtok": 10.0}}
ROWS = [{"case_id": cid, "prompt": prompt, "reference": "ok"} for cid, prompt in
        [("zh", "打开客厅的灯"), ("ja", "台所の温度は？"), ("de", "Schalte das Licht in der Küche ein"),
         ("pt", "Qual é a temperatura da sala?"), ("en", "Turn on the light")]]


def spender(model: str, *, input_tokens: int = 1000, output_tokens: int = 500, answer: str = "ok"):
    """A function agent that reports what it spent, as a dict (Vertex's shape plus usage)."""

    def agent(prompt: str) -> dict:
        return {"response": answer, "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, "model": model}}

    return agent


def library_price(model: str, input_tokens: int, output_tokens: int) -> float:
    """The oracle: genai-prices asked directly."""
    usage = genai_prices.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return float(genai_prices.calc_price(usage, model).total_price)


# -- usage knows its model ------------------------------------------------------------------------


def test_usage_of_one_model_keeps_its_name_and_mixed_usage_keeps_each_share():
    a = lf.Usage(input_tokens=1, output_tokens=2, total_tokens=3, model="m1")
    b = lf.Usage(input_tokens=10, output_tokens=20, total_tokens=30, model="m2")
    assert (a + a).model == "m1" and (a + a).by_model is None
    mixed = a + b + a
    assert mixed.model is None and mixed.total_tokens == 36
    assert {k: v.total_tokens for k, v in mixed.by_model.items()} == {"m1": 6, "m2": 30}
    assert lf.Usage.model_validate_json(mixed.model_dump_json()) == mixed
    # Tokens nobody named a model for stay unnamed: they cannot be priced.
    assert (a + lf.Usage(input_tokens=4, total_tokens=4)).unnamed_tokens() == 4


def test_usage_without_a_model_writes_the_same_record_line_as_before(tmp_path):
    def old_style(prompt: str) -> lf.AgentOutput:
        return lf.AgentOutput(response="ok", usage=lf.Usage(input_tokens=3, output_tokens=4, total_tokens=7))

    lf.evaluate(ROWS[:1], old_style, [], out=tmp_path, **FAST)
    line = next(ln for ln in (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines() if '"kind":"run"' in ln)
    assert json.loads(line)["run"]["output"]["usage"] == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}


# -- prices -----------------------------------------------------------------------------------------


def test_a_known_model_is_priced_by_genai_prices_per_run_and_per_agent():
    result = lf.evaluate(ROWS, spender("gpt-4o-mini"), ["exact_match"], **FAST)
    expected = library_price("gpt-4o-mini", 1000, 500)
    assert expected > 0
    assert result.metrics_table["cost_usd"].tolist() == pytest.approx([expected] * 5)
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(5 * expected)
    assert result.summary_metrics["cost_usd/mean"] == pytest.approx(expected)
    assert "cost_usd/note" not in result.summary_metrics


def test_your_own_prices_override_the_library_and_price_models_it_does_not_know():
    prices = {"gpt-4o-mini": {"input_per_mtok": 100.0, "output_per_mtok": 200.0}, **OWN}
    ours = lf.evaluate(ROWS, spender("gpt-4o-mini"), [], prices=prices, **FAST)
    assert ours.metrics_table["cost_usd"].iloc[0] == pytest.approx((1000 * 100 + 500 * 200) / 1e6)
    unknown_to_library = lf.evaluate(ROWS, spender("cheap-model"), [], prices=prices, **FAST)
    assert unknown_to_library.summary_metrics["cost_usd/sum"] == pytest.approx(5 * (1000 * 1 + 500 * 2) / 1e6)


def test_a_price_file_works_like_a_dict(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(OWN), encoding="utf-8")
    result = lf.evaluate(ROWS, spender("dear-model"), [], prices=str(path), **FAST)
    assert result.summary_metrics["cost_usd/mean"] == pytest.approx((1000 * 5 + 500 * 10) / 1e6)


def test_a_model_without_a_price_is_unknown_and_named_never_zero():
    result = lf.evaluate(ROWS, spender("house-model-7"), ["exact_match"], **FAST)
    table = result.metrics_table
    assert table["cost_usd"].isna().all()
    assert "'house-model-7'" in table["cost_note"].iloc[0]
    assert math.isnan(result.summary_metrics["cost_usd/sum"])
    assert "'house-model-7'" in result.summary_metrics["cost_usd/note"]


def test_one_unpriced_model_in_a_run_makes_that_run_unknown():
    def two_models(prompt: str) -> lf.AgentOutput:
        usage = (lf.Usage(input_tokens=10, output_tokens=10, total_tokens=20, model="gpt-4o-mini")
                 + lf.Usage(input_tokens=10, output_tokens=10, total_tokens=20, model="house-model-7"))
        return lf.AgentOutput(response="ok", usage=usage)

    result = lf.evaluate(ROWS[:2], two_models, [], **FAST)
    assert result.metrics_table["cost_usd"].isna().all()
    assert "house-model-7" in result.summary_metrics["cost_usd/note"]
    assert "gpt-4o-mini" not in result.summary_metrics["cost_usd/note"]


def test_without_genai_prices_the_note_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import genai_prices now raises ImportError
    price_module._library_price.cache_clear()
    price_module.genai_prices_available.cache_clear()
    try:
        result = lf.evaluate(ROWS[:1], spender("gpt-4o-mini"), [], **FAST)
        assert math.isnan(result.summary_metrics["cost_usd/sum"])
        assert "levelfield[cost]" in result.summary_metrics["cost_usd/note"]
        # Your own prices need no library.
        mine = lf.evaluate(ROWS[:1], spender("cheap-model"), [], prices=OWN, **FAST)
        assert mine.summary_metrics["cost_usd/sum"] == pytest.approx(0.002)
    finally:
        price_module._library_price.cache_clear()
        price_module.genai_prices_available.cache_clear()


@pytest.mark.parametrize("bad, named", [
    ({"gpt-x": {"input_per_mtok": -1, "output_per_mtok": 2}}, "gpt-x"),
    ({"模型-甲": {"input_per_mtok": "cheap", "output_per_mtok": 2}}, "模型-甲"),
    ({"m": {"input_per_mtok": 1}}, "'m'"),
    ({"m": {"input_per_mtok": 1, "output_per_mtok": 2, "per_call": 3}}, "per_call"),
    ({"m": 0.5}, "'m'"),
])
def test_a_bad_price_is_an_error_naming_the_model(bad, named):
    with pytest.raises(lf.ConfigError, match=named):
        lf.RunConfig(prices=bad)


def test_a_bad_price_file_names_the_file_and_the_model(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"dear-model": {"input_per_mtok": -5, "output_per_mtok": 1}}), encoding="utf-8")
    with pytest.raises(lf.ConfigError, match=r"prices\.json.*'dear-model'.*input_per_mtok=-5"):
        lf.evaluate(ROWS, spender("dear-model"), [], prices=path, **FAST)


def test_cost_survives_save_and_load(tmp_path):
    result = lf.evaluate(ROWS, spender("cheap-model"), ["exact_match"], prices=OWN, out=tmp_path, **FAST)
    loaded = lf.EvalResult.load(tmp_path)
    assert loaded.summary_metrics["cost_usd/sum"] == result.summary_metrics["cost_usd/sum"] > 0
    assert loaded.runs[0].output.usage.model == "cheap-model"


# -- real frameworks --------------------------------------------------------------------------------


def test_a_langgraph_agent_reports_its_model_and_is_priced():
    graph = make_graph("careful")  # the scripted model names itself "home-automation-careful"
    prices = {"home-automation-careful": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}
    result = lf.evaluate("samples/home_automation/dataset.jsonl", graph, ["trajectory_exact_match"], prices=prices, **FAST)
    for run, cost in zip(result.runs, result.metrics_table["cost_usd"]):
        usage = run.output.usage
        assert usage.model == "home-automation-careful"
        assert cost == pytest.approx((usage.input_tokens * 3 + usage.output_tokens * 15) / 1e6)
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(result.metrics_table["cost_usd"].sum())


def test_a_langgraph_agent_whose_model_has_no_price_is_unknown():
    result = lf.evaluate("samples/home_automation/dataset.jsonl", make_graph("careful"), [], **FAST)
    assert result.metrics_table["cost_usd"].isna().all()
    assert "home-automation-careful" in result.summary_metrics["cost_usd/note"]


def test_judge_cost_is_priced_apart_from_the_agents():
    judge = ScriptedChatModel(lambda messages: "score: 1", model_name="gpt-4o-mini")
    template = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"Helpful": "Is the answer helpful?"}, rating_rubric={"1": "yes", "0": "no"}, input_variables=["prompt"])
    metric = lf.metrics.PointwiseMetric("helpful", template, judge, judge_config=lf.JudgeConfig(structured_output=False, cache=False))
    result = lf.evaluate(ROWS, spender("cheap-model"), [metric], prices=OWN, **FAST)
    table = result.metrics_table
    for tokens_in, tokens_out, cost in zip(table["helpful/input_tokens"], table["helpful/output_tokens"], table["helpful/cost_usd"]):
        assert cost == pytest.approx(library_price("gpt-4o-mini", int(tokens_in), int(tokens_out)))
    assert result.summary_metrics["helpful/cost_usd/sum"] == pytest.approx(table["helpful/cost_usd"].sum())
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(5 * 0.002)  # the agent's own, unchanged


def test_simulator_cost_is_priced_apart_from_the_agents():
    def agent(prompt: str) -> lf.AgentOutput:
        usage = lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15, model="cheap-model")
        return lf.AgentOutput(response="Gebucht." if "São Paulo" in prompt else "Wohin?", usage=usage)

    user = lf.UserSimulator(ScriptedChatModel(lambda m: "</finished>" if "Gebucht" in m[-1].content else "Nach São Paulo.",
                                              model_name="dear-model"), max_turns=4)
    rows = [{"case_id": "s", "scenario": {"starting_prompt": "我需要一个航班。", "conversation_plan": "Flug nach São Paulo."}}]
    result = lf.evaluate(rows, agent, [], simulator=user, prices=OWN, **FAST)
    conv = result.runs[0].conversation
    assert conv.simulator_usage.model == "dear-model"
    expected = (conv.simulator_usage.input_tokens * 5 + conv.simulator_usage.output_tokens * 10) / 1e6
    assert result.metrics_table["simulator_cost_usd"].iloc[0] == pytest.approx(expected)
    assert result.summary_metrics["simulator_cost_usd/sum"] == pytest.approx(expected)
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(2 * (10 * 1 + 5 * 2) / 1e6)


# -- the comparison, its verdict and its report --------------------------------------------------------


def cost_comparison(**options):
    rows = [{"case_id": f"c{i}", "prompt": f"Frage {i}: 温度は？", "reference": "ok"} for i in range(12)]
    agents = {"a": spender("dear-model"), "b": spender("cheap-model"), "c": spender("house-model-7")}
    return lf.compare(rows, agents, ["exact_match"], prices=OWN, **FAST, **options)


def test_compare_summary_has_cost_per_agent_with_an_interval_and_unknown_for_the_unpriced():
    cmp = cost_comparison()
    s = cmp.summary
    assert s.loc["a", "cost_usd/mean"] == pytest.approx(0.01) and s.loc["b", "cost_usd/mean"] == pytest.approx(0.002)
    assert s.loc["a", "cost_usd/ci_low"] <= 0.01 <= s.loc["a", "cost_usd/ci_high"]
    assert s.loc["b", "cost_usd/sum"] == pytest.approx(12 * 0.002)
    assert math.isnan(s.loc["c", "cost_usd/mean"]) and "house-model-7" in s.loc["c", "cost_usd/note"]


def test_verdict_does_not_call_a_cheaper_agent_as_good_when_the_cases_cannot_show_it():
    cmp = cost_comparison()
    line = cmp.verdict().cost
    # a and b answer alike on all 12 cases, but 12 cases cannot rule out a drop (the equivalence test's
    # interval with no case differing is ±20 points at 90 %): no "could miss" figure is quoted on a metric
    # with no differing case, and the sentence says they scored the same.
    assert line.startswith("b is cheaper than a, at 20% of the cost ($0.002 against $0.01 per run), and "
                           "significantly worse on no metric; these 12 cases cannot tell whether it is as good "
                           "(it scored the same as a on every case)")
    assert "as good as" not in line and "the cost of c is unknown" in line
    assert line in str(cmp)


def test_verdict_says_as_good_as_when_the_equivalence_test_passes_within_the_margin():
    cmp = cost_comparison(stats=lf.StatsConfig(margin=0.25))
    assert cmp.verdict().cost.startswith(
        "b is as good as a within 25.0 points on every metric (equivalence test) at 20% of the cost")
    # A margin narrower than what 12 cases can show (no case differing: Tango's 90 % interval is ±19.7 points)
    # keeps the honest sentence.
    assert "cannot tell whether it is as good" in cost_comparison(stats=lf.StatsConfig(margin=0.15)).verdict().cost


def test_verdict_says_when_the_cheaper_agent_is_significantly_worse():
    rows = [{"case_id": f"c{i}", "prompt": f"q{i}", "reference": "ok"} for i in range(12)]
    cmp = lf.compare(rows, {"a": spender("dear-model"), "b": spender("cheap-model", answer="no")}, ["exact_match"],
                     prices=OWN, **FAST)
    assert cmp.verdict().cost.startswith("a costs $0.01 per run; the cheaper b ($0.002) is significantly worse on exact_match")


def test_report_plots_each_priced_agent_against_its_cost(tmp_path):
    cmp = cost_comparison()
    html = lf.report.write(cmp, tmp_path / "report.html").read_text(encoding="utf-8")
    chart = html.split('data-chart="cost"', 1)[1].split("</svg>", 1)[0]
    assert chart.count("<circle") == 2  # a and b; c has no known cost
    assert "Cost unknown, not shown: c:" in html and "house-model-7" in html
    assert "b is cheaper than a" in html


def test_report_without_usage_has_no_cost_section(tmp_path):
    cmp = lf.compare(ROWS, {"a": lambda p: "ok", "b": lambda p: "no"}, ["exact_match"], **FAST)
    html = lf.report.write(cmp, tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="cost"' not in html and "cost_usd/mean" not in cmp.summary


# -- budgets ------------------------------------------------------------------------------------------


def budget_rows():
    return [{"case_id": f"c{i}", "prompt": p, "reference": "ok"}
            for i, p in enumerate(["打开灯", "電気をつけて", "Licht an", "Ligue a luz", "Light on", "灯", "ライト", "Lampe"])]


AGENTS = {"a": spender("cheap-model"), "b": spender("dear-model", output_tokens=1000)}  # $0.002 and $0.015 a run


def compare_budgeted(out, **options):
    return lf.compare(budget_rows(), AGENTS, ["exact_match"], prices=OWN, concurrency=1, out=out, **FAST, **options)


def test_a_budget_stops_starting_runs_and_leaves_them_out_of_the_journal(tmp_path):
    with pytest.warns(lf._core.run.notices.BudgetWarning, match="not started"):
        cmp = compare_budgeted(tmp_path, max_cost_usd=0.05)
    ran = sum(r["runs"] for _, r in cmp.summary.iterrows())
    spent = sum(cmp.summary["cost_usd/sum"])
    assert 0 < ran < 16 and spent <= 0.05
    assert len(cmp.not_started) == 16 - ran and not cmp.complete
    record = read_record(tmp_path)
    assert record.header["status"] == "budget_exhausted"
    assert sorted(record.missing()) == sorted(cmp.not_started)
    loaded = lf.Comparison.load(tmp_path)
    assert sorted(loaded.missing_runs) == sorted(cmp.not_started) and not loaded.complete


def test_resume_with_a_larger_budget_finishes_with_the_numbers_of_an_unbudgeted_run(tmp_path):
    with pytest.warns(lf._core.run.notices.BudgetWarning):
        compare_budgeted(tmp_path / "budgeted", max_cost_usd=0.05)
    finished = compare_budgeted(tmp_path / "budgeted", max_cost_usd=1.0, resume=True)
    whole = compare_budgeted(tmp_path / "whole")
    assert finished.complete and finished.not_started == []
    assert read_record(tmp_path / "budgeted").header["status"] == "complete"
    columns = ["runs", "exact_match/mean", "cost_usd/mean", "cost_usd/sum", "total_tokens/mean"]
    assert finished.summary[columns].equals(whole.summary[columns])
    assert sorted(finished.metrics_table["case_id"] + finished.metrics_table["agent"]) == \
        sorted(whole.metrics_table["case_id"] + whole.metrics_table["agent"])


def test_resume_with_the_same_budget_starts_nothing_more(tmp_path):
    with pytest.warns(lf._core.run.notices.BudgetWarning):
        first = compare_budgeted(tmp_path, max_cost_usd=0.05)
    with pytest.warns(lf._core.run.notices.BudgetWarning):
        again = compare_budgeted(tmp_path, max_cost_usd=0.05, resume=True)
    assert sorted(again.not_started) == sorted(first.not_started)


def test_a_budget_needs_no_out_folder_and_evaluate_keeps_what_ran():
    with pytest.warns(lf._core.run.notices.BudgetWarning, match="give out="):
        result = lf.evaluate(budget_rows(), spender("dear-model"), ["exact_match"], prices=OWN, concurrency=1,
                             max_cost_usd=0.025, **FAST)
    assert len(result.runs) == 2 and len(result.not_started) == 6  # $0.01 a run: the third would pass $0.025
    assert result.summary_metrics["cost_usd/sum"] == pytest.approx(0.02)


def test_a_budget_cannot_count_unpriced_runs_and_says_so():
    with pytest.warns(lf._core.run.notices.BudgetWarning, match="house-model-7"):
        result = lf.evaluate(budget_rows(), spender("house-model-7"), [], max_cost_usd=0.001, **FAST)
    assert len(result.runs) == 8


@pytest.mark.parametrize("value", [-1, "10", True])
def test_a_bad_budget_is_an_error(value):
    with pytest.raises(lf.ConfigError, match="max_cost_usd"):
        lf.RunConfig(max_cost_usd=value)


def test_the_judge_budget_stops_judging_and_resume_judges_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[str] = []

    def judge(messages):
        calls.append(last_human_text(messages))
        return "score: 1"

    template = lf.metrics.PointwiseMetricPromptTemplate(
        criteria={"Helpful": "Is the answer helpful?"}, rating_rubric={"1": "yes", "0": "no"}, input_variables=["prompt"])
    metric = lf.metrics.PointwiseMetric("helpful", template, ScriptedChatModel(judge, model_name="j"),
                                        judge_config=lf.JudgeConfig(structured_output=False, concurrency=1))
    prices = {**OWN, "j": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}}
    with pytest.warns(lf._core.run.notices.BudgetWarning, match="judge_max_cost_usd"):
        first = lf.evaluate(budget_rows(), spender("cheap-model"), [metric], prices=prices, out=tmp_path / "run",
                            judge_max_cost_usd=0.5, **FAST)
    judged = first.metrics_table["helpful/score"].notna()
    one_call = first.metrics_table["helpful/cost_usd"][judged].max()
    assert 0 < judged.sum() < 8 and first.summary_metrics["helpful/cost_usd/sum"] <= 0.5
    assert first.summary_metrics["helpful/failure_count"] == 8 - judged.sum()
    asked = len(calls)
    again = lf.evaluate(budget_rows(), spender("cheap-model"), [metric], prices=prices, out=tmp_path / "run",
                        resume=True, judge_max_cost_usd=10.0, **FAST)
    assert again.metrics_table["helpful/score"].notna().all()
    assert len(calls) - asked == 8 - judged.sum()  # the answers given before come from the cache
    assert one_call > 0


def test_max_cost_does_not_combine_with_saved_predictions():
    with pytest.raises(lf.ConfigError, match="saved predictions"):
        lf.evaluate([{"prompt": "p", "response": "ok", "reference": "ok"}], None, ["exact_match"], max_cost_usd=1.0)



def test_with_a_budget_runs_still_go_in_parallel_once_the_first_has_finished():
    # A run's cost is known only when it ends: the first runs alone, the others then share the slots.
    import threading

    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def agent(prompt: str) -> dict:
        import time

        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return {"response": "ok", "usage": {"input_tokens": 10, "output_tokens": 10, "model": "cheap-model"}}

    result = lf.evaluate(budget_rows(), agent, [], prices=OWN, concurrency=4, max_cost_usd=1.0, **FAST)
    assert len(result.runs) == 8 and state["most"] > 1


# -- adapters name the model ----------------------------------------------------------------------------


def test_a2a_round_trip_keeps_the_model_of_the_usage():
    pytest.importorskip("uvicorn")
    from levelfield.adapters import A2AAgent
    from levelfield.adapters.a2a.server import start_server

    async def team(prompt: str) -> lf.AgentOutput:
        usage = (lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15, model="cheap-model")
                 + lf.Usage(input_tokens=1, output_tokens=2, total_tokens=3, model="dear-model"))
        return lf.AgentOutput(response="完成", usage=usage)

    async def solo(prompt: str) -> dict:
        return {"response": "fertig", "usage": {"input_tokens": 7, "output_tokens": 3, "model": "cheap-model"}}

    with start_server(team) as server:
        mixed = lf.evaluate(ROWS[:1], A2AAgent(server.url), [], prices=OWN, **FAST)
    with start_server(solo) as server:
        single = lf.evaluate(ROWS[:1], A2AAgent(server.url), [], prices=OWN, **FAST)
    assert mixed.runs[0].output.usage == (lf.Usage(input_tokens=10, output_tokens=5, total_tokens=15, model="cheap-model")
                                          + lf.Usage(input_tokens=1, output_tokens=2, total_tokens=3, model="dear-model"))
    assert mixed.metrics_table["cost_usd"].iloc[0] == pytest.approx((10 + 5 * 2 + 1 * 5 + 2 * 10) / 1e6)
    assert single.runs[0].output.usage.model == "cheap-model"
    assert single.metrics_table["cost_usd"].iloc[0] == pytest.approx((7 + 3 * 2) / 1e6)


def test_adk_events_name_the_model_that_spent_the_tokens():
    pytest.importorskip("vertexai")
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    from levelfield.adapters import AgentEngineAgent
    from tests.adapters.test_agent_engine import adk_app

    def answer(text: str, model: str, tokens: tuple[int, int]) -> LlmResponse:
        return LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=text)]), model_version=model,
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=tokens[0], candidates_token_count=tokens[1], total_token_count=sum(tokens)))

    app = adk_app([answer("Die Küche hat 21 Grad.", "gemini-2.5-flash", (100, 20))])
    result = lf.evaluate(ROWS[2:3], AgentEngineAgent(app), [], **FAST)
    usage = result.runs[0].output.usage
    assert usage.model == "gemini-2.5-flash" and usage.input_tokens == 100
    assert result.metrics_table["cost_usd"].iloc[0] == pytest.approx(library_price("gemini-2.5-flash", 100, 20))


def test_a_function_agent_with_a_malformed_usage_is_a_failed_run_saying_so():
    result = lf.evaluate(ROWS[:1], lambda p: {"response": "ok", "usage": {"input_tokens": "many"}}, [], **FAST)
    assert result.runs[0].failure and "usage" in result.runs[0].error


# -- the command line -------------------------------------------------------------------------------------


def test_cli_max_cost_stops_and_resume_with_more_finishes(tmp_path, capsys, monkeypatch):
    from levelfield.cli.main import main

    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in budget_rows()), encoding="utf-8")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(OWN), encoding="utf-8")
    module = tmp_path / "cost_agents.py"
    module.write_text("def dear(prompt):\n    return {'response': 'ok', 'usage': {'input_tokens': 1000, "
                      "'output_tokens': 500, 'model': 'dear-model'}}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    common = ["compare", str(data), "--agent", "d=cost_agents:dear", "-m", "exact_match", "-q", "--concurrency", "1",
              "--prices", str(prices), "--out", str(out)]
    code = main([*common, "--max-cost", "0.025"])
    captured = capsys.readouterr()
    assert code == 1 and "--max-cost 0.025 reached: $0.02 spent, $0.005 left; 6 run(s) not started" in captured.err
    assert "d: $0.02 spent on 2 run(s), $0.01 a run; stopped, 6 run(s) not started" in captured.err
    assert "--resume --max-cost MORE" in captured.err
    code = main([*common, "--resume", "--max-cost", "1"])
    captured = capsys.readouterr()
    assert code == 0 and "cost per run ($)" in captured.out
    assert len(lf.Comparison.load(out).results["d"].runs) == 8


def test_cli_bad_price_file_exits_2_naming_the_model(tmp_path, capsys):
    from levelfield.cli.main import main

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-oss": {"input_per_mtok": "free", "output_per_mtok": 0}}), encoding="utf-8")
    code = main(["compare", "samples/home_automation/dataset.jsonl", "--agent",
                 "samples.home_automation.agents.function_agents:careful_agent", "-q", "--prices", str(prices)])
    assert code == 2 and "'gpt-oss'" in capsys.readouterr().err


def test_when_no_agent_has_a_known_cost_the_table_says_why_once_instead_of_a_row_of_unknowns():
    from levelfield.comparison._text import format_comparison

    cmp = lf.compare(ROWS, {"haus": spender("haus-modell-7"), "家": spender("家のモデル")}, ["exact_match"], **FAST)
    text = format_comparison(cmp)
    assert "cost per run" not in text
    assert "(cost unknown: haus: no price known for model(s) 'haus-modell-7'" in text
    assert "家: no price known for model(s) '家のモデル'" in text and "pass prices={...} or --prices FILE" in text
    # One agent priced: the row is back, the unpriced one "unknown" in it.
    mixed = lf.compare(ROWS, {"cheap": spender("cheap-model"), "家": spender("家のモデル")}, ["exact_match"],
                       prices=OWN, **FAST)
    row = next(line for line in format_comparison(mixed).splitlines() if line.startswith("cost per run ($)"))
    assert row.split()[-2:] == ["0.002", "unknown"]
    assert "(cost unknown" not in format_comparison(mixed)


def test_the_could_miss_figure_is_the_equivalence_bound_on_a_metric_the_two_differ_on():
    """Issue 55: the sentence cited a metric on which the two agents were identical on every case."""
    from levelfield._core.stats.paired import equivalence_bound

    rows = [{"case_id": f"c{i}", "prompt": f"Frage {i}: 温度は？", "reference": "ok ok"} for i in range(17)]

    def cheap(prompt: str) -> dict:
        i = int(prompt.split(":")[0].split()[-1])
        return {"response": "ok" if i < 3 else "ok ok", "usage": {"input_tokens": 1000, "output_tokens": 500,
                                                                 "model": "cheap-model"}}

    agents = {"dear": spender("dear-model", answer="ok ok"), "cheap": cheap}
    # exact_match differs on 3 cases; trajectory_exact_match (no trajectory on either side) is the same on every case.
    cmp = lf.compare(rows, agents, ["exact_match", "trajectory_exact_match"], prices=OWN, **FAST)
    line = cmp.verdict().cost
    bound = equivalence_bound(cmp.paired("exact_match", "cheap", "dear"), alpha=0.05)
    assert f"(they could miss a difference of up to {bound * 100:.1f} points on exact_match)" in line
