"""Saved predictions scored batch by batch (the columnar path) give the row path's numbers,
from every input kind, in bounded memory, with errors that name the row."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import levelfield as lf
import levelfield.executors.saved as saved_module
from levelfield import load_dataset
from levelfield._core.errors import ConfigError, DatasetError, MissingExtraError, RecordError
from levelfield._core.run.engine import score_saved
from levelfield._core.score.batch.pool import score_batches
from levelfield._core.score.batch.rows import _ListBatch, batches_of
from levelfield._core.score.batch.scorer import BatchScorer
from levelfield._core.score.metrics.registry import resolve_metrics
from levelfield._core.score.scoring import context_for, score_sync
from levelfield.executors.saved import score_saved_rows

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TOOLS = ["get_weather", "set_temperature", "book_room", "查询天气", "buscar_voo"]
TEXTS = [
    "the lights are off", "Die Heizung läuft jetzt auf 21 Grad", "客厅的灯已经关了", "明日の天気は晴れです",
    "A reserva está confirmada para amanhã", "", "   ", "the lights are off ",
]
TRAJECTORY = [
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
    "trajectory_precision", "trajectory_recall",
]


def _call(rnd: random.Random, style: str) -> dict:
    tool = rnd.choice(TOOLS)
    args = rnd.choice([
        {}, {"city": rnd.choice(["Lisboa", "北京", "München"])}, {"degrees": rnd.choice([21, 21.0, 22.5, True, 1])},
        {"room": {"floor": rnd.randint(1, 2), "tags": ["a", "b"]}}, {"note": None}, {"n": float("nan")},
    ])
    if style == "adk":
        return {"name": tool, "args": args} if args else {"name": tool}
    if style == "json":
        return {"tool_name": tool, "tool_input": json.dumps(args, ensure_ascii=False)}
    return {"tool_name": tool, "tool_input": args, "tool_output": rnd.choice([None, "ok", {"temp": 20}])}


def _trajectory(rnd: random.Random, reference: list[dict] | None = None) -> list[dict]:
    if reference is not None and rnd.random() < 0.6:
        out = list(reference)
        roll = rnd.random()
        if roll < 0.25 and out:
            rnd.shuffle(out)
        elif roll < 0.5:
            out.insert(rnd.randrange(len(out) + 1), _call(rnd, "plain"))
        elif roll < 0.7 and out:
            out.pop(rnd.randrange(len(out)))
        return out
    style = rnd.choice(["plain", "adk", "json"])
    return [_call(rnd, style) for _ in range(rnd.randint(0, 5))]


def random_rows(n: int, seed: int) -> list[dict]:
    """Saved rows of every shape the row path reads: missing references, failures, ADK calls,
    JSON-string arguments, NaN arguments, per-turn rows, non-Latin text."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        reference = _trajectory(rnd)
        row: dict = {"id": f"case-{i}", "prompt": rnd.choice(["Wie ist das Wetter?", "天气怎么样", "book it"])}
        roll = rnd.random()
        if roll < 0.1:
            row["reference_trajectory"] = None
        elif roll < 0.15:
            row["expected_tool_use"] = json.dumps(reference, ensure_ascii=False)  # an alias, as a JSON string
        else:
            row["reference_trajectory"] = reference
        row["predicted_trajectory"] = _trajectory(rnd, reference) if rnd.random() < 0.95 else None
        row["response"] = rnd.choice(TEXTS + [None])
        row["reference"] = rnd.choice(TEXTS + [None])
        if rnd.random() < 0.05:
            row["failure"] = 1
        if rnd.random() < 0.5:
            row["latency_in_seconds"] = rnd.random()
        if rnd.random() < 0.04:
            # A multi-turn row: takes the row path inside the batch.
            row["turns"] = [
                {"prompt": "first", "reference": "ok", "response": "ok", "predicted_trajectory": [_call(rnd, "plain")]},
                {"prompt": "second", "reference": rnd.choice(TEXTS), "response": rnd.choice(TEXTS)},
            ]
        rows.append(row)
    return rows


def metric_set() -> list:
    matcher = lf.ToolCallMatcher(args="ignore")
    return resolve_metrics([
        *TRAJECTORY, "exact_match", "bleu", "rouge_l_sum", "rouge_1",
        lf.metrics.TrajectorySingleToolUse(tool_name="get_weather"),
        lf.metrics.TrajectoryRecall(matcher=matcher, name="recall_names_only"),
        lf.metrics.TrajectoryRecall(matcher=lf.ToolCallMatcher(args="subset"), name="recall_subset"),
        lf.metrics.ToolTrajectoryAvgScore("IN_ORDER"),
        "response_match_score",
    ])


def row_path(rows: list[dict], metrics: list, source: str = "rows") -> lf.EvalResult:
    return asyncio.run(score_saved(load_dataset(rows, source=source), metrics))


def columnar(rows: list[dict], metrics: list, size: int = 97):
    batches = []
    summary, _ = score_batches(batches_of(rows, size, "rows"), metrics, source="rows", on_batch=batches.append)
    return batches, summary.summary()


def _column(batches, name: str) -> np.ndarray:
    return np.concatenate([b.columns[f"{name}/score"] for b in batches])


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-12


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_paths_give_the_same_score_on_every_row(seed: int) -> None:
    rows = random_rows(400, seed)
    metrics = metric_set()
    expected = row_path(rows, metrics).metrics_table
    batches, _ = columnar(rows, metrics)
    for m in metrics:
        got, want = _column(batches, m.name), expected[f"{m.name}/score"].to_numpy(dtype=float)
        differ = [i for i in range(len(rows)) if not same(got[i], want[i])]
        assert not differ, f"{m.name}: rows {differ[:5]} differ: {got[differ[:5]]} vs {want[differ[:5]]}"


@pytest.mark.parametrize("seed", [6, 7])
def test_the_engine_gives_each_metrics_own_score_on_every_row(seed: int) -> None:
    # The oracle is the per-metric API: each metric's own ``score`` on each row's context. The
    # engine's two entry points (saved rows as read, contexts of loaded cases or finished runs)
    # must give its numbers.
    rows = random_rows(300, seed)
    metrics = metric_set()
    contexts = []
    for case in load_dataset(rows, source="rows"):
        ctx = context_for(case, None)
        ctx.failure = case.metadata.get("failure") == 1
        contexts.append(ctx)
    oracle = [score_sync(ctx, metrics) for ctx in contexts]
    from_contexts = BatchScorer(metrics).score_contexts(contexts)
    batches, _ = columnar(rows, metrics, size=53)
    for m in metrics:
        want = [row[m.name].value for row in oracle]
        got = [row[m.name].value for row in from_contexts]
        from_rows = _column(batches, m.name)
        assert all(same(a, b) for a, b in zip(got, want)), m.name
        assert all(same(a, b) for a, b in zip(from_rows, want)), m.name
        assert list(from_contexts[0]) == [x.name for x in metrics]


@pytest.mark.parametrize("seed", [4, 5])
def test_both_paths_give_the_same_summary(seed: int) -> None:
    rows = random_rows(300, seed)
    metrics = metric_set()
    expected = row_path(rows, metrics).summary_metrics
    _, summary = columnar(rows, metrics, size=41)
    for key, value in expected.items():
        if key.startswith(("input_tokens", "output_tokens", "total_tokens")):
            continue
        assert key in summary, key
        assert same(float(summary[key]), float(value)), (key, summary[key], value)


def test_the_batch_size_does_not_change_a_number() -> None:
    rows = random_rows(250, 9)
    metrics = metric_set()
    one, s1 = columnar(rows, metrics, size=250)
    many, s2 = columnar(rows, metrics, size=7)
    for m in metrics:
        assert np.array_equal(_column(one, m.name), _column(many, m.name), equal_nan=True)
    assert s1["trajectory_recall/mean"] == pytest.approx(s2["trajectory_recall/mean"], abs=1e-12)
    assert s1["trajectory_recall/std"] == pytest.approx(s2["trajectory_recall/std"], abs=1e-12)


def test_identical_chinese_text_scores_one_on_both_paths() -> None:
    rows = [{"prompt": "天气", "response": "北京今天晴，气温二十度", "reference": "北京今天晴，气温二十度"}]
    metrics = resolve_metrics(["rouge_l_sum", "bleu", "exact_match"])
    batches, _ = columnar(rows, metrics)
    for m in metrics:
        assert _column(batches, m.name)[0] == 1.0


def _write_all(rows: list[dict], folder: Path) -> dict[str, Path]:
    """The same rows as JSON Lines, Parquet, Arrow IPC and CSV (trajectories as JSON text where a
    format has no nested cells)."""
    flat = [{k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v) for k, v in r.items()} for r in rows]
    paths = {"jsonl": folder / "rows.jsonl", "parquet": folder / "rows.parquet", "arrow": folder / "rows.arrow",
             "csv": folder / "rows.csv"}
    paths["jsonl"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    table = pa.Table.from_pylist(flat)
    pq.write_table(table, paths["parquet"], row_group_size=13)
    with pa.OSFile(str(paths["arrow"]), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=17):
            writer.write_batch(batch)
    pd.DataFrame(flat).to_csv(paths["csv"], index=False)
    return paths


def _flat_rows(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        reference = [_call(rnd, "plain") for _ in range(rnd.randint(1, 4))]
        for c in reference:
            c["tool_input"] = {k: v for k, v in c["tool_input"].items() if not (isinstance(v, float) and math.isnan(v))}
            c.pop("tool_output", None)
        predicted = list(reference) if rnd.random() < 0.5 else [dict(reference[0], tool_name="buscar_voo")]
        rows.append({"case_id": f"c{i}", "prompt": "Wetter in München?", "response": rnd.choice(TEXTS[:5]),
                     "reference": rnd.choice(TEXTS[:5]), "predicted_trajectory": predicted, "reference_trajectory": reference})
    return rows


def test_every_input_kind_gives_the_same_table(tmp_path: Path) -> None:
    rows = _flat_rows(60, 3)
    metrics = resolve_metrics([*TRAJECTORY, "exact_match", "rouge_l_sum"])
    config = lf.RunConfig(progress=False)
    expected = row_path(rows, metrics).metrics_table
    inputs = {**_write_all(rows, tmp_path), "frame": pd.DataFrame(rows), "rows": rows,
              "arrow table": pa.Table.from_pylist([{k: (json.dumps(v) if isinstance(v, list) else v) for k, v in r.items()} for r in rows])}
    for kind, data in inputs.items():
        table = score_saved_rows(data, metrics, config).metrics_table
        assert table["case_id"].tolist() == [f"c{i}" for i in range(60)], kind
        for m in metrics:
            got, want = table[f"{m.name}/score"].to_numpy(float), expected[f"{m.name}/score"].to_numpy(float)
            assert np.array_equal(got, want, equal_nan=True), (kind, m.name)


def test_a_frame_keeps_its_own_columns_then_the_scores() -> None:
    frame = pd.DataFrame(_flat_rows(5, 1)).assign(region=["eu", "us", "eu", "ap", "eu"])
    table = score_saved_rows(frame, resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False)).metrics_table
    assert list(table.columns[:2]) == ["case_id", "prompt"]
    assert table["region"].tolist() == ["eu", "us", "eu", "ap", "eu"]
    assert table.columns[-1] == "trajectory_recall/score"


def test_out_streams_a_parquet_table_and_a_summary(tmp_path: Path) -> None:
    paths = _write_all(_flat_rows(50, 2), tmp_path)
    result = score_saved_rows(paths["jsonl"], resolve_metrics(TRAJECTORY), lf.RunConfig(progress=False, out=tmp_path / "out"))
    assert result.table_path == tmp_path / "out" / "metrics_table.parquet"
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["metrics_table.parquet", "summary.json"]
    on_disk = pd.read_parquet(tmp_path / "out" / "metrics_table.parquet")
    assert len(on_disk) == 50 and list(on_disk.columns[:3]) == ["case_id", "failure", "latency_in_seconds"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["trajectory_recall/mean"] == pytest.approx(on_disk["trajectory_recall/score"].mean())
    assert result.metrics_table["trajectory_recall/score"].tolist() == on_disk["trajectory_recall/score"].tolist()


def test_an_existing_result_is_not_replaced_without_overwrite(tmp_path: Path) -> None:
    paths = _write_all(_flat_rows(5, 2), tmp_path)
    config = lf.RunConfig(progress=False, out=tmp_path / "out")
    score_saved_rows(paths["jsonl"], resolve_metrics(["trajectory_recall"]), config)
    with pytest.raises(RecordError, match="already holds results.*overwrite=True"):
        score_saved_rows(paths["jsonl"], resolve_metrics(["trajectory_recall"]), config)
    score_saved_rows(paths["jsonl"], resolve_metrics(["trajectory_recall"]), config.replace(overwrite=True))


def test_a_bad_line_deep_in_the_file_names_its_line_and_leaves_no_table(tmp_path: Path) -> None:
    good = "".join(json.dumps(r) + "\n" for r in _flat_rows(30, 1))
    path = tmp_path / "saved.jsonl"
    path.write_text(good + '{"response": "ok", "predicted_trajectory": [{"tool_name": 7}]}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"saved.jsonl line 31, field 'predicted_trajectory', call 0"):
        score_saved_rows(path, resolve_metrics(TRAJECTORY), lf.RunConfig(progress=False, out=tmp_path / "out"))
    assert not any((tmp_path / "out").iterdir())  # the partial table was removed


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "saved.jsonl"
    path.write_text('{"response": "a", "reference": "a"}\n\n{"response": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"saved.jsonl line 3: not valid JSON"):
        score_saved_rows(path, resolve_metrics(["exact_match"]), lf.RunConfig(progress=False))


def test_a_repeated_id_names_both_rows(tmp_path: Path) -> None:
    rows = _flat_rows(40, 1)
    rows[35]["case_id"] = "c3"
    path = tmp_path / "saved.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"saved.jsonl: case ids must be unique; 'c3' is at row 4 and again at row 36"):
        score_saved_rows(path, resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False))


def test_rows_without_predictions_are_an_error() -> None:
    with pytest.raises(DatasetError, match="no row has a 'response' or 'predicted_trajectory'"):
        score_saved_rows([{"prompt": "hi", "reference": "hello"}], resolve_metrics(["exact_match"]), lf.RunConfig(progress=False))


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="empty.jsonl: the dataset has no rows"):
        score_saved_rows(path, resolve_metrics(["exact_match"]), lf.RunConfig(progress=False))


def test_scenario_rows_are_skipped_with_a_warning() -> None:
    rows = _flat_rows(3, 1) + [{"case_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}}]
    with pytest.warns(UserWarning, match="skipped 1 conversation_scenario case"):
        result = score_saved_rows(rows, resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False))
    assert result.skipped == {"sim": "a conversation_scenario case needs a user simulator"}
    assert result.summary_metrics["row_count"] == 3


def test_a_metric_that_raises_is_nan_and_counted() -> None:
    class Broken(lf.metrics.Metric):
        name = "broken"
        reads = ("response",)

        def score(self, ctx):
            raise RuntimeError("boom")

    result = score_saved_rows(_flat_rows(4, 1), [Broken()], lf.RunConfig(progress=False))
    assert result.metrics_table["broken/score"].isna().all()
    assert result.summary_metrics["broken/failure_count"] == 4


def test_two_workers_give_the_same_results_as_one(tmp_path: Path) -> None:
    rows = random_rows(300, 11)
    path = tmp_path / "saved.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    metrics = resolve_metrics([*TRAJECTORY, "rouge_l_sum", "bleu"])
    one = score_saved_rows(path, metrics, lf.RunConfig(progress=False))
    two = score_saved_rows(path, metrics, lf.RunConfig(progress=False, workers=2))
    pd.testing.assert_frame_equal(one.metrics_table, two.metrics_table)
    assert one.summary_metrics == pytest.approx(two.summary_metrics, nan_ok=True)


def test_a_metric_that_cannot_reach_workers_is_named_before_scoring() -> None:
    metric = lf.metrics.CustomMetric("local", lambda instance: 1.0)
    with pytest.raises(ConfigError, match="metric 'local' cannot be sent there"):
        score_saved_rows(_flat_rows(3, 1), [metric], lf.RunConfig(progress=False, workers=2))


def test_workers_must_be_a_positive_count() -> None:
    with pytest.raises(ConfigError, match="workers=0"):
        lf.RunConfig(workers=0)
    assert lf.RunConfig(workers=-1).worker_count >= 1


def test_evaluate_scores_saved_rows_of_any_count_batch_by_batch() -> None:
    rows = _flat_rows(30, 5)
    for n in (1, 3, 30):
        result = lf.evaluate(rows[:n], metrics=["trajectory_recall"], progress=False)
        assert type(result) is lf.EvalResult and "trajectory_recall/explanation" not in result.metrics_table, n
        expected = row_path(rows[:n], resolve_metrics(["trajectory_recall"])).metrics_table
        assert result.metrics_table["trajectory_recall/score"].tolist() == expected["trajectory_recall/score"].tolist()


def test_explanations_are_computed_for_the_case_asked_and_match_the_row_path() -> None:
    rows = random_rows(60, 13)
    metrics = metric_set()
    result = score_saved_rows(rows, metrics, lf.RunConfig(progress=False))
    expected = row_path(rows, metrics).with_explanations().set_index("case_id")
    assert "trajectory_recall/explanation" not in result.metrics_table  # left out until asked for
    for case_id in ("case-0", "case-17", "case-59"):
        explained = result.explain(case_id)
        for m in metrics:
            want = expected.loc[case_id].get(f"{m.name}/explanation")
            got = explained[m.name].explanation
            assert got == (None if want is None or (isinstance(want, float) and math.isnan(want)) else want), (case_id, m.name)
            assert same(explained[m.name].value, float(expected.loc[case_id, f"{m.name}/score"])), (case_id, m.name)
    with pytest.raises(KeyError, match="no case 'nope'"):
        result.explain("nope")


def test_with_explanations_gives_the_row_paths_explanation_columns(tmp_path: Path) -> None:
    rows = _flat_rows(25, 8)
    metrics = resolve_metrics(TRAJECTORY)
    expected = row_path(rows, metrics).with_explanations()
    path = _write_all(rows, tmp_path)["jsonl"]
    result = score_saved_rows(path, metrics, lf.RunConfig(progress=False, out=tmp_path / "out"))  # a file, table on disk
    table = result.with_explanations()
    for m in metrics:
        assert table[f"{m.name}/explanation"].tolist() == expected[f"{m.name}/explanation"].tolist(), m.name
        assert list(table.columns).index(f"{m.name}/explanation") == list(table.columns).index(f"{m.name}/score") + 1
    some = result.with_explanations(["c3"])
    assert some["trajectory_recall/explanation"].notna().tolist() == [i == 3 for i in range(25)]


def test_judged_metrics_keep_the_row_path() -> None:

    class Judged(lf.metrics.Metric):
        name = "judged"
        is_async = True

        def score(self, ctx):
            return 1.0

    assert not saved_module.takes_columnar_path(_flat_rows(3, 1), [Judged()], lf.RunConfig())


def test_a_columnar_result_rebuilds_runs_and_scores_when_asked() -> None:
    rows = _flat_rows(6, 2)
    result = score_saved_rows(rows, resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False))
    assert [r.case_id for r in result.runs] == [f"c{i}" for i in range(6)]
    assert [r.output.response for r in result.runs] == [r["response"] for r in rows]  # the saved answers, read again
    assert result.dataset[2].reference_trajectory[0].tool_name == rows[2]["reference_trajectory"][0]["tool_name"]
    assert result.row_scores[0]["trajectory_recall"].value == result.metrics_table["trajectory_recall/score"][0]
    assert result.row_scores[0]["trajectory_recall"].explanation is not None


def test_without_pyarrow_parquet_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    from levelfield.formats.batches import table_writer

    with pytest.raises(MissingExtraError, match=r"levelfield\[parquet\]"):
        table_writer(tmp_path / "t.parquet")


def test_the_batch_scorer_pickles_with_its_metrics() -> None:
    import pickle

    scorer = BatchScorer(resolve_metrics([*TRAJECTORY, "rouge_l_sum", "bleu"]))
    again = pickle.loads(pickle.dumps(scorer))
    rows = _flat_rows(5, 3)
    a = scorer.score(_ListBatch(rows))
    b = again.score(_ListBatch(rows))
    assert all(np.array_equal(a.columns[k], b.columns[k], equal_nan=True) for k in a.columns if k != "case_id")


def test_cli_scores_saved_predictions_without_an_agent(tmp_path: Path) -> None:
    paths = _write_all(_flat_rows(40, 4), tmp_path)
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "levelfield", "eval", str(paths["parquet"]), "-m", "trajectory_recall", "-m", "exact_match",
         "--out", str(out), "--workers", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "40 rows scored" in proc.stdout and "trajectory_recall" in proc.stdout
    assert "rows/s" in proc.stderr  # the progress bar counts rows per second
    assert sorted(p.name for p in out.iterdir()) == ["metrics_table.parquet", "summary.json"]


def test_cli_fail_under_gates_saved_predictions(tmp_path: Path) -> None:
    paths = _write_all(_flat_rows(10, 4), tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "levelfield", "eval", str(paths["jsonl"]), "-m", "trajectory_exact_match",
         "--fail-under", "trajectory_exact_match=1", "-q"],  # above 1 is refused (exit 2)
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    assert "--fail-under: trajectory_exact_match mean" in proc.stderr


def test_cli_refuses_agent_options_without_an_agent(tmp_path: Path) -> None:
    paths = _write_all(_flat_rows(3, 4), tmp_path)
    proc = subprocess.run([sys.executable, "-m", "levelfield", "eval", str(paths["jsonl"]), "--resume", "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--resume: only with --agent" in proc.stderr


def test_eval_task_scores_saved_predictions_batch_by_batch() -> None:
    frame = pd.DataFrame(_flat_rows(30, 6))
    result = lf.EvalTask(dataset=frame, metrics=["trajectory_recall"], progress=False).evaluate()
    assert type(result) is lf.EvalResult
    expected = row_path(frame.to_dict("records"), resolve_metrics(["trajectory_recall"])).metrics_table
    assert result.metrics_table["trajectory_recall/score"].tolist() == expected["trajectory_recall/score"].tolist()


def test_report_on_a_batch_scored_folder_says_what_it_holds(tmp_path: Path) -> None:
    score_saved_rows(_flat_rows(5, 1), resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False, out=tmp_path / "out"))
    proc = subprocess.run([sys.executable, "-m", "levelfield", "report", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "scored batch by batch (metrics_table.parquet, summary.json)" in proc.stderr


def test_blank_lines_keep_rows_numbered_across_batches(tmp_path: Path) -> None:
    rows = _flat_rows(23, 7)
    for r in rows:
        r.pop("case_id")  # rows without an id are numbered by their place in the file
    text = "".join(json.dumps(r) + ("\n\n" if i % 5 == 0 else "\n") for i, r in enumerate(rows))
    path = tmp_path / "blank.jsonl"
    path.write_text("\n" + text, encoding="utf-8")
    from levelfield.formats.batches import batch_source

    source = batch_source(path, batch_rows=4)
    batches = list(source.batches)
    assert len(batches) > 3
    located = [(b.start + i, b.where(i)) for b in batches for i, _ in enumerate(b.rows())]
    assert [i for i, _ in located] == list(range(23))
    assert located[1][1] == "blank.jsonl line 4"  # line 1 is blank, row 0 on line 2, a blank line after it
    table = score_saved_rows(path, resolve_metrics(["trajectory_recall"]), lf.RunConfig(progress=False)).metrics_table
    assert table["case_id"].tolist() == [str(i) for i in range(23)]


def test_parquet_struct_columns_read_as_load_dataset_reads_them(tmp_path: Path) -> None:
    # A DataFrame with trajectories as lists of dicts: Parquet stores the union of every call's
    # argument keys and fills the missing ones with null; both paths must drop them alike.
    rows = [
        {"case_id": "a", "response": "ok", "predicted_trajectory": [{"tool_name": "lamp", "tool_input": {"device": "hall"}}],
         "reference_trajectory": [{"tool_name": "lamp", "tool_input": {"device": "hall"}}]},
        {"case_id": "b", "response": "ok", "predicted_trajectory": [{"tool_name": "heat", "tool_input": {"room": "客厅"}}],
         "reference_trajectory": [{"tool_name": "heat", "tool_input": {"room": "客厅"}}]},
    ] * 3
    rows = [dict(r, case_id=f"{r['case_id']}{i}") for i, r in enumerate(rows)]
    path = tmp_path / "structs.parquet"
    pd.DataFrame(rows).to_parquet(path)
    metrics = resolve_metrics(["trajectory_exact_match"])
    expected = row_path(load_dataset(path), metrics).metrics_table["trajectory_exact_match/score"].tolist()
    got = score_saved_rows(path, metrics, lf.RunConfig(progress=False)).metrics_table["trajectory_exact_match/score"].tolist()
    table = score_saved_rows(pa.Table.from_pandas(pd.DataFrame(rows)), metrics, lf.RunConfig(progress=False)).metrics_table
    assert got == expected == [1.0] * 6
    assert table["trajectory_exact_match/score"].tolist() == [1.0] * 6


def test_there_is_one_result_type_and_no_second_name_for_it() -> None:
    import levelfield._core.results.result as result_module

    assert not hasattr(result_module, "ColumnarResult") and result_module.EvalResult is lf.EvalResult


def test_a_batch_scored_result_saves_the_full_record_and_loads_back(tmp_path: Path) -> None:
    rows = _flat_rows(12, 4)
    metrics = resolve_metrics(["trajectory_recall", "exact_match"])
    result = score_saved_rows(rows, metrics, lf.RunConfig(progress=False))
    paths = result.save(tmp_path / "saved")
    assert paths["runs"].exists()
    loaded = lf.EvalResult.load(tmp_path / "saved")
    assert loaded.scored_saved_predictions and [r.case_id for r in loaded.runs] == [f"c{i}" for i in range(12)]
    assert loaded.summary_metrics["trajectory_recall/mean"] == pytest.approx(result.summary_metrics["trajectory_recall/mean"])
    assert loaded.row_scores[3]["trajectory_recall"].explanation == result.explain("c3")["trajectory_recall"].explanation
    table = pd.read_csv(paths["metrics_table"])
    assert table["trajectory_recall/explanation"].notna().all()


def test_a_loaded_dataframe_is_scored_from_the_frame_as_evaluate_df_is(monkeypatch) -> None:
    import levelfield._entry.evaluation as evaluation

    rows = [{"case_id": f"c{i}", "prompt": f"Pergunta {i}", "reference": "東京は晴れ", "response": r,
             "reference_trajectory": [{"tool_name": "t", "tool_input": {"x": i}}],
             "predicted_trajectory": [{"tool_name": "t", "tool_input": {"x": i if i % 3 else -1}}]}
            for i, r in enumerate(["東京は晴れ", "Berlin: sonnig", "東京は晴れ", "sol em Lisboa"] * 5)]
    frame = pd.DataFrame(rows)
    metrics = ["trajectory_exact_match", "rouge_l_sum"]
    seen = []
    real = evaluation.score_saved_rows
    monkeypatch.setattr(evaluation, "score_saved_rows", lambda data, *a, **k: seen.append(data) or real(data, *a, **k))
    loaded = lf.load_dataset(frame)
    assert loaded.loaded_from is frame
    by_frame = lf.evaluate(frame, metrics=metrics, progress=False).summary_metrics
    by_loaded = lf.evaluate(loaded, metrics=metrics, progress=False).summary_metrics
    assert seen == [frame, frame]  # the batch scorer read the frame both times; no second set of cases
    assert by_loaded == by_frame
    # Cases changed after loading no longer match the frame: they are scored from the cases themselves.
    head = loaded.head(4)
    assert head.loaded_from is None
    assert lf.evaluate(head, metrics=metrics, progress=False).summary_metrics["row_count"] == 4
