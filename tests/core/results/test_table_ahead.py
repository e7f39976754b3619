"""The metrics table's rows made while the runs run (``TableAhead``): each run explained and made
a row by the journal's thread once its line is durable, with the JSON text of its trajectories that the
files will hold."""

from __future__ import annotations

import pytest

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
    made = ahead.made()
    assert sorted(made) == sorted(("a", f"c{i}", 0) for i in range(6))
    run, _, explained, row = made[("a", "c1", 0)]
    assert run is runs[1] and explained["trajectory_exact_match"].explanation  # explained on the thread
    assert row["predicted_trajectory"] == [CALL]
    assert ahead.encoded[id(row["predicted_trajectory"])] == (
        row["predicted_trajectory"], '[{"tool_name":"buscar_voo","tool_input":{"destino":"São Paulo","日付":"明日"}}]')
    assert ahead.encoded[id(made[("a", "c0", 0)][3]["predicted_trajectory"])][1] == "[]"


def _journal_with_rows_ahead(tmp_path, explain_wrapper):
    """Six runs journaled in an event loop with a TableAhead beside the journal; its explainer wrapped."""
    import asyncio

    from levelfield._core.results.fingerprints import fingerprints_of
    from levelfield._core.results.journal import Journal

    data = lf.load_dataset(CASES)
    runs = [_run(i) for i in range(6)]

    async def main():
        journal = Journal.create(tmp_path / "runs.jsonl", {"kind": "header"}, list(data), fingerprints_of(data))
        ahead = TableAhead(list(data), resolve_metrics(["trajectory_exact_match"]), RunConfig())
        ahead._explainer = explain_wrapper(ahead._explainer, journal.path)
        journal.ahead = ahead
        for run in runs:
            waiting = journal.write(run, {"trajectory_exact_match": Score(float(bool(run.output.trajectory)))})
            await waiting  # durable: its row follows on the journal's thread
        journal.close()
        return ahead

    return asyncio.run(main()), runs


def test_the_rows_are_made_on_the_journals_thread_once_each_line_is_durable(tmp_path):
    import threading

    seen = []

    def wrapper(explain, path):
        def explained(case, run, scores):
            lines = path.read_text(encoding="utf-8").splitlines()
            on_disk = any(line.startswith('{"kind":"run"') and f'"case_id":"{run.case_id}"' in line for line in lines)
            seen.append((threading.current_thread().name, run.case_id, on_disk))
            return explain(case, run, scores)
        return explained

    ahead, runs = _journal_with_rows_ahead(tmp_path, wrapper)
    made_before = len(seen)
    made = ahead.made()
    assert made_before == 6 and len(seen) == 6  # every row made before the table asked for them
    assert {name for name, _, _ in seen} == {"levelfield-journal"}
    assert all(on_disk for _, _, on_disk in seen)  # each after its run's line was in the journal
    assert sorted(made) == sorted(("a", f"c{i}", 0) for i in range(6))
    assert made[("a", "c3", 0)][0] is runs[3] and made[("a", "c3", 0)][3]["predicted_trajectory"] == [CALL]


def test_a_row_that_cannot_be_made_leaves_every_row_to_the_end_and_the_journal_whole(tmp_path):
    def wrapper(explain, path):
        def explained(case, run, scores):
            if run.case_id == "c2":
                raise RuntimeError("an explanation that raises")
            return explain(case, run, scores)
        return explained

    ahead, runs = _journal_with_rows_ahead(tmp_path, wrapper)
    assert ahead.made() == {}  # the table makes them all again, as without rows made ahead
    lines = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(line.startswith('{"kind":"run"') for line in lines) == 6


@pytest.mark.parametrize("trials", [1, 2])
def test_the_csv_lines_made_ahead_hold_the_columns_the_table_keeps_and_are_its_lines(tmp_path, monkeypatch, trials):
    """Each row's CSV line is made with its row, for the columns the table is expected to keep; the
    save takes those lines (a guess that missed costs the line made again at the end, not a byte):
    here the guess holds for every run that answered, with one trial and with two, and text in four
    languages; a failed run's row lacks the scores' columns and its line is made again. The files
    are those the DataFrame route writes."""
    import pandas as pd

    import levelfield._core.results.held as held
    from levelfield._core.results.tables import write_table_files

    texts = ["São Paulo, coração", "北京的天气", "Größe: Straße", "東京の天気", "=1+1"]
    rows = [{"case_id": f"c{i}", "prompt": t, "reference": t.upper(), "reference_trajectory": [CALL]}
            for i, t in enumerate(texts)]

    async def agent(prompt: str) -> dict:
        if prompt == "東京の天気":
            raise RuntimeError("天気: no answer")
        return {"response": prompt.upper(), "predicted_trajectory": [CALL]}

    given = []
    write_rows = held.write_rows

    def kept(rows, csv, parquet=None, **options):
        given.append((list(rows), options.get("lines")))
        return write_rows(rows, csv, parquet, **options)

    monkeypatch.setattr(held, "write_rows", kept)
    result = lf.evaluate(lf.load_dataset(rows), agent, ["exact_match", "trajectory_exact_match"], trials=trials,
                         progress=False, out=tmp_path / "run")
    assert result.summary_metrics["failure/count"] == trials
    [(table_rows, lines)] = given
    header = (tmp_path / "run" / "metrics_table.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert ("trial" in header) == (trials > 1)
    assert len(table_rows) == len(texts) * trials
    for row in table_rows:
        made, names, _ = lines[id(row)]
        assert made is row and (list(names) == header) == (not row["failure"])
    write_table_files(result.with_explanations(), tmp_path / "old.csv", tmp_path / "old.parquet")
    assert (tmp_path / "run" / "metrics_table.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    assert pd.read_parquet(tmp_path / "run" / "metrics_table.parquet").equals(pd.read_parquet(tmp_path / "old.parquet"))
