"""A gate over an agent that crashes on some cases fails: --fail-under reads the mean with failed runs as 0
and says how many runs failed (issue 55: it printed 1.000 and exited 0 on an agent that raised on 4 of 17)."""

import levelfield as lf
from levelfield._core.stats.gating import gate_mean
from levelfield.cli.main import main

SAMPLE = "samples/home_automation/dataset.jsonl"
CRASHING = "tests.judged_fixture.crashing:crashes_on_four"
EXACT = "trajectory_exact_match"


def test_fail_under_fails_an_agent_that_crashes_on_four_cases_and_says_so(capsys):
    code = main(["eval", SAMPLE, "--agent", CRASHING, "-m", EXACT, "--fail-under", f"{EXACT}=0.9", "-q"])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{EXACT} mean 0.778 (4 of 18 runs failed, counted as 0) is under 0.9" in err


def test_fail_under_reads_the_completed_runs_only_when_asked(capsys):
    code = main(["eval", SAMPLE, "--agent", CRASHING, "-m", EXACT, "--fail-under", f"{EXACT}=0.9",
                 "--failed-runs", "exclude", "-q"])
    out, err = capsys.readouterr()
    assert f"{EXACT} mean 1.000 (4 of 18 runs failed, left out) is at least 0.9" in out
    assert code == 0


def test_the_gate_mean_is_the_summary_mean_by_the_rule_it_reads():
    from tests.judged_fixture.crashing import crashes_on_four

    cmp = lf.compare(SAMPLE, {"crashing": crashes_on_four}, [EXACT], progress=False)
    zero = gate_mean(cmp.summary, "crashing", EXACT)
    left_out = gate_mean(cmp.summary, "crashing", EXACT, failed_runs="exclude")
    assert zero.mean == cmp.summary.loc["crashing", f"{EXACT}/mean"] == 14 / 18
    assert left_out.mean == cmp.summary.loc["crashing", f"{EXACT}/mean_failed_left_out"] == 1.0
    assert (zero.failures, zero.runs) == (4, 18)


def test_assert_eval_fails_on_the_cases_the_agent_crashed_on():
    import pytest

    from tests.judged_fixture.crashing import crashes_on_four

    with pytest.raises(AssertionError, match="4 of 18 cases failed"):
        lf.testing.assert_eval(SAMPLE, crashes_on_four, criteria={EXACT: 1.0})


def test_fail_under_on_saved_predictions_counts_the_saved_failures(tmp_path, capsys):
    import json

    rows = [{"case_id": f"c{i}", "prompt": f"Frage {i}: 今日は？", "reference": "ok", "response": "ok"} for i in range(8)]
    rows += [{"case_id": f"f{i}", "prompt": f"Pergunta {i}", "reference": "ok", "failure": 1} for i in range(2)]
    path = tmp_path / "saved.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    code = main(["eval", str(path), "-m", "exact_match", "--fail-under", "exact_match=0.9", "-q"])
    _, err = capsys.readouterr()
    assert code == 1 and "exact_match mean 0.800 (2 of 10 runs failed, counted as 0) is under 0.9" in err
    code = main(["eval", str(path), "-m", "exact_match", "--fail-under", "exact_match=0.9", "--failed-runs", "exclude",
                 "-q"])
    assert code == 0
