"""The metrics table's rows made while the runs run (``TableAhead``): each run explained and made
a row on a thread of its own, with the JSON text of its trajectories that the files will hold."""

from __future__ import annotations

import levelfield as lf
from levelfield._core.data.config import RunConfig
from levelfield._core.data.types import AgentOutput, AgentRun, ToolCall
from levelfield._core.results.table_ahead import TableAhead
from levelfield._core.score.metrics import resolve_metrics
from levelfield._core.score.metrics.base import Score

CALL = {"tool_name": "buscar_voo", "tool_input": {"destino": "São Paulo", "日付": "明日"}}
CASES = [{"case_id": f"c{i}", "prompt": f"voo {i}", "reference": "ok", "reference_trajectory": [CALL]} for i in range(6)]


def _run(i: int) -> AgentRun:
    output = AgentOutput(response="ok", trajectory=[ToolCall(**CALL)] if i % 2 else [])
    return AgentRun(case_id=f"c{i}", agent_name="a", trial=0, output=output, latency_in_seconds=0.1, failure=False)


def test_each_run_added_is_made_a_row_with_its_explanations_and_its_trajectories_json():
    ahead = TableAhead(list(lf.load_dataset(CASES)), resolve_metrics(["trajectory_exact_match"]), RunConfig())
    runs = [_run(i) for i in range(6)]
    for run in runs:  # the engine's scores: no explanation (the table makes it)
        ahead.add(run, {"trajectory_exact_match": Score(float(bool(run.output.trajectory)))})
    ahead.stop()
    made = ahead.made()
    assert sorted(made) == sorted(("a", f"c{i}", 0) for i in range(6))
    run, _, explained, row = made[("a", "c1", 0)]
    assert run is runs[1] and explained["trajectory_exact_match"].explanation  # explained on the thread
    assert row["predicted_trajectory"] == [CALL]
    assert ahead.encoded[id(row["predicted_trajectory"])] == (
        row["predicted_trajectory"], '[{"tool_name":"buscar_voo","tool_input":{"destino":"São Paulo","日付":"明日"}}]')
    assert ahead.encoded[id(made[("a", "c0", 0)][3]["predicted_trajectory"])][1] == "[]"
