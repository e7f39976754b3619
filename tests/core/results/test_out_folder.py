"""``out=`` / ``--out`` never writes over files that are not a levelfield run, unless told to."""

import pytest

import levelfield as lf
from levelfield._core.errors import RecordError
from levelfield.cli import main

ROWS = [{"case_id": "c1", "prompt": "Bonjour, 世界", "reference": "Olá"}]
SAVED = [{"case_id": "c1", "prompt": "Hallo", "reference": "Olá", "response": "Olá"}]


def _echo(prompt: str) -> str:
    return "Olá"


@pytest.fixture
def busy(tmp_path):
    """A folder holding a user's own files, one named like a levelfield output."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("meine Notizen", encoding="utf-8")
    (folder / "data").mkdir()
    return folder


def test_compare_refuses_a_folder_of_other_files_naming_it_and_them(busy):
    with pytest.raises(RecordError) as info:
        lf.compare(ROWS, {"a": _echo}, ["exact_match"], out=busy, progress=False)
    text = str(info.value)
    assert str(busy) in text and "'data/'" in text and "'notes.txt'" in text and "overwrite=True" in text
    assert sorted(p.name for p in busy.iterdir()) == ["data", "notes.txt"]  # nothing written


def test_evaluate_of_saved_predictions_refuses_it_too(busy):
    with pytest.raises(RecordError, match="no run record"):
        lf.evaluate(SAVED, metrics=["exact_match"], out=busy, progress=False)
    assert sorted(p.name for p in busy.iterdir()) == ["data", "notes.txt"]


def test_overwrite_writes_into_it_and_keeps_the_other_files(busy):
    lf.evaluate(ROWS, _echo, ["exact_match"], out=busy, overwrite=True, progress=False)
    assert (busy / "runs.jsonl").exists() and (busy / "notes.txt").read_text(encoding="utf-8") == "meine Notizen"


def test_hidden_files_and_an_empty_folder_are_fine(tmp_path):
    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / ".gitkeep").write_text("", encoding="utf-8")
    lf.evaluate(ROWS, _echo, ["exact_match"], out=folder, progress=False)
    assert (folder / "runs.jsonl").exists()


def test_an_out_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("x\n", encoding="utf-8")
    with pytest.raises(RecordError, match="is a file, not a folder"):
        lf.evaluate(ROWS, _echo, ["exact_match"], out=path, progress=False)


def test_cli_refuses_with_exit_2_and_writes_with_overwrite(busy, capsys):
    agent = "samples.home_automation.agents.function_agents:careful_agent"
    args = ["eval", "samples/home_automation/dataset.jsonl", "--agent", agent, "-m", "trajectory_exact_match",
            "--limit", "1", "--out", str(busy), "-q"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{busy} holds 2 other file(s)" in err and "--overwrite" in err
    assert main([*args, "--overwrite"]) == 0
    assert (busy / "report.html").exists() and (busy / "notes.txt").exists()
