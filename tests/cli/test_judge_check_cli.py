"""The command line: levelfield judge-check's table and exit codes, and --require-certified-judge on the gates.

The runs are real: eval scores a dataset's answers (or an agent's) with final_response_match_v2 and the
offline judge of tests/judged_fixture/certify.py, which passes an answer holding JUDGE:PASS; the human
labels are a separate CSV. The judge passes all 20 answers humans passed and 8 of the 20 they failed:
sensitivity 20/20, specificity 12/20 (one-sided 95% lower bounds 0.86 and 0.39).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import beta

from levelfield.cli.main import main

JUDGE = "tests.judged_fixture.certify:judge"
ECHO = "tests.judged_fixture.certify:echo"
METRIC = "final_response_match_v2"
ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The dataset (saved answers, and the same as prompts for the echo agent), the labels, a saved run."""
    d = tmp_path_factory.mktemp("judge_check")
    saved, live, labels = [], [], []
    for i in range(40):
        human = i < 20
        says = human or i < 28          # the judge passes the fails c20..c27
        marker = "JUDGE:PASS" if says else "JUDGE:FAIL"
        saved.append({"case_id": f"c{i}", "prompt": f"Question c{i}?", "response": f"answer c{i} {marker}",
                      "reference": "the reference"})
        live.append({"case_id": f"c{i}", "prompt": f"Question c{i} {marker}", "reference": "the reference"})
        labels.append({"case_id": f"c{i}", "human_label": "pass" if human else "fail"})
    (d / "saved.jsonl").write_text("".join(json.dumps(r) + "\n" for r in saved), encoding="utf-8")
    (d / "live.jsonl").write_text("".join(json.dumps(r) + "\n" for r in live), encoding="utf-8")
    pd.DataFrame(labels).to_csv(d / "labels.csv", index=False)
    assert main(["eval", str(d / "saved.jsonl"), "-m", METRIC, "--judge", JUDGE, "--out", str(d / "run"), "-q"]) == 0
    return d


def test_judge_check_exits_1_and_says_why_for_a_poor_judge(files, capsys):
    code, out, err = run(capsys, "judge-check", files / "run", "--human-labels", files / "labels.csv")
    assert code == 1 and err == ""
    assert f"{beta.ppf(0.05, 12, 9):.4f}" == "0.3936" and f"{beta.ppf(0.05, 20, 1):.4f}" == "0.8609"
    row = next(line for line in out.splitlines() if line.startswith(METRIC + " "))
    assert row.split() == [METRIC, "40", "40", "1.00", "(20/20)", "0.86", "0.60", "(12/20)", "0.39", "0.60",
                           "cannot", "certify", "NOT", "certified"]
    assert (f"{METRIC}: not certified: specificity lower bound 0.39 < 0.80 on 20 negatives, and the observed "
            "specificity 0.60 is not above 0.80: more labels cannot certify this judge") in out


def test_judge_check_exits_0_when_the_minimums_are_met(files, capsys):
    code, out, _ = run(capsys, "judge-check", files / "run", "--human-labels", files / "labels.csv", "--min-tnr", "0.35")
    assert code == 0
    assert (f"{METRIC}: certified: sensitivity lower bound 0.86 >= 0.80 on 20 positives; specificity lower bound "
            "0.39 >= 0.35 on 20 negatives") in out


def test_judge_check_reads_runs_jsonl_and_prints_json(files, capsys):
    code, out, _ = run(capsys, "judge-check", files / "run" / "runs.jsonl", "--human-labels", files / "labels.csv",
                       "--json")
    found = json.loads(out)
    assert code == 1 and found["certified"] is False
    (m,) = found["metrics"]
    assert (m["true_positives"], m["positives"], m["true_negatives"], m["negatives"]) == (20, 20, 12, 20)
    assert m["specificity_low"] == pytest.approx(beta.ppf(0.05, 12, 9), abs=1e-9)


def test_judge_check_lists_the_rows_to_label_next(files, capsys, tmp_path):
    some = pd.read_csv(files / "labels.csv").iloc[::2]          # half the cases labelled
    some.to_csv(tmp_path / "half.csv", index=False)
    sheet = tmp_path / "next.csv"
    code, out, _ = run(capsys, "judge-check", files / "run", "--human-labels", tmp_path / "half.csv",
                       "--rows-to-label", 5, "--rows-out", sheet)
    assert code == 1
    assert "Rows to label next (5 of at most 5, the judge's least sure first):" in out
    picked = pd.read_csv(sheet)
    assert len(picked) == 5 and not set(picked["case_id"]) & set(some["case_id"])
    assert f"Written: {sheet}" in out


@pytest.mark.parametrize("argv, message", [
    (["--human-labels", "{missing}"], "no such labels file"),
    (["--human-labels", "{no_column}"], "needs columns case_id and human_label; missing human_label"),
    (["--human-labels", "{not_pass_fail}"], "row 2: human_label 'maybe' is not a pass/fail label"),
    (["--human-labels", "{unknown_case}"], "human labels name 1 case(s) not in the dataset: c99"),
    ([], "no human labels: give --human-labels FILE"),
    (["--human-labels", "{labels}", "--metric", "rouge_l_sum"], "'rouge_l_sum' is not a metric of this result"),
    (["--human-labels", "{labels}", "--rows-out", "x.csv"], "--rows-out writes the rows --rows-to-label N picks"),
])
def test_judge_check_exits_2_on_bad_input(files, capsys, tmp_path, argv, message):
    paths = {"missing": tmp_path / "none.csv", "no_column": tmp_path / "a.csv", "not_pass_fail": tmp_path / "b.csv",
             "unknown_case": tmp_path / "c.csv", "labels": files / "labels.csv"}
    paths["no_column"].write_text("case_id,label\nc0,pass\n", encoding="utf-8")
    paths["not_pass_fail"].write_text("case_id,human_label\nc0,maybe\n", encoding="utf-8")
    paths["unknown_case"].write_text("case_id,human_label\nc0,pass\nc99,fail\n", encoding="utf-8")
    code, out, err = run(capsys, "judge-check", files / "run", *[a.format(**paths) for a in argv])
    assert code == 2 and out == ""
    assert err.startswith("levelfield judge-check: ") and message in err


def test_judge_check_exits_2_on_a_bad_result_or_minimum(files, capsys, tmp_path):
    code, _, err = run(capsys, "judge-check", tmp_path / "nothing", "--human-labels", files / "labels.csv")
    assert code == 2 and "no such folder or file" in err
    with pytest.raises(SystemExit) as exited:
        main(["judge-check", str(files / "run"), "--human-labels", str(files / "labels.csv"), "--min-tpr", "1.5"])
    assert exited.value.code == 2 and "--min-tpr: 1.5: give a number more than 0 and less than 1" in capsys.readouterr().err


def test_judge_check_needs_agent_for_a_record_of_several(files, capsys, tmp_path):
    folder = tmp_path / "two"
    assert main(["compare", str(files / "live.jsonl"), "--agent", f"a={ECHO}", "--agent", f"b={ECHO}", "-m", METRIC,
                 "--judge", JUDGE, "--out", str(folder), "-q"]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "judge-check", folder, "--human-labels", files / "labels.csv")
    assert code == 2 and "holds 2 agents (a, b): name the one whose answers the labels judge with --agent NAME" in err
    assert "'agent' column" in err
    code, out, _ = run(capsys, "judge-check", folder, "--human-labels", files / "labels.csv", "--agent", "b")
    assert code == 1 and "Judge certification of b" in out


@pytest.fixture(scope="module")
def two_agents(files, tmp_path_factory):
    """A comparison of two agents judged by one judge, and labels naming whose answer each judges."""
    d = tmp_path_factory.mktemp("pooled")
    assert main(["compare", str(files / "live.jsonl"), "--agent", f"a={ECHO}", "--agent", f"b={ECHO}", "-m", METRIC,
                 "--judge", JUDGE, "--out", str(d / "two"), "-q"]) == 0
    labels = pd.read_csv(files / "labels.csv")
    both = pd.concat([labels.assign(agent="a"), labels.assign(agent="b").iloc[:30]])  # b: 20 passed, 10 failed labelled
    both.to_csv(d / "labels.csv", index=False)
    return d


def test_judge_check_pools_one_labels_file_for_several_agents(two_agents, capsys):
    code, out, err = run(capsys, "judge-check", two_agents / "two", "--human-labels", two_agents / "labels.csv")
    assert err == "" and code == 1
    assert "Judge certification of a" in out and "Judge certification of b" in out
    assert "Judge certification of every agent (pooled)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(METRIC + " ")]
    # a: 40 labelled (TPR 20/20, TNR 12/20); b: 30 labelled (20/20, 2/10: c20..c27 judged pass); pooled: 70.
    assert [r[2] for r in rows] == ["40", "30", "70"]
    assert [(r[4], r[7]) for r in rows] == [("(20/20)", "(12/20)"), ("(20/20)", "(2/10)"), ("(40/40)", "(14/30)")]
    code, out, _ = run(capsys, "judge-check", two_agents / "two", "--human-labels", two_agents / "labels.csv", "--json")
    found = json.loads(out)
    assert set(found["agents"]) == {"a", "b"} and found["pooled"]["metrics"][0]["true_negatives"] == 14


def test_judge_check_agent_narrows_and_says_what_it_left_out(two_agents, capsys):
    code, out, _ = run(capsys, "judge-check", two_agents / "two", "--human-labels", two_agents / "labels.csv",
                       "--agent", "b")
    assert code == 1 and "Judge certification of b" in out and "pooled" not in out
    assert "--agent b: 40 label(s) of other agents (a) left out" in out


def test_judge_check_refuses_labels_naming_an_agent_the_record_lacks(two_agents, capsys, tmp_path):
    labels = pd.read_csv(two_agents / "labels.csv")
    labels.loc[0, "agent"] = "c"
    labels.to_csv(tmp_path / "labels.csv", index=False)
    code, _, err = run(capsys, "judge-check", two_agents / "two", "--human-labels", tmp_path / "labels.csv")
    assert code == 2 and "name agent(s) c, which the record does not hold (a, b)" in err


def test_judge_check_without_a_judged_metric(files, capsys, tmp_path):
    assert main(["eval", str(files / "live.jsonl"), "--agent", ECHO, "-m", "rouge_l_sum", "--out", str(tmp_path / "plain"),
                 "-q"]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "judge-check", tmp_path / "plain", "--human-labels", files / "labels.csv")
    assert code == 2 and "no judged 0/1 metric in this result" in err


# -- --require-certified-judge on the gates ----------------------------------------------------


def test_fail_under_refuses_an_uncertified_judge(files, capsys):
    code, out, err = run(capsys, "eval", files / "saved.jsonl", "-m", METRIC, "--judge", JUDGE, "-q",
                         "--fail-under", f"{METRIC}=0.5", "--require-certified-judge", "--human-labels",
                         files / "labels.csv")
    assert code == 2
    assert "NOT certified" in out
    assert err.strip() == (f"levelfield eval: --fail-under {METRIC}: the judge is not certified, so the gate does not "
                           "decide on it: specificity lower bound 0.39 < 0.80 on 20 negatives, and the observed "
                           "specificity 0.60 is not above 0.80: more labels cannot certify this judge")


def test_fail_under_gates_on_a_certified_judge(files, capsys):
    code, out, err = run(capsys, "eval", files / "saved.jsonl", "-m", METRIC, "--judge", JUDGE, "-q",
                         "--fail-under", f"{METRIC}=0.9", "--require-certified-judge", "--human-labels",
                         files / "labels.csv", "--min-tnr", "0.35")
    assert code == 1                                      # certified; then the mean 0.70 misses 0.9
    assert f"{METRIC}: certified" in out and f"--fail-under: {METRIC} mean 0.700 (no run failed) is under 0.9" in err


def test_fail_if_worse_refuses_an_uncertified_judge(files, capsys, tmp_path):
    base = tmp_path / "base"
    assert main(["eval", str(files / "live.jsonl"), "--agent", ECHO, "-m", METRIC, "--judge", JUDGE, "--out", str(base),
                 "-q"]) == 0
    capsys.readouterr()
    gate = ["--baseline", base, "--fail-if-worse", METRIC, "--require-certified-judge", "--human-labels",
            files / "labels.csv"]
    code, out, err = run(capsys, "compare", files / "live.jsonl", "--agent", f"new={ECHO}", "-m", METRIC, "--judge",
                         JUDGE, "-q", *gate)
    assert code == 2
    assert err.startswith(f"levelfield compare: --fail-if-worse {METRIC} (new): the judge is not certified")
    assert "Against base" not in out                      # no gate decided
    code, out, err = run(capsys, "eval", files / "live.jsonl", "--agent", ECHO, "-m", METRIC, "--judge", JUDGE, "-q",
                         *gate, "--min-tnr", "0.35")
    assert code == 0 and f"{METRIC} (echo): no change" in out


@pytest.mark.parametrize("argv, message", [
    (["--require-certified-judge", "--human-labels", "{labels}"],
     "--require-certified-judge certifies the judge of a gated metric: give --fail-under"),
    (["--fail-under", "rouge_l_sum=0.1", "--require-certified-judge", "--human-labels", "{labels}"],
     "--require-certified-judge: no gated metric (rouge_l_sum) is scored by a judge"),
    (["--fail-under", f"{METRIC}=0.1", "--require-certified-judge"],
     "--require-certified-judge needs human labels to certify the judge: give --human-labels FILE"),
    (["--fail-under", f"{METRIC}=0.1", "--min-tpr", "0.9"], "--min-tpr: only with --require-certified-judge"),
    (["--fail-under", f"{METRIC}=0.1", "--require-certified-judge", "--human-labels", "{bad}"],
     "row 2: human_label 'maybe' is not a pass/fail label"),
])
def test_require_certified_judge_bad_options_exit_2_before_any_agent_runs(files, capsys, tmp_path, argv, message):
    bad = tmp_path / "bad.csv"
    bad.write_text("case_id,human_label\nc0,maybe\n", encoding="utf-8")
    argv = [a.format(labels=files / "labels.csv", bad=bad) for a in argv]
    code, out, err = run(capsys, "eval", files / "live.jsonl", "--agent", ECHO, "-m",
                         METRIC, "-m", "rouge_l_sum", "--judge", JUDGE, "-q", *argv)
    assert code == 2 and message in err


def test_a_judged_metric_name_with_judge_runs_on_a_jsonl_dataset_in_a_fresh_process(files):
    # The judged names (final_response_match_v2 ...) are registered when the judge package loads; --judge loads it.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "levelfield", "eval", str(files / "live.jsonl"), "--agent", ECHO, "-m",
                           METRIC, "--judge", JUDGE, "-q"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert METRIC in done.stdout


def test_judge_check_json_is_strict_json_when_a_rate_cannot_be_estimated(files, capsys, tmp_path):
    only_passes = pd.read_csv(files / "labels.csv").iloc[:20]
    only_passes.to_csv(tmp_path / "passes.csv", index=False)
    code, out, _ = run(capsys, "judge-check", files / "run", "--human-labels", tmp_path / "passes.csv", "--json")

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    (m,) = json.loads(out, parse_constant=refuse)["metrics"]
    assert code == 1 and m["specificity"] is None and m["specificity_low"] is None and m["negatives"] == 0
    assert "specificity cannot be estimated: humans failed none of the 20 labelled rows" in m["reason"]


def test_compare_reads_its_human_labels_before_any_agent_runs(files, capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("case_id,human_label\nc0,pass\nc404,fail\n", encoding="utf-8")
    out_dir = tmp_path / "never"
    code, _, err = run(capsys, "compare", files / "live.jsonl", "--agent", f"a={ECHO}", "-m", METRIC, "--judge", JUDGE,
                       "-q", "--human-labels", bad, "--out", out_dir)
    assert code == 2 and "human labels name 1 case(s) not in the dataset: c404" in err
    assert not (out_dir / "runs.jsonl").exists()
