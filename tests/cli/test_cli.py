"""The ``levelfield`` command: eval, compare, report, thresholds and exit codes."""

import json
import textwrap

import pytest

from levelfield.cli.main import main

SAMPLE = "samples/home_automation/dataset.jsonl"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
HASTY = "samples.home_automation.agents.function_agents:hasty_agent"
FILES = {"runs.jsonl", "metrics_table.csv", "summary.json", "report.html"}


@pytest.fixture
def agents_module(tmp_path, monkeypatch):
    """An importable module ``cli_agents`` with agents the samples do not have."""
    (tmp_path / "cli_agents.py").write_text(textwrap.dedent("""
        def broken(prompt):
            raise RuntimeError("always down")

        not_an_agent = 42
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "cli_agents"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_prints_the_summary_and_writes_every_file(tmp_path, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "--metric", "trajectory_exact_match",
                       "--out", str(tmp_path), "--quiet")
    assert code == 0
    assert "trajectory_exact_match" in out and "1.000 [0.78, 1.00]" in out
    assert FILES <= {p.name for p in tmp_path.iterdir()}


def test_compare_names_agents_and_tests_them_pairwise(tmp_path, capsys):
    code, out, _ = run(capsys, "compare", SAMPLE, "--agent", f"careful={CAREFUL}", "--agent", f"hasty={HASTY}",
                       "-m", "trajectory_exact_match", "-m", "rouge_l_sum", "--out", str(tmp_path), "-q")
    assert code == 0
    assert "careful vs hasty" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["agents"] == ["careful", "hasty"] and summary["metrics"] == ["trajectory_exact_match", "rouge_l_sum"]


def test_trials_option_adds_pass_at_k(capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "trajectory_exact_match", "--trials", "2", "-q")
    assert code == 0 and "pass@2" in out


def test_fail_under_exits_one_when_a_mean_is_under_the_threshold(capsys):
    code, _, err = run(capsys, "compare", SAMPLE, "--agent", f"careful={CAREFUL}", "--agent", f"hasty={HASTY}",
                       "-m", "trajectory_exact_match", "--fail-under", "trajectory_exact_match=0.9", "-q")
    assert code == 1
    assert "hasty: trajectory_exact_match mean 0.556 (no run failed) is under 0.9" in err and "careful" not in err


def test_fail_under_exits_zero_when_every_mean_reaches_it(capsys):
    code, _, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "trajectory_exact_match",
                     "--fail-under", "trajectory_exact_match=1.0", "-q")
    assert code == 0


def test_failed_runs_are_left_out_by_eval_as_by_evaluate_and_shown(agents_module, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", f"{agents_module}:broken", "-m", "trajectory_recall", "-q",
                       "--allow-failures")
    assert code == 0
    assert "18/18" in out and "failed runs are left out: 18 of 18 runs failed" in out


def assert_one_line_error(code, out, err, *needles):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0]


def test_unimportable_agent_spec_is_one_line_exit_two(capsys):
    assert_one_line_error(*run(capsys, "eval", SAMPLE, "--agent", "no_such_module:agent", "-q"), "no_such_module")


def test_malformed_agent_spec_is_one_line_exit_two(capsys):
    assert_one_line_error(*run(capsys, "eval", SAMPLE, "--agent", "just-a-word", "-q"), "module:attr")


def test_spec_that_is_not_an_agent_is_one_line_exit_two(agents_module, capsys):
    assert_one_line_error(*run(capsys, "eval", SAMPLE, "--agent", f"{agents_module}:not_an_agent", "-q"), "int")


def test_missing_dataset_is_one_line_exit_two(tmp_path, capsys):
    assert_one_line_error(*run(capsys, "eval", str(tmp_path / "nope.jsonl"), "--agent", CAREFUL, "-q"), "nope.jsonl")


def test_malformed_dataset_row_is_one_line_exit_two_naming_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "hi"}\n{"prompt": "x", "reference_trajectory": 5}\n')
    assert_one_line_error(*run(capsys, "eval", str(bad), "--agent", CAREFUL, "-q"), "line 2", "reference_trajectory")


def test_unknown_metric_is_one_line_exit_two(capsys):
    assert_one_line_error(*run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "no_such_metric", "-q"), "no_such_metric")


def test_fail_under_on_a_metric_not_in_the_run_is_exit_two(capsys):
    assert_one_line_error(*run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", "bleu",
                               "--fail-under", "trajectory_recall=0.5", "-q"), "trajectory_recall")


def test_bad_option_value_is_exit_two(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["eval", SAMPLE, "--agent", CAREFUL, "--concurrency", "0"])
    assert exc.value.code == 2


def test_two_agents_with_one_name_is_exit_two(capsys):
    assert_one_line_error(*run(capsys, "compare", SAMPLE, "--agent", f"x={CAREFUL}", "--agent", f"x={HASTY}", "-q"), "'x'")


def test_report_rerenders_a_saved_run(tmp_path, capsys):
    assert run(capsys, "compare", SAMPLE, "--agent", f"careful={CAREFUL}", "--agent", f"hasty={HASTY}",
               "-m", "trajectory_exact_match", "--out", str(tmp_path), "-q")[0] == 0
    (tmp_path / "report.html").unlink()
    code, out, _ = run(capsys, "report", str(tmp_path))
    assert code == 0 and "careful vs hasty" in out
    assert "hasty" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_report_of_a_directory_without_a_run_is_exit_two(tmp_path, capsys):
    assert_one_line_error(*run(capsys, "report", str(tmp_path)), "runs.jsonl")
