"""Parquet and Arrow in and out: datasets read from .parquet / .arrow / .feather files and pyarrow
Tables, results written with ``to_parquet`` and by ``save``; trajectories survive the round trip."""

from __future__ import annotations

import json
import math
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import levelfield as lf

# Non-Latin text, nested arguments, and calls whose argument keys differ from row to row (the
# case where Arrow's struct type would add null-valued keys).
ROWS = [
    {
        "prompt": "把客厅的灯关掉",
        "reference": "客厅的灯已关闭。",
        "reference_trajectory": [
            {"tool_name": "set_device_info", "tool_input": {"device_id": "客厅灯", "status": "OFF"}},
            {"tool_name": "notify", "tool_input": {"target": {"room": "Küche", "floor": 1, "tags": ["ß", "ç"]}}},
        ],
        "response": "客厅的灯已关闭。",
        "predicted_trajectory": [
            {"tool_name": "set_device_info", "tool_input": {"device_id": "客厅灯", "status": "OFF"}},
        ],
    },
    {
        "prompt": "リビングの温度は？",
        "reference": "22度です。",
        "reference_trajectory": [{"tool_name": "get_temperature", "tool_input": {"room": "リビング", "unit": "C"}}],
        "response": "A temperatura é 22 graus.",
        "predicted_trajectory": [{"tool_name": "get_temperature", "tool_input": {"room": "リビング"}}],
    },
]


def _trajectories(dataset: lf.EvalDataset) -> list[tuple]:
    return [(c.prompt, c.reference, c.reference_trajectory, c.response, c.predicted_trajectory) for c in dataset]


# -- datasets in ---------------------------------------------------------------------------------


def test_dataframe_written_by_pandas_to_parquet_loads_as_the_same_cases(tmp_path):
    frame = pd.DataFrame(ROWS)
    frame.to_parquet(tmp_path / "d.parquet")
    assert _trajectories(lf.load_dataset(tmp_path / "d.parquet")) == _trajectories(lf.load_dataset(frame))


def test_struct_columns_do_not_gain_the_null_keys_arrow_adds_to_unify_rows(tmp_path):
    pd.DataFrame(ROWS).to_parquet(tmp_path / "d.parquet")
    # Arrow stores the union of every call's argument keys; reading must not hand them back.
    schema = pq.read_schema(tmp_path / "d.parquet")
    assert "unit" in str(schema.field("reference_trajectory").type)
    case = lf.load_dataset(tmp_path / "d.parquet")[0]
    assert case.reference_trajectory[0].tool_input == {"device_id": "客厅灯", "status": "OFF"}


def test_integer_arguments_in_parquet_structs_stay_integers(tmp_path):
    pd.DataFrame(ROWS).to_parquet(tmp_path / "d.parquet")
    call = lf.load_dataset(tmp_path / "d.parquet")[0].reference_trajectory[1]
    assert call.tool_input["target"]["floor"] == 1 and isinstance(call.tool_input["target"]["floor"], int)


def test_json_text_trajectory_cells_in_parquet_load_as_trajectories(tmp_path):
    frame = pd.DataFrame(ROWS)
    for column in ("reference_trajectory", "predicted_trajectory"):
        frame[column] = frame[column].map(lambda calls: json.dumps(calls, ensure_ascii=False))
    frame.to_parquet(tmp_path / "d.parquet")
    assert _trajectories(lf.load_dataset(tmp_path / "d.parquet")) == _trajectories(lf.load_dataset(ROWS))


@pytest.mark.parametrize("suffix", [".arrow", ".feather"])
def test_arrow_ipc_and_feather_files_load_as_the_same_cases(tmp_path, suffix):
    path = tmp_path / f"d{suffix}"
    feather.write_feather(pa.Table.from_pylist(ROWS), path)
    assert _trajectories(lf.load_dataset(path)) == _trajectories(lf.load_dataset(ROWS))


def test_a_pyarrow_table_is_loaded_directly():
    dataset = lf.load_dataset(pa.Table.from_pylist(ROWS))
    assert _trajectories(dataset) == _trajectories(lf.load_dataset(ROWS))
    assert dataset.source == "Arrow table"


def test_a_file_that_is_not_parquet_is_a_dataset_error_naming_it(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_text("prompt,reference\nhi,hello\n", encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"broken.parquet: not a readable Parquet file"):
        lf.load_dataset(path)


def test_a_bad_row_in_parquet_names_the_file_and_row(tmp_path):
    pq.write_table(pa.Table.from_pylist([{"prompt": "ok", "reference_trajectory": "[]"},
                                        {"prompt": "x", "reference_trajectory": "[not json"}]),
                   tmp_path / "d.parquet")
    with pytest.raises(lf.DatasetError, match=r"d.parquet row 2"):
        lf.load_dataset(tmp_path / "d.parquet")


# -- results out ---------------------------------------------------------------------------------


def _agent(prompt: str) -> dict:
    row = next(r for r in ROWS if r["prompt"] == prompt)
    return {"response": row["response"], "predicted_trajectory": row["predicted_trajectory"]}


METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum"]


def test_eval_result_to_parquet_reads_back_to_equal_trajectories(tmp_path):
    result = lf.evaluate(ROWS, _agent, METRICS, progress=False)
    result.to_parquet(tmp_path / "table.parquet")
    again = lf.load_dataset(tmp_path / "table.parquet")
    assert _trajectories(again) == _trajectories(lf.load_dataset(ROWS))


def test_parquet_table_keeps_null_arguments_and_mixed_types_that_structs_cannot(tmp_path):
    rows = [
        {"prompt": "a", "predicted_trajectory": [{"tool_name": "find", "tool_input": {"limit": None, "q": "Straße"}}],
         "response": "x", "note": 3},
        {"prompt": "b", "predicted_trajectory": [{"tool_name": "find", "tool_input": {"limit": "all"}}],
         "response": "y", "note": "drei"},
    ]
    result = lf.evaluate(rows, metrics=["exact_match"], progress=False)
    result.to_parquet(tmp_path / "table.parquet")
    calls = [c.predicted_trajectory for c in lf.load_dataset(tmp_path / "table.parquet")]
    assert [c[0].tool_input for c in calls] == [{"limit": None, "q": "Straße"}, {"limit": "all"}]


def test_parquet_table_holds_the_same_scores_as_the_metrics_table(tmp_path):
    result = lf.evaluate(ROWS, _agent, METRICS, progress=False)
    table = pq.read_table(result.to_parquet(tmp_path / "table.parquet")).to_pandas()
    for metric in METRICS:
        assert table[f"{metric}/score"].tolist() == pytest.approx(result.metrics_table[f"{metric}/score"].tolist())
    assert list(table.columns) == list(result.metrics_table.columns)


def test_saved_predictions_scored_from_the_parquet_table_give_the_same_summary(tmp_path):
    result = lf.evaluate(ROWS, _agent, METRICS, progress=False)
    again = lf.evaluate(result.to_parquet(tmp_path / "table.parquet"), metrics=METRICS, progress=False)
    for metric in METRICS:
        assert again.summary_metrics[f"{metric}/mean"] == pytest.approx(result.summary_metrics[f"{metric}/mean"])


def test_save_writes_the_parquet_table_beside_the_csv_and_load_is_unchanged(tmp_path):
    result = lf.evaluate(ROWS, _agent, METRICS, progress=False, out=tmp_path / "out")
    assert (tmp_path / "out" / "metrics_table.csv").is_file()
    table = pq.read_table(tmp_path / "out" / "metrics_table.parquet").to_pandas()
    assert table["rouge_l_sum/score"].tolist() == pytest.approx(result.metrics_table["rouge_l_sum/score"].tolist())
    loaded = lf.EvalResult.load(tmp_path / "out")
    assert loaded.summary_metrics["rouge_l_sum/mean"] == pytest.approx(result.summary_metrics["rouge_l_sum/mean"])


def test_comparison_to_parquet_writes_one_row_per_agent_case_and_trial(tmp_path):
    cmp = lf.compare(ROWS, {"a": _agent, "b": _agent}, METRICS, trials=2, progress=False)
    table = pq.read_table(cmp.to_parquet(tmp_path / "runs.parquet")).to_pandas()
    assert sorted(zip(table["agent"], table["prompt"], table["trial"])) == sorted(
        (a, r["prompt"], t) for a in "ab" for r in ROWS for t in range(2))


def test_comparison_summary_to_parquet_has_one_row_per_agent(tmp_path):
    cmp = lf.compare(ROWS, {"a": _agent, "b": _agent}, METRICS, progress=False)
    table = pq.read_table(cmp.to_parquet(tmp_path / "summary.parquet", table="summary")).to_pandas()
    assert table["agent"].tolist() == ["a", "b"]
    assert table["trajectory_exact_match/mean"].tolist() == pytest.approx(
        cmp.summary["trajectory_exact_match/mean"].tolist())


def test_comparison_to_parquet_rejects_an_unknown_table(tmp_path):
    cmp = lf.compare(ROWS, {"a": _agent}, METRICS, progress=False)
    with pytest.raises(lf.ConfigError, match=r"table='cases'.*'runs'.*'summary'"):
        cmp.to_parquet(tmp_path / "x.parquet", table="cases")


def test_comparison_save_writes_parquet_tables_and_load_reads_the_record(tmp_path):
    cmp = lf.compare(ROWS, {"a": _agent, "b": _agent}, METRICS, progress=False, out=tmp_path / "out")
    assert {"metrics_table.parquet", "summary.parquet", "metrics_table.csv"} <= {p.name for p in (tmp_path / "out").iterdir()}
    assert len(pq.read_table(tmp_path / "out" / "metrics_table.parquet")) == 4
    loaded = lf.Comparison.load(tmp_path / "out")
    assert loaded.summary["rouge_l_sum/mean"].tolist() == pytest.approx(cmp.summary["rouge_l_sum/mean"].tolist())


# -- without pyarrow -----------------------------------------------------------------------------


@pytest.fixture
def no_pyarrow(monkeypatch):
    # The same state whatever tests this process ran before (under xdist, any): pandas' arrow-backed strings keep the
    # pyarrow they use, its compute module loaded and kept (pyarrow loads it on first use: blocked before that,
    # pandas itself fails), and pyarrow with each of its modules is blocked for what imports it from now on.
    pa.chunked_array([["x"]]).take([0])
    for name in ["pyarrow", *(m for m in sys.modules if m.startswith("pyarrow."))]:
        monkeypatch.setitem(sys.modules, name, None)  # makes "import pyarrow" raise ImportError


def test_reading_parquet_without_pyarrow_names_the_extra(tmp_path, no_pyarrow):
    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    with pytest.raises(lf.MissingExtraError, match=r"d.parquet.*levelfield\[parquet\]"):
        lf.load_dataset(tmp_path / "d.parquet")


def test_to_parquet_without_pyarrow_names_the_extra(tmp_path, no_pyarrow):
    result = lf.evaluate(ROWS, _agent, ["exact_match"], progress=False)
    with pytest.raises(lf.MissingExtraError, match=r"levelfield\[parquet\]"):
        result.to_parquet(tmp_path / "t.parquet")


def test_save_without_pyarrow_writes_the_csv_and_no_parquet(tmp_path, no_pyarrow):
    result = lf.evaluate(ROWS, _agent, ["exact_match"], progress=False)
    paths = result.save(tmp_path / "out")
    assert paths["metrics_table"].is_file()
    assert not (tmp_path / "out" / "metrics_table.parquet").exists()
    assert not math.isnan(lf.EvalResult.load(tmp_path / "out").summary_metrics["exact_match/mean"])
