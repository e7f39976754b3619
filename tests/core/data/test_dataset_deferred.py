"""A loaded file or large DataFrame is checked whole when loaded, but its cases are made only when
asked for: saved predictions are scored from the source, with no per-row objects held (issue #46)."""

import gc
import json
import pickle

import pandas as pd
import pytest

import levelfield as lf
from levelfield._core.data.dataset import EvalCase
from levelfield._core.data.rows import dataset_from_located
from levelfield.formats.files import read_rows

TEXTS = ["Licht aus, bitte", "把灯关掉", "ライトを消して", "Desligue a luz", "lights off"]


def rows(n):
    return [{"case_id": f"c{i}", "prompt": TEXTS[i % 5], "reference": TEXTS[i % 5], "response": TEXTS[(i * 3) % 5],
             "reference_trajectory": [{"tool_name": "light", "tool_input": {"raum": TEXTS[i % 5]}}],
             "predicted_trajectory": [{"name": "light", "args": {"raum": TEXTS[i % 5]}}]} for i in range(n)]


def write(path, data):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    return path


def live_cases():
    """Cases made during the test (run with the fresh_heap fixture) and still alive."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, EvalCase))


def test_a_loaded_jsonl_file_holds_no_case_until_one_is_asked_for(tmp_path, fresh_heap):
    path = write(tmp_path / "saved.jsonl", rows(300))
    before = live_cases()
    dataset = lf.load_dataset(path)
    assert len(dataset) == 300 and live_cases() == before
    result = lf.evaluate(dataset, metrics=["exact_match", "trajectory_exact_match"], progress=False)
    assert result.summary_metrics["row_count"] == 300 and live_cases() - before < 300
    assert dataset[0].case_id == "c0" and live_cases() - before >= 300  # asked for: made


def test_cases_made_later_are_the_cases_a_whole_load_makes(tmp_path):
    extra = [{"prompt": "no id", "turns": [{"prompt": "a", "reference": "b"}]}]
    path = write(tmp_path / "saved.jsonl", rows(40) + extra)
    eager = dataset_from_located(read_rows(path), str(path))
    deferred = lf.load_dataset(path)
    assert [c.model_dump() for c in deferred] == [dict(c.model_dump(), file=str(path)) for c in eager]
    assert deferred.columns == eager.columns and deferred.source == eager.source


def test_a_bad_row_still_fails_the_load_naming_the_file_line_and_field(tmp_path):
    bad = rows(5)
    bad[3]["predicted_trajectory"] = [{"tool_name": "light", "tool_input": "[1, 2]"}]
    path = write(tmp_path / "saved.jsonl", bad)
    with pytest.raises(lf.DatasetError, match=r"saved.jsonl line 4, field 'predicted_trajectory', call 0"):
        lf.load_dataset(path)
    twice = rows(3) + [dict(rows(1)[0], prompt="again")]
    with pytest.raises(lf.DatasetError, match=r"repeated: 'c0' at saved.jsonl line 1, saved.jsonl line 4"):
        lf.load_dataset(write(tmp_path / "saved.jsonl", twice))


def test_a_file_changed_after_loading_does_not_change_the_dataset(tmp_path):
    path = write(tmp_path / "saved.jsonl", rows(20))
    dataset = lf.load_dataset(path)
    changed = rows(20)
    for row in changed:
        row["response"] = row["reference"]  # every answer right now
    write(path, changed)
    result = lf.evaluate(dataset, metrics=["exact_match"], progress=False)
    expected = sum(r["response"] == r["reference"] for r in rows(20)) / 20
    assert result.summary_metrics["exact_match/mean"] == pytest.approx(expected) and expected < 1
    assert [c.response for c in dataset] == [r["response"] for r in rows(20)]


def test_a_large_data_frame_changed_after_loading_does_not_change_the_dataset():
    frame = pd.DataFrame(rows(1500))
    dataset = lf.load_dataset(frame)
    right = (frame["response"] == frame["reference"]).mean()
    frame["response"] = frame["reference"]
    result = lf.evaluate(dataset, metrics=["exact_match"], progress=False)
    assert result.summary_metrics["exact_match/mean"] == pytest.approx(right) and right < 1
    assert dataset[7].response == TEXTS[21 % 5]


def test_a_deferred_dataset_pickles_with_its_cases(tmp_path):
    dataset = lf.load_dataset(write(tmp_path / "saved.jsonl", rows(12)))
    copy = pickle.loads(pickle.dumps(dataset))
    assert [c.model_dump() for c in copy] == [c.model_dump() for c in dataset]


# Cells of every kind a row may hold, good and bad: a plain row is checked by looking at its cells
# (no case made), any other by making its case; both must accept and refuse the same rows.
_CALL = {"tool_name": "t", "tool_input": {"a": 1}}
CELLS = [None, float("nan"), "", " ", "text", "line\nbreak", '{"messages": [{"role": "user", "content": "hi"}]}',
         '{"query": "q"}', "{not json}", 3, 2.5, True, [], {}, [_CALL], [_CALL, {"tool_name": "u"}],
         [{"tool_name": 5}], [{"name": "t", "args": {}}], [{"tool_name": "t", "tool_input": '{"a": 1}'}],
         [{"tool_name": "t", "tool_input": "not json"}], [{"tool_name": "t", "id": 3}], [{"tool_name": "t", "id": "x"}],
         [{"tool_name": "t", "tool_input": None, "agent": None}], [{"tool_name": "t", "tool_input": [1]}],
         json.dumps([_CALL]), [1, 2], {"a": 1}, [{"role": "user", "content": "hi"}]]
COLUMNS = ["id", "case_id", "prompt", "request", "reference", "expected_response", "response", "predicted_trajectory",
           "reference_trajectory", "expected_tool_use", "history", "state", "turns", "scenario", "handoffs", "other"]


def random_rows(rnd, n):
    return [{c: rnd.choice(CELLS) for c in rnd.sample(COLUMNS, rnd.randint(1, 7))} for _ in range(n)]


def test_checking_a_row_without_making_its_case_accepts_what_making_it_accepts():
    import random

    from levelfield._core.data.rows import _plain_case, case_from_row

    rnd = random.Random(46)
    plain = 0
    for i, row in enumerate(random_rows(rnd, 4000)):
        looked = _plain_case(row, f"f.jsonl line {i + 1}", i)
        if looked is None:
            continue
        plain += 1
        case = case_from_row(row, i, f"f.jsonl line {i + 1}")  # raises if the look let a bad row through
        assert (looked.case_id, looked.location, looked.columns) == (case.case_id, case.location, case.columns)
    assert plain > 100  # the look answers for many rows, not only the trivial ones


def test_a_deferred_load_accepts_refuses_and_names_rows_as_when_it_made_every_case(monkeypatch):
    import random

    from levelfield._core.data import rows as rows_module

    def outcome(located):
        try:
            dataset = rows_module.deferred_dataset(lambda: [located], "f.jsonl")
        except lf.DatasetError as exc:
            return str(exc)
        return [c.model_dump() for c in dataset.cases], dataset.columns

    rnd = random.Random(7)
    datasets = []
    for _ in range(300):
        located = [(row, f"f.jsonl line {i + 1}") for i, row in enumerate(random_rows(rnd, rnd.randint(1, 6)))]
        if rnd.random() < 0.5:  # plain rows, some with repeated, empty or two-line ids
            located = [({"id": rnd.choice(["a", "b", "", "x\ny", None]), "prompt": "p", "predicted_trajectory": [_CALL]},
                        f"f.jsonl line {i + 1}") for i in range(rnd.randint(1, 4))]
        datasets.append(located)
    looked = [outcome(located) for located in datasets]
    monkeypatch.setattr(rows_module, "_plain_case", lambda row, where, index: None)  # every row's case made
    made = [outcome(located) for located in datasets]
    assert looked == made
    assert 30 < sum(isinstance(o, str) for o in made) < 270


def test_a_data_frame_checked_by_columns_accepts_refuses_and_names_rows_as_row_by_row(monkeypatch):
    # Issue #56: load_dataset(df) checks a DataFrame's rows by columns (levelfield._core.data.frame_check), the rows
    # it cannot clear row by row; the outcome (cases, columns, or the error and the row it names) is the row route's.
    import random

    from levelfield._core.data import rows as rows_module
    from levelfield.formats import files

    deep: dict = {"v": 1}
    for _ in range(120):
        deep = {"v": deep}
    extra = [[{"tool_name": "t", "tool_input": {"deep": deep}}], [{"tool_name": "t", "tool_input": {"a": {"b": [1, {"c": "d"}]}}}],
             "lone \ud800 surrogate", [{"tool_name": "t\udc00", "tool_input": {"k": "v\ud800"}}], "{ leading brace", 7]

    def outcome(frame, by_rows):
        try:
            if by_rows:
                records = frame.to_dict("records")
                dataset = rows_module.deferred_dataset(
                    lambda: [[(row, f"DataFrame row {i + 1}") for i, row in enumerate(records)]], "DataFrame")
            else:
                dataset = files._deferred_frame(frame, "DataFrame")
        except lf.DatasetError as exc:
            return str(exc)
        return repr(([c.model_dump() for c in dataset.cases], dataset.columns))  # repr: NaN cells compare equal

    rnd = random.Random(56)
    compared = refused = 0
    for _ in range(300):
        n = rnd.randint(1, 6)
        if rnd.random() < 0.5:
            frame = pd.DataFrame(random_rows(rnd, n))
        else:  # plain rows (the common frame), with odd cells mixed in: ids repeated, empty, two-line, numbers
            def pick(good, odd):
                return rnd.choice(odd) if rnd.random() < 0.15 else good

            frame = pd.DataFrame([{"id": pick(f"c{i}", ["a", "", "x\ny", None, 4, "i\ud800"]),
                                   "prompt": pick("p", [None, *extra[2:5]]),
                                   "response": pick("r", [None, 3]),
                                   "predicted_trajectory": pick([_CALL], [None, [], *extra[:2], extra[3]]),
                                   "other": pick("o", [1, None, [1], {"a": "b"}])} for i in range(n)],
                                 dtype=object)  # text cells as given (pandas' str columns cannot hold a lone surrogate)
        made = outcome(frame, by_rows=True)
        assert outcome(frame, by_rows=False) == made, frame.to_dict("records")
        compared += 1
        refused += not made.startswith("([")
    assert compared == 300 and 30 < refused < 270, refused
