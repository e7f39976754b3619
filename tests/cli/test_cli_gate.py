"""The command line: --baseline, --fail-if-worse and --margin exit codes, --human-labels, and levelfield plan."""

import pytest

from levelfield.cli.main import main

SAMPLE = "samples/home_automation/dataset.jsonl"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
HASTY = "samples.home_automation.agents.function_agents:hasty_agent"
EXACT = "trajectory_exact_match"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def main_folder(tmp_path_factory):
    """The saved run of the careful agent: the baseline 'main'."""
    folder = tmp_path_factory.mktemp("results") / "main"
    assert main(["eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "-m", "rouge_l_sum", "--out", str(folder), "-q"]) == 0
    return folder


def test_fail_if_worse_exits_1_on_a_significant_regression(main_folder, capsys):
    code, out, err = run(capsys, "eval", SAMPLE, "--agent", HASTY, "--baseline", str(main_folder),
                         "--fail-if-worse", f"{EXACT},rouge_l_sum", "-q")
    assert code == 1
    assert f"{EXACT} (hasty_agent): worse than main by 44.4 points [" in err and "— regression" in err


def test_fail_if_worse_exits_0_when_the_same_agent_runs_again(main_folder, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "--baseline", str(main_folder),
                       "--fail-if-worse", EXACT, "-q")
    assert code == 0
    assert f"{EXACT} (careful_agent): no change: same score as main on all 18 paired cases" in out


def test_a_drop_inside_a_wide_margin_exits_0(main_folder, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", HASTY, "--baseline", str(main_folder),
                       "--fail-if-worse", EXACT, "--margin", "0.6", "-q")
    assert code == 0
    assert "not shown to exceed the 60.0 point margin — no regression" in out


def test_without_a_gate_every_metric_is_described_against_the_baseline(main_folder, capsys):
    code, out, _ = run(capsys, "compare", SAMPLE, "-a", f"new={HASTY}", "--baseline", str(main_folder),
                       "-m", EXACT, "-m", "rouge_l_sum", "-q")
    assert code == 0
    assert "baseline 'main' from" in out and "every case paired" in out
    assert f"  {EXACT} (new): worse than main by 44.4 points" in out
    assert "  rouge_l_sum (new): " in out


def test_fail_if_worse_without_a_baseline_is_a_usage_error(capsys):
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "--fail-if-worse", EXACT, "-q")
    assert code == 2 and "--fail-if-worse needs --baseline DIR" in err


def test_fail_if_worse_on_a_metric_not_run_is_a_usage_error(main_folder, capsys):
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "--baseline", str(main_folder),
                       "--fail-if-worse", "bleu", "-q")
    assert code == 2 and "--fail-if-worse bleu: not one of the metrics of this run" in err


def test_a_baseline_folder_that_does_not_exist_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "--baseline", str(tmp_path / "gone"), "-q")
    assert code == 2 and "no such folder" in err


def test_human_labels_print_the_judge_correction(tmp_path, capsys):
    labels = tmp_path / "labels.csv"
    # The careful agent passes every case; humans fail one of them, so this "judge" passes everything.
    labels.write_text("case_id,human_label,metric\n"
                      f"turn_off_device_2,1,{EXACT}\nturn_on_device_1,1,{EXACT}\n"
                      f"preferred_temperature_living_room,0,{EXACT}\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "--human-labels", str(labels), "-q")
    assert code == 0
    assert (f"careful_agent: {EXACT}: judged 100.0%; no correction: the judge is no better than chance "
            "against 3 human labels") in out


def test_human_labels_for_unknown_cases_exit_2(tmp_path, capsys):
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,human_label\nno_such_case,1\n", encoding="utf-8")
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "--human-labels", str(labels), "-q")
    assert code == 2 and "not in the dataset: no_such_case" in err


def test_plan_prints_the_cases_needed(capsys):
    code, out, _ = run(capsys, "plan", "--p0", "0.80", "--mde", "0.05", "--power", "0.8", "--discordance", "0.15")
    assert code == 0
    assert out.startswith("levelfield plan: 498 cases (498 runs per agent) to detect a change of 5 points from 80%")
    assert "Assumes: agents disagree on 15% of cases." in out


def test_plan_with_trials_states_the_intra_case_correlation(capsys):
    code, out, _ = run(capsys, "plan", "--p0", "0.80", "--mde", "0.05", "--power", "0.8", "--trials", "3")
    assert code == 0 and "3 trials per case with intra-case correlation 0.5" in out


def test_an_impossible_plan_exits_2_with_the_reason(capsys):
    code, _, err = run(capsys, "plan", "--p0", "0.8", "--mde", "0.05", "--discordance", "0.02")
    assert code == 2 and "differ by at most" in err


def test_the_out_folder_of_a_gated_run_can_be_the_next_baseline(main_folder, tmp_path, capsys):
    # results/new holds the new runs and the baseline's; as the next baseline it stands for the new agent.
    new = tmp_path / "new"
    run(capsys, "eval", SAMPLE, "--agent", HASTY, "--baseline", str(main_folder), "--out", str(new), "-q")
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", HASTY, "--baseline", str(new), "--fail-if-worse", EXACT, "-q")
    assert code == 0
    assert f"{EXACT} (hasty_agent): no change: same score as new on all 18 paired cases" in out


def test_plan_from_a_saved_run_and_its_baseline_prints_what_it_measured(main_folder, tmp_path, capsys):
    new = tmp_path / "new"
    run(capsys, "eval", SAMPLE, "--agent", HASTY, "--baseline", str(main_folder), "--out", str(new), "-q")
    code, out, _ = run(capsys, "plan", "--from", str(new), "--metric", EXACT, "--mde", "0.05")
    assert code == 0
    # hasty and careful disagree on 8 of the 18 cases.
    assert f"Measured in {new} (18 cases, 1 trial(s)): p0 1.00, discordance 0.44." in out
    assert "levelfield plan: " in out and f"on {EXACT} with 80% power" in out


def test_a_gate_with_no_case_in_common_with_the_baseline_exits_2(main_folder, tmp_path, capsys):
    other = tmp_path / "other.jsonl"
    other.write_text('{"case_id": "elsewhere", "prompt": "Turn on device_9.", "reference_trajectory": []}\n',
                     encoding="utf-8")
    code, _, err = run(capsys, "eval", str(other), "--agent", CAREFUL, "--baseline", str(main_folder),
                       "--fail-if-worse", EXACT, "-q")
    assert code == 2 and "the gate cannot decide" in err
