"""Dataset checks made before any agent runs: repeated case ids and blank prompts, each named by row."""

import json

import pytest

import levelfield as lf


def test_repeated_id_names_every_row_that_uses_it(tmp_path):
    path = tmp_path / "cases.jsonl"
    rows = [{"case_id": "a", "prompt": "p"}, {"case_id": "b", "prompt": "p"}, {"case_id": "a", "prompt": "q"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(lf.DatasetError) as err:
        lf.load_dataset(path)
    assert "'a' at cases.jsonl line 1, cases.jsonl line 3" in str(err.value)
    assert "'b'" not in str(err.value)


def test_each_repeated_id_is_named_with_its_own_rows():
    rows = [{"case_id": i, "prompt": "p"} for i in ("x", "y", "x", "y", "z")]
    with pytest.raises(lf.DatasetError) as err:
        lf.load_dataset(rows)
    message = str(err.value)
    assert "'x' at dataset row 1, dataset row 3" in message
    assert "'y' at dataset row 2, dataset row 4" in message


def test_one_duplicate_among_many_rows_is_found_and_named():
    rows = [{"case_id": f"c{i}", "prompt": "p"} for i in range(20_000)]
    rows.append({"case_id": "c17", "prompt": "again"})
    with pytest.raises(lf.DatasetError, match=r"'c17' at dataset row 18, dataset row 20001\. Give each row its own id"):
        lf.load_dataset(rows)


def test_an_id_repeated_many_times_lists_five_rows_and_counts_the_rest():
    rows = [{"case_id": "same", "prompt": "p"} for _ in range(8)]
    with pytest.raises(lf.DatasetError, match=r"dataset row 5 and 3 more"):
        lf.load_dataset(rows)


def test_cases_built_in_code_are_named_by_position_when_they_have_no_location():
    cases = [lf.EvalCase(case_id="k", prompt="a"), lf.EvalCase(case_id="k", prompt="b")]
    with pytest.raises(lf.DatasetError, match=r"'k' at mine row 1, mine row 2"):
        lf.EvalDataset(cases, source="mine")


@pytest.mark.parametrize("prompt", ["", "   ", "\t\n", "\u3000"], ids=["empty", "spaces", "tabs", "ideographic-space"])
def test_blank_prompt_is_an_error_naming_its_row(prompt):
    called = []
    with pytest.raises(lf.DatasetError, match=r"'prompt' is missing or empty at dataset row 2"):
        lf.evaluate([{"prompt": "你好"}, {"prompt": prompt}], lambda p: called.append(p) or "x", progress=False)
    assert called == []


def test_blank_prompt_in_a_file_names_the_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"prompt": "Guten Tag"}) + "\n" + json.dumps({"prompt": "  "}) + "\n")
    with pytest.raises(lf.DatasetError, match=r"at cases.jsonl line 2"):
        lf.evaluate(path, lambda p: "x", progress=False)


def test_every_row_blank_is_named_row_by_row_not_as_a_missing_column():
    with pytest.raises(lf.DatasetError, match=r"'prompt' is missing or empty at dataset row 1; dataset row 2"):
        lf.evaluate([{"prompt": ""}, {"prompt": " "}], lambda p: "x", progress=False)


def test_blank_prompt_of_a_turn_is_an_error_naming_the_turn():
    with pytest.raises(lf.DatasetError, match=r"row 1, field 'turns', turn 2: 'prompt' is missing or empty"):
        lf.load_dataset([{"turns": [{"prompt": "Olá"}, {"prompt": " "}]}])


def test_blank_prompt_is_fine_when_only_saved_predictions_are_scored():
    result = lf.evaluate([{"prompt": "", "response": "ok", "reference": "ok"}], metrics=["exact_match"])
    assert result.summary_metrics["exact_match/mean"] == 1.0
