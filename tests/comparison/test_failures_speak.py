"""Failures must speak: the CLI names error types, examples and cases, and exits 1 when an agent always failed;
the Python entry points raise levelfield's own one-line errors and warn when every run failed."""

import textwrap
import traceback
import warnings

import pytest

import levelfield as lf
from levelfield import AllRunsFailedWarning
from levelfield._core.data.types import AgentRun
from levelfield.cli.main import main
from levelfield.comparison._failures import agents_that_always_failed, failure_groups, format_failures

SAMPLE = "samples/home_automation/dataset.jsonl"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"

# The README's skeleton as a new user pastes it: ``{...}`` is a set holding Ellipsis, not a dict.
SKELETON = '''
def my_agent(prompt: str) -> dict:
    ...
    return {"response": "...", "predicted_trajectory": [{"tool_name": "...", "tool_input": {...}}]}

def no_response(prompt):
    return {"answer": "42"}
'''


@pytest.fixture
def pasted(tmp_path, monkeypatch):
    (tmp_path / "pasted_agents.py").write_text(textwrap.dedent(SKELETON))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "pasted_agents"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_exits_one_when_every_run_of_the_agent_failed(pasted, capsys):
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", f"{pasted}:my_agent", "-m", "trajectory_recall", "-q")
    assert code == 1
    assert "every run of my_agent failed" in err and "--allow-failures" in err


def test_cli_prints_the_error_type_an_example_and_its_case(pasted, capsys):
    _, out, _ = run(capsys, "eval", SAMPLE, "--agent", f"{pasted}:my_agent", "-m", "trajectory_recall", "-q")
    line = next(x for x in out.splitlines() if "bad_output x18" in x)
    assert "e.g. case turn_off_device_2" in line
    assert "'tool_input'" in line and "got set" in line


def test_cli_names_a_missing_response_key(pasted, capsys):
    _, out, _ = run(capsys, "eval", SAMPLE, "--agent", f"{pasted}:no_response", "-m", "trajectory_recall", "-q")
    assert "without 'response'" in out and "['answer']" in out


def test_allow_failures_flag_exits_zero(pasted, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", f"{pasted}:my_agent", "-m", "trajectory_recall", "-q",
                       "--allow-failures")
    assert code == 0
    assert "Failures:" in out


def test_cli_without_failures_prints_no_failure_section(capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "trajectory_recall", "-q")
    assert code == 0
    assert "Failures:" not in out


def test_cli_says_what_it_is_loading_before_the_run(capsys):
    _, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "trajectory_recall")
    assert err.splitlines()[0].startswith(f"levelfield: loading {SAMPLE}")


def test_evaluate_accepts_the_spec_strings_the_cli_accepts():
    result = lf.evaluate(SAMPLE, CAREFUL, metrics=["trajectory_exact_match"], progress=False)
    assert result.agent_name == "careful_agent"
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0


def test_evaluate_raises_a_bad_spec_as_levelfield_error_from_the_entry_point():
    with pytest.raises(lf.AgentSpecError) as info:
        lf.evaluate(SAMPLE, "no_such_module_xyz:agent", metrics=["trajectory_exact_match"], progress=False)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert "no_such_module_xyz" in str(info.value)
    assert not any("asyncio" in f.filename for f in frames)
    assert len(frames) <= 3


def test_evaluate_raises_a_bad_dataset_row_without_asyncio_frames(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "hi", "reference_trajectory": "not a list"}\n')
    with pytest.raises(lf.DatasetError) as info:
        lf.evaluate(path, lambda p: "hi", metrics=["trajectory_exact_match"], progress=False)
    assert "bad.jsonl" in str(info.value)
    assert not any("asyncio" in f.filename for f in traceback.extract_tb(info.value.__traceback__))


def test_compare_raises_an_unknown_metric_without_asyncio_frames():
    with pytest.raises(lf.MetricError) as info:
        lf.compare(SAMPLE, {"a": CAREFUL}, metrics=["no_such_metric"], progress=False)
    assert not any("asyncio" in f.filename for f in traceback.extract_tb(info.value.__traceback__))


def test_evaluate_warns_when_every_run_failed_and_keeps_the_runs(pasted):
    import importlib

    agent = importlib.import_module(pasted).my_agent
    with pytest.warns(AllRunsFailedWarning, match=r"every run of agent 'my_agent' failed .*bad_output x18, e.g. case"):
        result = lf.evaluate(SAMPLE, agent, metrics=["trajectory_exact_match"], progress=False)
    assert len(result.runs) == 18 and all(r.failure for r in result.runs)


def test_evaluate_does_not_warn_when_some_runs_succeed():
    def half(prompt):
        if "Kitchen" in prompt:
            raise RuntimeError("kitchen is down")
        return "ok"

    with warnings.catch_warnings():
        warnings.simplefilter("error", AllRunsFailedWarning)
        result = lf.evaluate(SAMPLE, half, metrics=["exact_match"], progress=False)
    assert 0 < len(result.failures) < len(result.runs)


def _run(case, error_type=None, error=None):
    return AgentRun(case_id=case, agent_name="a", trial=0, output=None, latency_in_seconds=0.1,
                    failure=error_type is not None, error=error, error_type=error_type)


def test_failure_groups_count_each_error_type_and_keep_the_first_example():
    runs = {"a": [_run("c1", "timeout", "timed out"), _run("c2", "bad_output", "x\n  y"), _run("c3", "timeout", "late"),
                  _run("c4")]}
    groups = failure_groups(runs)
    assert [(g.error_type, g.count, g.case_id, g.example) for g in groups] == [
        ("timeout", 2, "c1", "timed out"), ("bad_output", 1, "c2", "x y")]


def test_format_failures_is_empty_without_failures():
    assert format_failures({"a": [_run("c1")]}) == ""


def test_agents_that_always_failed_ignores_agents_with_one_success():
    runs = {"dead": [_run("c1", "timeout", "t")], "alive": [_run("c1", "timeout", "t"), _run("c2")]}
    assert agents_that_always_failed(runs) == ["dead"]


def test_experiment_with_a_gate_run_is_a_usage_error(capsys):
    code, _, err = run(capsys, "eval", "tests/fixture/home.evalset.json", "--agent", CAREFUL,
                       "--config", "tests/fixture/test_config.json", "--experiment", "x", "-q")
    assert code == 2 and "--experiment is not available with --config" in err
