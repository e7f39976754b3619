"""An option that does not apply to the run is refused, naming the option and why: passed silently, it
looks like it worked (workers with an agent, rate limits or caps naming no agent, a judge budget or judge_config with no judged metric,
agent options when no agent runs)."""

from __future__ import annotations

import pytest

import levelfield as lf
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent

SAMPLE = "samples/home_automation/dataset.jsonl"
QUIET = {"progress": False}


def test_workers_with_an_agent_is_refused():
    with pytest.raises(lf.ConfigError, match=r"workers=4 sets the processes that score saved predictions.*concurrency="):
        lf.evaluate(SAMPLE, careful_agent, metrics=["trajectory_exact_match"], workers=4, **QUIET)
    with pytest.raises(lf.ConfigError, match=r"workers=-1"):
        lf.compare(SAMPLE, {"careful": careful_agent, "hasty": hasty_agent}, metrics=["trajectory_exact_match"],
                   workers=-1, **QUIET)


@pytest.mark.parametrize("option", ["requests_per_minute", "tokens_per_minute"])
def test_a_rate_limit_naming_no_agent_is_refused_with_a_did_you_mean(option):
    agents = {"careful": careful_agent, "hasty": hasty_agent}
    with pytest.raises(lf.ConfigError, match=rf"{option} names 'carefull', which is no agent of this run\. "
                                             r"Did you mean 'careful'\?"):
        lf.compare(SAMPLE, agents, metrics=["trajectory_exact_match"], **{option: {"carefull": 60}}, **QUIET)
    # the agents, the judge and the simulated user are the endpoints a limit may name
    cmp = lf.compare(SAMPLE, agents, metrics=["trajectory_exact_match"],
                     **{option: {"careful": 6000, "judge": 60, "simulator": 60}}, **QUIET)
    assert set(cmp.results) == {"careful", "hasty"}


def test_a_judge_budget_with_no_judged_metric_is_refused():
    with pytest.raises(lf.ConfigError, match=r"judge_max_cost_usd=1 limits what judged metrics spend, and none of "
                                             r"the metrics is judged \(trajectory_exact_match\)"):
        lf.evaluate(SAMPLE, careful_agent, metrics=["trajectory_exact_match"], judge_max_cost_usd=1.0, **QUIET)
    with pytest.raises(lf.ConfigError, match=r"judge_max_cost_usd=2"):
        lf.evaluate(SAMPLE, metrics=["trajectory_exact_match"], judge_max_cost_usd=2.0, **QUIET)  # saved predictions
    with pytest.raises(lf.ConfigError, match=r"judge_max_cost_usd=3"):
        lf.compare(SAMPLE, {"careful": careful_agent, "hasty": hasty_agent}, metrics=["trajectory_exact_match"],
                   judge_max_cost_usd=3.0, **QUIET)


def test_the_options_that_apply_still_pass():
    result = lf.evaluate(SAMPLE, careful_agent, metrics=["trajectory_exact_match"], requests_per_minute=6000,
                         workers=1, **QUIET)
    assert len(result.metrics_table) > 0


def test_agent_options_with_saved_predictions_are_refused():
    with pytest.raises(lf.ConfigError, match=r"agent_concurrency caps agents' runs; scoring saved predictions runs no agent"):
        lf.evaluate(SAMPLE, metrics=["trajectory_exact_match"], agent_concurrency={"careful": 2}, **QUIET)
    with pytest.raises(lf.ConfigError, match=r"trials=3 runs the agent on every case that many times; scoring saved "
                                             r"predictions runs no agent"):
        lf.evaluate(SAMPLE, metrics=["trajectory_exact_match"], trials=3, **QUIET)
    with pytest.raises(lf.ConfigError, match=r"isolation='process' runs agents in worker processes; scoring saved "
                                             r"predictions runs no agent \(workers= sets"):
        lf.evaluate(SAMPLE, metrics=["trajectory_exact_match"], isolation="process", **QUIET)


def test_agent_concurrency_naming_no_agent_is_refused():
    with pytest.raises(lf.ConfigError, match=r"agent_concurrency names unknown agents: carefull \(the agents are: careful, hasty\)"):
        lf.compare(SAMPLE, {"careful": careful_agent, "hasty": hasty_agent}, metrics=["trajectory_exact_match"],
                   agent_concurrency={"carefull": 2}, **QUIET)


def test_a_judge_config_with_no_metric_built_from_a_name_is_refused():
    with pytest.raises(lf.ConfigError, match=r"judge_config=\.\.\. says how the metrics built from names .* none of "
                                             r"these metrics is one \(trajectory_exact_match\)"):
        lf.evaluate(SAMPLE, careful_agent, metrics=["trajectory_exact_match"], judge=lambda p: "valid",
                    judge_config=lf.JudgeConfig(samples=3), **QUIET)
