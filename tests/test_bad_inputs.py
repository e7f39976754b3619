"""The bad inputs a reliability audit and a new user's mistakes found (issue 60), one row each: the input,
and the one line that must name what was wrong, where, and the fix. A command line row exits 2 with that
line on stderr and no traceback; a Python row raises a ``LevelfieldError`` (or warns, where the input is
legal but does nothing) — and no agent is asked anything. ``tests/cli/test_cli_numbers.py`` holds the
table of out-of-range numbers; the A2A card read without bounds is ``tests/adapters/test_a2a_bounded_reads.py``.
Add a row here for every new bad input, so the count of unnamed ones can only go down.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.cli.main import main
from tests.bad_input_fixture import CALLS

ROOT = Path(__file__).resolve().parents[1]
AGENT = "tests.bad_input_fixture:agent"
JUDGE = "tests.judged_fixture.certify:judge"
JUDGED = "final_response_match_v2"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A dataset, cassettes of garbage, a judged run saved, and labels files (good and bad)."""
    d = tmp_path_factory.mktemp("bad_inputs")
    rows = [{"case_id": f"c{i}", "prompt": f"Question c{i}?", "reference": "42",
             "response": f"answer {'JUDGE:PASS' if i % 2 else 'JUDGE:FAIL'}"} for i in range(4)]
    (d / "cases.jsonl").write_text("".join(json.dumps({k: r[k] for k in ("case_id", "prompt", "reference")}) + "\n"
                                           for r in rows), encoding="utf-8")
    (d / "saved.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (d / "folder").mkdir()
    (d / "garbage.jsonl").write_bytes(bytes(range(256)) * 4)
    (d / "utf16.jsonl").write_bytes('{"levelfield_cassette": 1}\n'.encode("utf-16"))
    labels = "case_id,trial,human_label\nc0,0,fail\nc1,x,pass\n"
    (d / "trial_x.csv").write_text(labels, encoding="utf-8")
    (d / "conflict.csv").write_text("case_id,human_label\nc0,fail\nc3,pass\nc3,fail\n", encoding="utf-8")
    (d / "trial_5.csv").write_text("case_id,trial,human_label\nc0,0,fail\nc1,5,pass\n", encoding="utf-8")
    assert main(["eval", str(d / "saved.jsonl"), "-m", JUDGED, "--judge", JUDGE, "--out", str(d / "run"), "-q"]) == 0
    return d


def _cli(f: Path, tmp: Path) -> dict[str, list[str]]:
    """Each command line row's arguments (``{f}``: the module's files)."""
    data, out = str(f / "cases.jsonl"), ["--out", str(tmp / "out"), "-q"]
    return {
        "--tools naming a folder": ["eval", data, "--agent", AGENT, "--tools", str(f / "folder"), *out],
        "--tools cassette of binary garbage": ["eval", data, "--agent", AGENT, "--tools", str(f / "garbage.jsonl"), *out],
        "--tools cassette in UTF-16": ["eval", data, "--agent", AGENT, "--tools", str(f / "utf16.jsonl"), *out],
        "judge-check trial column holding x": ["judge-check", str(f / "run"), "--human-labels", str(f / "trial_x.csv")],
        "judge-check conflicting labels": ["judge-check", str(f / "run"), "--human-labels", str(f / "conflict.csv")],
        "judge-check a trial not in the run": ["judge-check", str(f / "run"), "--human-labels", str(f / "trial_5.csv")],
        "a2a-check --timeout nan": ["a2a-check", "http://127.0.0.1:9", "--timeout", "nan"],
        "eval --timeout nan": ["eval", data, "--agent", AGENT, "--timeout", "nan", *out],
        "--stop-early --margin 2": ["compare", data, "-a", f"a={AGENT}", "-a", f"b={AGENT}", "-m", "exact_match",
                                    "--stop-early", "--margin", "2", *out],
        "--fail-under a percent": ["eval", data, "--agent", AGENT, "-m", "exact_match", "--fail-under", "exact_match=80", *out],
        "a URL without its scheme": ["eval", data, "--agent", "127.0.0.1:9999", *out],
        "a custom metric name": ["eval", data, "--agent", AGENT, "-m", "my_concise_answer", *out],
    }


CLI_ROWS = {
    "--tools naming a folder": ["folder", "is a folder, not a file", "--tools tools.jsonl"],
    "--tools cassette of binary garbage": ["garbage.jsonl", "not UTF-8 text", "record it again"],
    "--tools cassette in UTF-16": ["utf16.jsonl", "looks like UTF-16", "save it as UTF-8"],
    "judge-check trial column holding x": ["trial_x.csv row 3", "trial 'x' is not a trial number", "leave it empty"],
    "judge-check conflicting labels": ["conflict.csv rows 3 and 4", "case 'c3' is labelled both pass and fail",
                                       "keep the right one"],
    "judge-check a trial not in the run": ["trial 5", "which this result did not run", "its trials: 0"],
    "a2a-check --timeout nan": ["argument --timeout", "nan: give a number more than 0"],
    "eval --timeout nan": ["argument --timeout", "nan: give a number of seconds more than 0"],
    "--stop-early --margin 2": ["margin=2", "'exact_match', a score from 0 to 1", "0.02 for 2 points"],
    "--fail-under a percent": ["--fail-under exact_match=80", "exact_match=0.8, not 80"],
    "a URL without its scheme": ["'127.0.0.1:9999'", "looks like a URL without its scheme", "http://127.0.0.1:9999"],
    "a custom metric name": ["unknown metric 'my_concise_answer'", "takes metric names", "module:attr",
                             "lf.register_metric"],
}


@pytest.mark.parametrize("row", sorted(CLI_ROWS))
def test_a_bad_input_on_the_command_line_is_one_line_naming_it_and_the_fix_exit_2(row, files, tmp_path, capsys,
                                                                                   monkeypatch):
    monkeypatch.chdir(ROOT)
    CALLS.clear()
    try:
        code = main(_cli(files, tmp_path)[row])
    except SystemExit as exited:  # argparse's own refusals
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("levelfield: loading")]
    assert len(lines) == 1 or (lines and lines[0].startswith("usage:")), err  # argparse prints its usage first
    said = lines[-1]
    for part in CLI_ROWS[row]:
        assert part in said, f"{part!r} not in {said!r}"
    assert CALLS == []  # refused before any agent ran


def _rows():
    return [{"case_id": "c0", "prompt": "q", "reference": "42"}]


def _evaluate_metric():
    lf.evaluate(_rows(), lambda p: p, metric=["exact_match"], progress=False)


def _compare_metric():
    lf.compare(_rows(), {"a": lambda p: p, "b": lambda p: p}, metric=["exact_match"], progress=False)


def _cassette(path_of):
    return lambda f: lf.ToolCassette(f / path_of)


PY_ROWS = [
    ("ToolCassette of a folder", _cassette("folder"), lf.LevelfieldError, ["folder", "is a folder, not a file"]),
    ("ToolCassette of binary garbage", _cassette("garbage.jsonl"), lf.LevelfieldError,
     ["garbage.jsonl, byte 128", "not UTF-8 text", "record it again"]),
    ("ToolCassette in UTF-16", _cassette("utf16.jsonl"), lf.LevelfieldError, ["utf16.jsonl", "looks like UTF-16"]),
    ("ToolCallMatcher(rel_tol='x')", lambda f: lf.ToolCallMatcher(rel_tol="x"), lf.MetricError,
     ["ToolCallMatcher(rel_tol='x')", "a number of 0 or more"]),
    ("ToolCallMatcher(abs_tol=nan)", lambda f: lf.ToolCallMatcher(abs_tol=math.nan), lf.MetricError, ["abs_tol=nan"]),
    ("Faults(slow_seconds=nan)", lambda f: lf.Faults(slow_seconds=math.nan), lf.ConfigError,
     ["Faults(slow_seconds=nan)", "slow_seconds=0.5"]),
    ("evaluate(metric=...)", lambda f: _evaluate_metric(), lf.ConfigError, ["evaluate()", "'metric' (did you mean 'metrics'?)"]),
    ("compare(metric=...)", lambda f: _compare_metric(), lf.ConfigError, ["compare()", "'metric' (did you mean 'metrics'?)"]),
    ("TrajectorySingleToolUse(tool_name=5)", lambda f: lf.metrics.TrajectorySingleToolUse(tool_name=5), lf.MetricError,
     ["tool_name=5", "tool_name='get_weather'"]),
    ("as_agent of a URL without its scheme", lambda f: lf.as_agent("localhost:8000"), lf.ConfigError,
     ["'localhost:8000'", "http://localhost:8000"]),
    ("labels with a trial x", lambda f: lf.certify_judge(lf.EvalResult.load(f / "run"), f / "trial_x.csv"),
     lf.LevelfieldError, ["trial_x.csv row 3: trial 'x'"]),
    ("conflicting labels", lambda f: lf.certify_judge(lf.EvalResult.load(f / "run"), f / "conflict.csv"),
     lf.LevelfieldError, ["rows 3 and 4", "labelled both pass and fail"]),
    ("a labelled trial not in the run", lambda f: lf.certify_judge(lf.EvalResult.load(f / "run"), f / "trial_5.csv"),
     lf.ConfigError, ["trial 5, which this result did not run"]),
]


@pytest.mark.parametrize("row, make, error, parts", PY_ROWS, ids=[r[0] for r in PY_ROWS])
def test_a_bad_input_from_python_is_a_levelfield_error_naming_it_and_the_fix(row, make, error, parts, files):
    with pytest.raises(error) as raised:
        make(files)
    said = str(raised.value)
    assert "\n" not in said
    for part in parts:
        assert part in said, f"{part!r} not in {said!r}"


def test_faults_naming_no_tool_warn_that_nothing_will_be_injected():
    with pytest.warns(lf.LevelfieldWarning, match=r"Faults\(tools=\[\]\) names no tool, so no call meets a fault"):
        lf.Faults(rate=1, tools=[])


def test_faults_naming_a_tool_no_agent_has_warn_with_the_tools_they_have():
    from tests.bad_input_fixture import agent

    with pytest.warns(lf.LevelfieldWarning, match=r"'no_such_tool' is a tool of none of the agents.*their tools are "
                                                  r"lookup"):
        lf.evaluate(_rows(), agent, metrics=["exact_match"], faults=lf.Faults(rate=1, tools=["no_such_tool"]),
                    progress=False)


# -- numbers stay numbers ------------------------------------------------------------------------------


def test_a_reference_of_42_stays_42_and_text_metrics_read_its_text():
    result = lf.evaluate([{"prompt": "q", "reference": 42}], lambda p: "42", metrics=["exact_match"], progress=False)
    assert result.dataset.cases[0].reference == 42 and type(result.dataset.cases[0].reference) is int
    assert result.metrics_table["reference"][0] == 42
    assert result.scores[0]["exact_match/score"] == 1.0


def test_an_infinite_reference_is_refused_naming_the_row():
    with pytest.raises(lf.DatasetError, match=r"field 'reference': inf is no reference"):
        lf.evaluate([{"prompt": "q", "reference": math.inf}], lambda p: "x", metrics=["exact_match"], progress=False)


def test_nan_and_infinity_in_a_json_file_are_kept_with_a_warning_not_silently_null(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"prompt": "q", "reference": "a", "score_a": NaN, "score_b": Infinity}\n', encoding="utf-8")
    with pytest.warns(lf.LevelfieldWarning, match=r"cases.jsonl: line 1: NaN \(and 1 more\) is not a JSON number; it is "
                                                  r"kept as a number"):
        dataset = lf.load_dataset(path)
    meta = dataset.cases[0].metadata
    assert math.isnan(meta["score_a"]) and meta["score_b"] == math.inf


def test_an_mlflow_trace_with_a_lost_parent_span_is_a_failed_row_naming_it():
    def span(name, sid, parent, kind):
        return {"name": name, "span_id": sid, "parent_span_id": parent, "start_time_unix_nano": 1,
                "end_time_unix_nano": 9, "attributes": {"mlflow.spanType": json.dumps(kind),
                                                         "mlflow.spanInputs": '"q"', "mlflow.spanOutputs": '"a"'}}
    trace = {"info": {"trace_id": "tr-lost"}, "data": {"spans": [
        span("agent", "00000000000000a1", None, "AGENT"), span("lookup", "00000000000000b2", "00000000000000c3", "TOOL")]}}
    meta = lf.load_traces([trace])[0].metadata
    assert meta["failure"] is True
    assert "trace tr-lost, span 'lookup' (00000000000000b2): its parent span 00000000000000c3 is not in the trace" in meta["error"]


@pytest.mark.parametrize("answer", [
    "1/0",
    '{"verdict": "safe"} {"verdict": "unsafe"}',
])
def test_a_judge_answer_that_is_not_one_rating_is_unreadable_not_a_score(answer):
    metric = lf.metrics.judged.safety(judge=lambda prompt: answer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lf.LevelfieldWarning)  # most rows unreadable: warned, as it should
        row = lf.evaluate([{"prompt": "q", "response": "a"}], metrics=[metric], progress=False).scores[0]
    assert math.isnan(row["safety/score"]) and row["safety/failed"]
    assert "could not be read" in row["safety/error"]


@pytest.mark.parametrize("answer", [
    '{"is_the_agent_response_valid": "valid"}\n{"is_the_agent_response_valid": "invalid"}',
    '{"is_the_agent_response_valid": "invalid"} then {"is_the_agent_response_valid": "valid"}',
])
def test_two_contradicting_verdicts_are_unreadable_not_the_last_one(answer):
    from levelfield.judge.adk.labels import _label_value

    assert _label_value(answer, None, ("is_the_agent_response_valid",)) is None
    assert _label_value(answer.split("\n")[0].split(" then ")[0], None, ("is_the_agent_response_valid",)) in (0.0, 1.0)


def test_the_default_judge_timeout_is_one_a_user_waits_for():
    config = lf.JudgeConfig()
    assert config.timeout == 30.0 and (config.retries + 1) * config.timeout <= 150
    assert "about 2 minutes" in (lf.JudgeConfig.__doc__ or "") + _field_doc("timeout")


def _field_doc(name: str) -> str:
    import inspect

    source = inspect.getsource(lf.JudgeConfig)
    return source[source.index(f"    {name}:"):][:600]


def test_infinity_in_a_python_row_is_kept_with_a_warning_not_silently_null():
    with pytest.warns(lf.LevelfieldWarning, match=r"dataset row 2, field 'budget': inf is kept as a number"):
        result = lf.evaluate([{"prompt": "q", "reference": "a"}, {"prompt": "r", "reference": "b", "budget": math.inf}],
                             lambda p: "a", metrics=["exact_match"], progress=False)
    assert result.dataset.cases[1].metadata["budget"] == math.inf


def test_the_command_line_takes_a_metric_of_ones_own_as_module_attr(files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = main(["eval", str(files / "saved.jsonl"), "-m", "tests.bad_input_fixture:Short", "--out", str(tmp_path / "o"), "-q"])
    assert code == 0, capsys.readouterr().err
    import pandas as pd

    table = pd.read_parquet(tmp_path / "o" / "metrics_table.parquet")
    assert table["short/score"].tolist() == [1.0, 1.0, 1.0, 1.0]
