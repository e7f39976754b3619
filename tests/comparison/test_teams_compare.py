"""Issue 28's whole path on one dataset: a real ADK multi-agent app (through the Agent Engine AdkApp
template) against a LangGraph supervisor, compared with per-agent trajectories, hand-off scores,
cost per agent in dollars, a quality/cost chart, and a budget that stops the run until resumed."""

from __future__ import annotations

import math

import pytest

import levelfield as lf

pytest.importorskip("google.adk")
from tests.adapters.test_adk_teams import desk_app  # noqa: E402  (real ADK team, scripted model "scripted")
from tests.adapters.test_langgraph_teams import supervisor_team  # noqa: E402  (real LangGraph supervisor)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ROWS = [
    {"case_id": f"refund-{i}", "prompt": "Geld zurück für Rechnung 7", "reference_handoffs": ["billing"],
     "reference_trajectory": [{"tool_name": "refund", "tool_input": {"invoice": 7}, "agent": "billing"}]}
    for i in range(4)
]
METRICS = ["handoff_in_order_match", "tool_attribution", lf.metrics.TrajectoryRecall(agent="billing"), "token_count"]
# Dollars per million tokens for the scripted models each team runs on.
PRICES = {name: {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
          for name in ("scripted", "supervisor", "billing", "support")}


def teams():
    return {"adk": desk_app(), "langgraph": supervisor_team()}


def test_one_compare_shows_who_did_what_the_handoffs_and_the_cost_per_agent(tmp_path):
    cmp = lf.compare(ROWS, teams(), METRICS, progress=False, retries=0, prices=PRICES, concurrency=2,
                     out=tmp_path)
    s = cmp.summary
    for agent in ("adk", "langgraph"):
        assert s.loc[agent, "handoff_in_order_match/mean"] == 1.0
        assert s.loc[agent, "tool_attribution/mean"] == 1.0
        assert s.loc[agent, "trajectory_recall_billing/mean"] == 1.0
        assert s.loc[agent, "cost_usd/mean"] > 0 and not math.isnan(s.loc[agent, "cost_usd/mean"])
    adk_calls = cmp.results["adk"].runs[0].output.trajectory
    assert [(c.tool_name, c.agent) for c in adk_calls if c.tool_name in ("lookup", "refund")] == [
        ("lookup", "researcher"), ("refund", "billing")]
    graph_calls = cmp.results["langgraph"].runs[0].output.trajectory
    assert [(c.tool_name, c.agent) for c in graph_calls] == [("transfer_to_billing", "supervisor"), ("refund", "billing")]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="cost"' in page and "Quality and cost" in page


def test_a_budget_stops_the_teams_and_resume_with_more_finishes_them(tmp_path):
    full = lf.compare(ROWS, teams(), METRICS, progress=False, retries=0, prices=PRICES, concurrency=1)
    per_run = float(full.summary["cost_usd/mean"].max())
    budget = per_run * 3  # room for about three of the eight runs
    stopped = lf.compare(ROWS, teams(), METRICS, progress=False, retries=0, prices=PRICES, concurrency=1,
                         out=tmp_path, max_cost_usd=budget)
    made = sum(len(r.runs) for r in stopped.results.values())
    assert 0 < made < 8 and stopped.not_started
    resumed = lf.compare(ROWS, teams(), METRICS, progress=False, retries=0, prices=PRICES, concurrency=1,
                         out=tmp_path, resume=True, max_cost_usd=budget * 10)
    assert sum(len(r.runs) for r in resumed.results.values()) == 8
    for column in ("handoff_in_order_match/mean", "tool_attribution/mean", "cost_usd/mean"):
        assert resumed.summary[column].to_dict() == pytest.approx(full.summary[column].to_dict())
