"""Multi-agent, efficiency and final-state metrics: hand-offs, attribution, per-agent trajectories,
call and token counts, and user checks of the final state; both scoring paths agree on them."""

from __future__ import annotations

import asyncio
import math
import random

import numpy as np
import pytest

import levelfield as lf
from levelfield import load_dataset
from levelfield._core.errors import DatasetError
from levelfield._core.run.engine import score_saved
from levelfield._core.score.batch.pool import score_batches
from levelfield._core.score.batch.rows import batches_of
from levelfield._core.score.metrics.registry import resolve_metrics

FAST = {"progress": False, "retries": 0}


def team_agent(prompt: str) -> dict:
    """A support desk: the router hands off to billing (Chinese name of the refund tool), billing hands back."""
    return {
        "response": "Erstattung veranlasst",
        "predicted_trajectory": [
            {"tool_name": "classify", "tool_input": {"text": prompt}, "agent": "router"},
            {"tool_name": "get_invoice", "tool_input": {"id": 7}, "agent": "billing"},
            {"tool_name": "退款", "tool_input": {"id": 7}, "agent": "billing"},
            {"tool_name": "get_invoice", "tool_input": {"id": 7}, "agent": "billing"},
        ],
        "handoffs": [{"from_agent": "router", "to_agent": "billing"}, {"from_agent": "billing", "to_agent": "router"}],
        "state": {"refunded": [7], "ticket": "geschlossen"},
        "usage": {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42},
    }


REFERENCE = [
    {"tool_name": "classify", "tool_input": {"text": "Geld zurück"}, "agent": "router"},
    {"tool_name": "get_invoice", "tool_input": {"id": 7}, "agent": "billing"},
    {"tool_name": "退款", "tool_input": {"id": 7}, "agent": "billing"},
]


def evaluate(rows, metrics, agent=team_agent, **kwargs):
    return lf.evaluate(rows, agent, metrics=metrics, **FAST, **kwargs)


def one(rows, metrics, agent=team_agent):
    table = evaluate(rows, metrics, agent).metrics_table
    return table.iloc[0]


# -- hand-offs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reference, exact, in_order, any_order",
    [
        (["billing", "router"], 1.0, 1.0, 1.0),
        (["billing"], 0.0, 1.0, 1.0),
        (["router", "billing"], 0.0, 0.0, 1.0),
        ([{"from_agent": "router", "to_agent": "billing"}, {"to_agent": "router"}], 1.0, 1.0, 1.0),
        ([{"from_agent": "support", "to_agent": "billing"}], 0.0, 0.0, 0.0),
        ([], 0.0, 1.0, 1.0),
    ],
)
def test_handoff_match_modes_compare_the_sequence_of_agents(reference, exact, in_order, any_order):
    row = one(
        [{"case_id": "c", "prompt": "Geld zurück", "reference_handoffs": reference}],
        ["handoff_match", "handoff_in_order_match", "handoff_any_order_match"],
    )
    assert (row["handoff_match/score"], row["handoff_in_order_match/score"], row["handoff_any_order_match/score"]) == (
        exact, in_order, any_order,
    )


def test_a_reference_handoff_to_an_agent_that_never_appears_is_a_note_not_a_crash():
    row = one([{"case_id": "c", "prompt": "x", "reference_handoffs": '["shipping"]'}], ["handoff_in_order_match"])
    assert row["handoff_in_order_match/score"] == 0.0
    assert "agent 'shipping' never appears in this run (agents seen: 'router', 'billing')" in row["handoff_in_order_match/explanation"]


def test_rows_without_reference_handoffs_are_not_scored_by_handoff_match():
    result = evaluate([{"case_id": "c", "prompt": "x"}], ["handoff_match"])
    assert math.isnan(result.metrics_table.iloc[0]["handoff_match/score"])
    assert result.summary_metrics["handoff_match/nan_count"] == 1


def test_a_bad_reference_handoffs_cell_names_the_row_and_field():
    with pytest.raises(DatasetError, match=r"row 1, field 'expected_handoffs', item 0: expected an agent name"):
        lf.load_dataset([{"prompt": "x", "expected_handoffs": [3]}])


def test_a_function_agent_returning_malformed_handoffs_is_a_failed_run_saying_what_was_expected():
    def bad(prompt):
        return {"response": "ok", "handoffs": {"to": "billing"}}

    run = evaluate([{"case_id": "c", "prompt": "x"}], [], agent=bad).runs[0]
    assert run.failure and "handoffs" in run.error and "agent names" in run.error


# -- attribution and per-agent trajectories ---------------------------------------------------------


def test_tool_attribution_credits_calls_made_by_the_expected_agent_and_names_the_wrong_one():
    reference = [dict(REFERENCE[0]), dict(REFERENCE[1], agent="router"), dict(REFERENCE[2])]
    row = one([{"case_id": "c", "prompt": "Geld zurück", "reference_trajectory": reference}], ["tool_attribution"])
    assert row["tool_attribution/score"] == pytest.approx(2 / 3)
    assert "get_invoice expected from 'router' was made by 'billing'" in row["tool_attribution/explanation"]


def test_tool_attribution_is_not_scored_when_the_reference_names_no_agent():
    reference = [{k: v for k, v in c.items() if k != "agent"} for c in REFERENCE]
    row = one([{"case_id": "c", "prompt": "Geld zurück", "reference_trajectory": reference}], ["tool_attribution"])
    assert math.isnan(row["tool_attribution/score"])


def test_a_trajectory_metric_restricted_to_one_agent_scores_only_its_calls():
    metrics = [
        lf.metrics.TrajectoryExactMatch(agent="billing"),
        lf.metrics.TrajectoryPrecision(agent="billing"),
        lf.metrics.TrajectoryRecall(agent="router"),
        "trajectory_exact_match",
    ]
    row = one([{"case_id": "c", "prompt": "Geld zurück", "reference_trajectory": REFERENCE}], metrics)
    # billing called get_invoice twice; the reference expects it once, then 退款.
    assert row["trajectory_exact_match_billing/score"] == 0.0
    assert row["trajectory_precision_billing/score"] == pytest.approx(2 / 3)
    assert row["trajectory_recall_router/score"] == 1.0
    assert row["trajectory_precision_billing/explanation"].startswith("agent 'billing': matched 2/3 predicted calls")


def test_an_agent_metric_whose_reference_names_no_agent_compares_that_agent_with_the_whole_reference():
    reference = [{"tool_name": "get_invoice", "tool_input": {"id": 7}}, {"tool_name": "退款", "tool_input": {"id": 7}}]
    row = one(
        [{"case_id": "c", "prompt": "x", "reference_trajectory": reference}],
        [lf.metrics.TrajectoryInOrderMatch(agent="billing"), lf.metrics.TrajectoryInOrderMatch(agent="router")],
    )
    assert row["trajectory_in_order_match_billing/score"] == 1.0
    assert row["trajectory_in_order_match_router/score"] == 0.0


def test_an_agent_metric_for_an_agent_that_never_appears_says_so():
    row = one(
        [{"case_id": "c", "prompt": "x", "reference_trajectory": REFERENCE}], [lf.metrics.TrajectoryRecall(agent="versand")]
    )
    assert row["trajectory_recall_versand/score"] == 1.0  # the reference expects nothing of it
    assert row["trajectory_recall_versand/explanation"].startswith("agent 'versand' never appears in this run")


# -- efficiency --------------------------------------------------------------------------------------


def test_efficiency_metrics_count_calls_repeats_and_tokens():
    metrics = ["tool_call_count", "repeated_tool_calls", "token_count", lf.metrics.ToolCallCount(agent="billing"),
               lf.metrics.TokenCount("output")]
    row = one([{"case_id": "c", "prompt": "x"}], metrics)
    assert row["tool_call_count/score"] == 4.0
    assert row["tool_call_count_billing/score"] == 3.0
    assert row["repeated_tool_calls/score"] == 1.0
    assert row["repeated_tool_calls/explanation"] == "repeated: get_invoice x2"
    assert row["token_count/score"] == 42.0
    assert row["output_token_count/score"] == 12.0


def test_model_call_count_is_not_scored_when_the_agent_cannot_tell():
    result = evaluate([{"case_id": "c", "prompt": "x"}], ["model_call_count"])
    assert result.summary_metrics["model_call_count/nan_count"] == 1


def test_efficiency_counts_add_up_every_turn_of_a_multi_turn_case():
    def agent(prompt, history):
        return {"response": "ok", "predicted_trajectory": [{"tool_name": "lookup", "tool_input": {"q": prompt}}],
                "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}}

    rows = [{"case_id": "m", "turns": [{"prompt": "eins"}, {"prompt": "zwei"}, {"prompt": "eins"}]}]
    row = one(rows, ["tool_call_count", "repeated_tool_calls", "token_count"], agent=agent)
    assert (row["tool_call_count/score"], row["repeated_tool_calls/score"], row["token_count/score"]) == (3.0, 1.0, 9.0)


# -- final state -----------------------------------------------------------------------------------


def test_state_check_gets_the_final_state_and_the_case_and_reports_its_reason():
    def refunded(state, case):
        wanted = case.metadata["invoice"]
        return wanted in state.get("refunded", []), f"refunded {state.get('refunded')}, wanted {wanted}"

    metrics = [lf.metrics.StateCheck(refunded, name="refund_done")]
    table = evaluate([{"case_id": "a", "prompt": "x", "invoice": 7}, {"case_id": "b", "prompt": "y", "invoice": 8}], metrics).metrics_table
    assert list(table["refund_done/score"]) == [1.0, 0.0]
    assert list(table["refund_done/explanation"]) == ["refunded [7], wanted 7", "refunded [7], wanted 8"]


def test_state_check_without_a_final_state_is_not_scored_and_says_why():
    row = one([{"case_id": "c", "prompt": "x"}], [lf.metrics.StateCheck(lambda s, c: True)], agent=lambda p: "ok")
    assert math.isnan(row["state_check/score"])
    assert "no final state" in row["state_check/explanation"]


def test_state_check_can_read_tool_outputs_when_told_it_needs_no_state():
    def agent(prompt):
        return {"response": "ok", "predicted_trajectory": [{"tool_name": "set_temp", "tool_input": {"t": 22}, "tool_output": "22 Grad"}]}

    check = lf.metrics.StateCheck(lambda s, c: c.predicted_trajectory[-1].tool_output == "22 Grad", needs_state=False)
    assert one([{"case_id": "c", "prompt": "x"}], [check], agent=agent)["state_check/score"] == 1.0


def test_a_state_check_returning_junk_is_a_metric_failure_naming_it_not_a_lost_run():
    result = evaluate([{"case_id": "c", "prompt": "x"}], [lf.metrics.StateCheck(lambda s, c: "yes", name="junk")])
    row = result.metrics_table.iloc[0]
    assert row["junk/failed"] and "state check 'junk' returned str" in row["junk/error"]
    assert not result.runs[0].failure


def test_state_check_by_name_says_how_to_build_it():
    with pytest.raises(lf.MetricError, match=r"StateCheck\(fn, name=\.\.\.\)"):
        resolve_metrics(["state_check"])


# -- the run record --------------------------------------------------------------------------------


def test_handoffs_state_and_model_calls_survive_the_run_record(tmp_path):
    def agent(prompt):
        return lf.AgentOutput(
            response="ok", handoffs=[lf.Handoff(from_agent="root", to_agent="天气")], model_calls=3, state={"k": ["v"]}
        )

    evaluate([{"case_id": "c", "prompt": "x"}], [], agent=agent, out=tmp_path)
    output = lf.EvalResult.load(tmp_path).runs[0].output
    assert output.handoffs == [lf.Handoff(from_agent="root", to_agent="天气")]
    assert (output.model_calls, output.state) == (3, {"k": ["v"]})


def test_an_old_record_without_handoffs_reads_back_with_none():
    run = lf.AgentRun.model_validate({"case_id": "c", "agent_name": "a", "output": {"response": "ok"}})
    assert (run.output.handoffs, run.output.state, run.output.model_calls) == ([], None, None)


# -- saved predictions: both scoring paths agree --------------------------------------------------------

AGENTS = ["router", "billing", "配送", None]


def _saved_rows(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        def call():
            return {"tool_name": rnd.choice(["a", "b", "検索"]), "tool_input": {"x": rnd.randint(0, 2)}, "agent": rnd.choice(AGENTS)}

        row = {
            "id": f"r{i}", "prompt": "p",
            "reference_trajectory": [call() for _ in range(rnd.randint(0, 3))],
            "predicted_trajectory": [call() for _ in range(rnd.randint(0, 4))],
        }
        if rnd.random() < 0.7:
            row["reference_handoffs"] = [rnd.choice(AGENTS[:3]) for _ in range(rnd.randint(0, 2))]
        if rnd.random() < 0.7:
            row["predicted_handoffs"] = [rnd.choice(AGENTS[:3]) for _ in range(rnd.randint(0, 2))]
        if rnd.random() < 0.5:
            row["final_state"] = {"done": rnd.random() < 0.5}
        if rnd.random() < 0.05:
            row["failure"] = 1
        rows.append(row)
    return rows


def _agent_metrics() -> list:
    return resolve_metrics([
        "handoff_match", "handoff_in_order_match", "tool_attribution", "tool_call_count", "repeated_tool_calls",
        "token_count", lf.metrics.TrajectoryRecall(agent="billing"), lf.metrics.TrajectoryExactMatch(agent="配送"),
        lf.metrics.TrajectorySingleToolUse("a", agent="router"), lf.metrics.ToolCallCount(agent="billing"),
        lf.metrics.StateCheck(_done, name="done"), "trajectory_recall",
    ])


def _done(state, case):
    return bool(state.get("done"))


@pytest.mark.parametrize("seed", [11, 12])
def test_both_scoring_paths_agree_on_the_agent_metrics(seed):
    rows = _saved_rows(150, seed)
    metrics = _agent_metrics()
    expected = asyncio.run(score_saved(load_dataset(rows, source="rows"), metrics)).metrics_table
    batches = []
    score_batches(batches_of(rows, 37, "rows"), metrics, source="rows", on_batch=batches.append)
    for m in metrics:
        got = np.concatenate([b.columns[f"{m.name}/score"] for b in batches])
        want = expected[f"{m.name}/score"].to_numpy(dtype=float)
        assert np.array_equal(got, want, equal_nan=True), m.name
        if m.name != "token_count":  # saved rows carry no usage
            assert not np.isnan(want).all(), m.name
