"""What the command line promises is what it does: --version, --limit/--sample, what --out writes, plan --baseline."""

import json

import pytest

import levelfield as lf
from levelfield._core.results.record import read_record
from levelfield.cli.main import build_parser, main

SAMPLE = "samples/home_automation/dataset.jsonl"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
HASTY = "samples.home_automation.agents.function_agents:hasty_agent"
EXACT = "trajectory_exact_match"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _written(folder):
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


def _help(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    return " ".join(sub.format_help().split())


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"levelfield {lf.__version__}"


# -- --limit, --sample, --seed -----------------------------------------------------------------


def _sample_rows():
    with open(SAMPLE, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def _case_ids(folder):
    return [c.case_id for c in read_record(folder).cases]


def test_limit_runs_the_first_n_cases(tmp_path, capsys):
    code, out, _ = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "--limit", "3", "--out",
                       str(tmp_path / "r"), "-q")
    assert code == 0
    first = [row["case_id"] for row in _sample_rows()][:3]
    assert _case_ids(tmp_path / "r") == first
    assert "on 3 cases" in out and "the first 3 of 18: --limit 3" in out


def test_sample_draws_the_same_cases_for_the_same_seed(tmp_path, capsys):
    args = ["compare", SAMPLE, "-a", f"c={CAREFUL}", "-a", f"h={HASTY}", "-m", EXACT, "--sample", "5", "-q"]
    assert run(capsys, *args, "--seed", "7", "--out", str(tmp_path / "a"))[0] == 0
    assert run(capsys, *args, "--seed", "7", "--out", str(tmp_path / "b"))[0] == 0
    assert run(capsys, *args, "--seed", "8", "--out", str(tmp_path / "c"))[0] == 0
    a, b, c = (_case_ids(tmp_path / x) for x in "abc")
    assert len(a) == 5 and a == b and a != c
    order = [row["case_id"] for row in _sample_rows()]
    assert a == sorted(a, key=order.index)  # kept in dataset order


def test_sample_scores_saved_predictions_too(tmp_path, capsys):
    rows = [{"case_id": f"行{i}", "prompt": "Hallo", "reference": "Olá", "response": "Olá"} for i in range(10)]
    path = tmp_path / "saved.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval", str(path), "-m", "exact_match", "--limit", "4", "-q")
    assert code == 0 and "4 rows scored" in out


@pytest.mark.parametrize("extra, message", [
    (["--limit", "2", "--sample", "2"], "--limit and --sample both pick cases"),
    (["--seed", "3"], "--seed goes with --sample N"),
])
def test_case_options_that_contradict_are_refused(capsys, extra, message):
    code, _, err = run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "-q", *extra)
    assert code == 2 and message in err


# -- what --out writes -------------------------------------------------------------------------


def test_eval_with_an_agent_writes_what_its_help_says(tmp_path, capsys):
    assert run(capsys, "eval", SAMPLE, "--agent", CAREFUL, "-m", EXACT, "--limit", "2", "--out", str(tmp_path / "r"),
               "-q")[0] == 0
    written = _written(tmp_path / "r")
    assert {"runs.jsonl", "metrics_table.csv", "summary.json", "report.html"} <= written
    assert written <= {"runs.jsonl", "metrics_table.csv", "summary.json", "report.html", "metrics_table.parquet",
                       "summary.parquet"}
    text = _help("eval")
    assert "with --agent: journal every run to DIR/runs.jsonl" in text
    assert "metrics_table.csv, summary.json and report.html" in text


def test_eval_of_saved_predictions_writes_no_report_and_its_help_says_so(tmp_path, capsys):
    path = tmp_path / "saved.jsonl"
    path.write_text(json.dumps({"prompt": "Wie spät?", "reference": "acht", "response": "acht"}) + "\n", encoding="utf-8")
    for workers in ("1", "2"):  # one row or many, one process or two: the same files
        assert run(capsys, "eval", str(path), "-m", "exact_match", "--workers", workers, "--out",
                   str(tmp_path / workers), "-q")[0] == 0
        assert _written(tmp_path / workers) in ({"metrics_table.parquet", "summary.json"},
                                                 {"metrics_table.jsonl", "summary.json"})
    text = _help("eval")
    assert "without --agent (saved predictions, any number of rows): metrics_table.parquet" in text
    assert "no report.html" in text


# -- plan --from --baseline ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_agents(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan") / "three"
    assert main(["compare", SAMPLE, "-a", f"careful={CAREFUL}", "-a", f"hasty={HASTY}", "-a", f"again={HASTY}",
                 "-m", EXACT, "--out", str(folder), "-q"]) == 0
    return folder


def test_plan_from_a_compare_of_three_asks_for_baseline_and_agent(three_agents, capsys):
    code, _, err = run(capsys, "plan", "--from", str(three_agents), "--metric", EXACT, "--mde", "0.1")
    assert code == 2 and "--baseline AGENT" in err and "careful, hasty, again" in err
    code, _, err = run(capsys, "plan", "--from", str(three_agents), "--metric", EXACT, "--mde", "0.1",
                       "--baseline", "careful")
    assert code == 2 and "give --agent AGENT, one of: hasty, again" in err


def test_plan_from_with_baseline_and_agent_measures_that_pair(three_agents, capsys):
    code, out, _ = run(capsys, "plan", "--from", str(three_agents), "--metric", EXACT, "--mde", "0.1",
                       "--baseline", "careful", "--agent", "hasty")
    assert code == 0
    cmp = lf.Comparison.load(three_agents)
    differ = sum(a != b for a, b in zip(cmp.results["careful"].metrics_table[f"{EXACT}/score"],
                                        cmp.results["hasty"].metrics_table[f"{EXACT}/score"]))
    assert f"discordance {differ / len(cmp.dataset):.2f}" in out
    assert "levelfield plan: " in out


def test_plan_baseline_must_be_an_agent_of_the_folder(three_agents, capsys):
    code, _, err = run(capsys, "plan", "--from", str(three_agents), "--metric", EXACT, "--mde", "0.1",
                       "--baseline", "nobody", "--agent", "hasty")
    assert code == 2 and "--baseline nobody: not an agent of" in err
