"""The metrics table's files written straight from its rows (``table_writer.write_rows``) are those
the DataFrame route writes (``write_table_files(trimmed(pd.DataFrame(rows)))``): the CSV byte for
byte, the Parquet table read back equal in schema and values."""

from __future__ import annotations

import datetime
import math
import random

import pandas as pd
import pytest

import levelfield as lf
from levelfield._core.errors import WriteError
from levelfield._core.results.table_writer import LineMaker, _columns, write_rows
from levelfield._core.results.tables import trimmed, write_table_files

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NAN = float("nan")

FLOATS = [0.1, 0.1 + 0.2, 1 / 3, -0.0, 0.0, 1.0, 2.5, 1e-7, 1e-5, 0.0001, 123456789.125, 1e15, 1e16, 1.5e16, 1e22,
          2.0**53 + 2, 5e-324, 1.7976931348623157e308, -1e-300, math.pi, -math.e, float("inf"), float("-inf")]
INTS = [0, 1, -1, 7, 42, 10**12, 2**53 + 1, 2**63 - 1, -(2**63)]
TEXTS = ["", "plain", "a,b", 'say "hi"', "line\nbreak", "carriage\rreturn", "crlf\r\nend", " padded ", "tab\tinside",
         "São Paulo, coração — ação", "北京的天气怎么样？", "Größe: Straße, Übermaß", "東京の天気は晴れです。",
         "=SUM(A1:A2)", "+1 555", "-0.5", "-x", "@user", "\tstarts with a tab", "\rstarts with a CR", "1e5", "nan",
         "None", "True", "'quoted'", "emoji 🙂 ok", "back\\slash"]
NESTED = [[], {}, [{"tool_name": "get_weather", "tool_input": {"city": "Zürich", "days": 3}}],
          {"a": [1, 2.5, None], "b": {"c": "d,e"}}, [1, "two", [3], {"x": None}], {"quote": '"', "nl": "a\nb"},
          ["日本語", "中文", "português"]]


def _both(tmp_path, rows, trials=None):
    """The files of ``rows`` by the rows route and by the DataFrame route: (csv bytes, parquet table) each.

    The rows route writes them twice: as the save of rows made at the end writes them, and with
    the rows' lines made ahead (:class:`LineMaker`, as ``TableAhead`` makes them, expecting one
    trial and then several: where the guess misses the table's columns, the line is made again);
    both must be the same files."""
    new, ahead, old = tmp_path / "new", tmp_path / "ahead", tmp_path / "old"
    for folder in (new, ahead, old):
        folder.mkdir(exist_ok=True)
    write_rows(rows, new / "t.csv", new / "t.parquet", trials=trials)
    if _columns(rows) is not None:  # lines are made of rows the rows route writes itself
        for expected_trials in (1, 3):
            maker, lines = LineMaker(trials=expected_trials), {}
            for row in rows:
                names = maker.names(row)
                lines[id(row)] = (row, names, maker(row, names, {}))
            write_rows(rows, ahead / "t.csv", ahead / "t.parquet", trials=trials, lines=lines)
            assert (ahead / "t.csv").read_bytes() == (new / "t.csv").read_bytes()
            assert pq.read_table(ahead / "t.parquet").equals(pq.read_table(new / "t.parquet"))
    write_table_files(trimmed(pd.DataFrame(rows), trials=trials), old / "t.csv", old / "t.parquet")
    return ((new / "t.csv").read_bytes(), pq.read_table(new / "t.parquet")), \
           ((old / "t.csv").read_bytes(), pq.read_table(old / "t.parquet"))


def _same(tmp_path, rows, trials=None):
    (csv_new, pq_new), (csv_old, pq_old) = _both(tmp_path, rows, trials)
    assert csv_new == csv_old
    assert pq_new.schema == pq_old.schema
    assert _values(pq_new) == _values(pq_old)
    return csv_new.decode("utf-8"), pq_new


def _values(table):
    # NaN != NaN: compare it as a marker (Parquet keeps a float NaN apart from a null).
    return {name: [("NaN",) if isinstance(v, float) and v != v else v for v in column]
            for name, column in table.to_pydict().items()}


def _rows(columns: dict[str, list]) -> list[dict]:
    n = len(next(iter(columns.values())))
    return [{name: values[i] for name, values in columns.items()} for i in range(n)]


def test_floats_are_written_to_the_last_digit_as_pandas_writes_them(tmp_path):
    text, _ = _same(tmp_path, _rows({"case_id": [str(i) for i in range(len(FLOATS))], "x": FLOATS}))
    assert "0.30000000000000004" in text and "1e+16" in text and "5e-324" in text


def test_whole_numbers_with_a_gap_are_a_float_column_as_in_pandas(tmp_path):
    text, table = _same(tmp_path, _rows({"case_id": ["a", "b", "c"], "input_tokens": [12, None, 7],
                                         "n": [1, NAN, 3], "mixed": [1, 2.5, None]}))
    assert "12.0" in text and table.schema.field("input_tokens").type == pa.float64()


@pytest.mark.parametrize("values", [INTS, [True, False, True], [True, None, False], [None, None, None], [NAN, NAN, NAN],
                                    [1, "a", None], [1, True, 2], [True, 1.5, None], [2.5, "x", NAN], ["a", None, NAN],
                                    [None, 3, None]], ids=repr)
def test_each_kind_of_column_is_written_as_pandas_writes_it(tmp_path, values):
    _same(tmp_path, _rows({"case_id": [f"c{i}" for i in range(len(values))], "v": values}))


def test_text_with_commas_quotes_line_breaks_and_any_script_is_written_as_pandas_writes_it(tmp_path):
    text, table = _same(tmp_path, _rows({"case_id": [str(i) for i in range(len(TEXTS))], "response": TEXTS,
                                         "reference": list(reversed(TEXTS))}))
    assert "'=SUM(A1:A2)" in text and ",-0.5," in text  # a formula is defused, a plain number is not
    assert table.column("response").to_pylist() == TEXTS  # Parquet keeps the text as it was


def test_lists_and_dicts_are_json_in_both_files(tmp_path):
    text, table = _same(tmp_path, _rows({"case_id": [str(i) for i in range(len(NESTED))], "predicted_trajectory": NESTED,
                                         "metadata": [None if i % 3 == 0 else NESTED[i] for i in range(len(NESTED))]}))
    assert '"{""a"":[1,2.5,null],""b"":{""c"":""d,e""}}"' in text
    assert table.schema.field("predicted_trajectory").type == pa.string()


def test_rows_with_different_keys_make_the_union_of_columns_in_pandas_order(tmp_path):
    rows = [{"case_id": "a", "b": 1}, {"case_id": "b", "z": "new", "b": 2}, {"y": [1], "case_id": "c"}]
    text, _ = _same(tmp_path, rows)
    assert text.splitlines()[0] == "case_id,b,z,y"


def test_empty_optional_columns_and_a_single_trial_are_left_out_as_trimmed_leaves_them(tmp_path):
    rows = _rows({"case_id": ["a", "b"], "trial": [0, 0], "error": [None, None], "input_tokens": [None, None],
                  "total_tokens": [None, None], "cost_usd": [NAN, NAN], "cost_note": [None, None], "x": [1.5, 2.0]})
    text, _ = _same(tmp_path, rows)
    assert text.splitlines()[0] == "case_id,error,x"
    _same(tmp_path, rows, trials=-1)  # trial kept whatever the number of trials
    many = _rows({"case_id": ["a", "a"], "trial": [0, 1], "total_tokens": [3, None], "cost_usd": [NAN, NAN]})
    text, _ = _same(tmp_path, many)
    assert text.splitlines()[0] == "case_id,trial,total_tokens,cost_usd"


def test_values_pandas_reads_its_own_way_take_the_dataframe_route_and_match(tmp_path):
    import numpy as np

    rows = _rows({"case_id": ["a", "b"], "when": [datetime.datetime(2026, 1, 1), datetime.datetime(2026, 1, 2, 3)],
                  "n": [np.int64(3), np.int64(4)], "f": [np.float64(0.1), "x"], "big": [2**63, 1]})
    _same(tmp_path, rows)
    _same(tmp_path, [{"case_id": "a", 1: "an int key"}])


def test_random_tables_of_every_kind_are_written_as_pandas_writes_them(tmp_path):
    pools = [FLOATS + [None, NAN], INTS + [None], [True, False, None], TEXTS + [None], NESTED + [None, "text"],
             FLOATS + INTS, TEXTS + INTS + [True, None]]
    rng = random.Random(56)
    for _ in range(60):
        width, height = rng.randint(1, 8), rng.randint(1, 30)
        chosen = [rng.choice(pools) for _ in range(width)]
        # One pool a column, most cells from it, a few from any pool; some rows lack some keys.
        rows = []
        for i in range(height):
            row = {"case_id": f"c{i}", "trial": rng.choice([0, 0, 1])}
            for k, pool in enumerate(chosen):
                if rng.random() < 0.1:
                    continue
                row[f"col{k}"] = rng.choice(rng.choice(pools) if rng.random() < 0.05 else pool)
            rows.append(row)
        assert _columns(rows) is not None  # the rows route itself, not the DataFrame route it falls back on
        _same(tmp_path, rows)


def test_a_write_that_fails_names_the_file_and_leaves_no_file_behind(tmp_path, monkeypatch):
    import errno

    import levelfield._core.results.table_writer as writer

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.csv, "writer", full)
    with pytest.raises(WriteError, match="metrics_table.csv"):
        write_rows([{"case_id": "a", "x": 1.0}], tmp_path / "metrics_table.csv", tmp_path / "metrics_table.parquet")
    assert list(tmp_path.iterdir()) == []


async def _agent(prompt: str) -> dict:
    return {"response": prompt.upper() + ', "done"\n', "tool_calls": [{"name": "look_up", "args": {"q": prompt}}]}


def test_an_evaluation_saves_the_files_the_dataframe_route_writes_and_they_read_back(tmp_path):
    rows = [{"case_id": f"c{i}", "prompt": p, "reference": p.upper() + ', "done"\n', "topic": t,
             "reference_trajectory": [{"tool_name": "look_up", "tool_input": {"q": p}}]}
            for i, (p, t) in enumerate([("olá, mundo", "pt"), ("你好", None), ("=1+1", "formula"), ("grüß gott", 3)])]
    result = lf.evaluate(lf.load_dataset(rows), _agent, ["exact_match", "trajectory_exact_match"], progress=False,
                         out=tmp_path / "run")
    table = result.with_explanations()
    write_table_files(table, tmp_path / "old.csv", tmp_path / "old.parquet")
    assert (tmp_path / "run" / "metrics_table.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    assert pq.read_table(tmp_path / "run" / "metrics_table.parquet").equals(pq.read_table(tmp_path / "old.parquet"))
    back = pd.read_csv(tmp_path / "run" / "metrics_table.csv")
    assert back["prompt"].tolist() == ["olá, mundo", "你好", "'=1+1", "grüß gott"]
    assert back["exact_match/score"].tolist() == [1.0, 1.0, 1.0, 1.0]
