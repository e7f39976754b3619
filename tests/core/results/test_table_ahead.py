"""The metrics table's rows made while the runs run (``TableAhead``): beside sync agents from their
last round of runs on (``start_at``); before it, nothing is made, and if it never comes (a budget
stopped the runs) the rows are made at the end."""

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


def _add(ahead: TableAhead, numbers: range) -> list[AgentRun]:
    runs = [_run(i) for i in numbers]
    for run in runs:  # the engine's scores: no explanation (the table makes it)
        ahead.add(run, {"trajectory_exact_match": Score(float(bool(run.output.trajectory)))})
    return runs


def test_a_table_ahead_that_starts_at_the_last_round_makes_every_row_then_and_none_before():
    dataset = lf.load_dataset(CASES)
    metrics = resolve_metrics(["trajectory_exact_match"])
    ahead = TableAhead(list(dataset), metrics, RunConfig(), start_at=5)
    runs = _add(ahead, range(4))
    assert not ahead._thread.is_alive() and ahead._made == {}  # the last round has not begun
    _add(ahead, range(4, 6))  # the 5th run: the thread starts, with every run so far
    made = ahead.made()
    assert sorted(made) == sorted({("a", f"c{i}", 0) for i in range(6)}) and len(made) == 6
    row = made[("a", "c1", 0)][3]
    assert row["predicted_trajectory"] == [{"tool_name": "buscar_voo", "tool_input": {"destino": "São Paulo", "日付": "明日"}}]
    assert ahead.encoded[id(row["predicted_trajectory"])] == (
        row["predicted_trajectory"], '[{"tool_name":"buscar_voo","tool_input":{"destino":"São Paulo","日付":"明日"}}]')
    assert runs[0] is made[("a", "c0", 0)][0]
    assert made[("a", "c1", 0)][2]["trajectory_exact_match"].explanation  # explained on the thread


def test_a_table_ahead_whose_last_round_never_comes_makes_nothing_and_the_rows_are_made_at_the_end():
    dataset = lf.load_dataset(CASES)
    metrics = resolve_metrics(["trajectory_exact_match"])
    ahead = TableAhead(list(dataset), metrics, RunConfig(), start_at=10)
    _add(ahead, range(6))
    ahead.stop()
    assert ahead.made() == {}
