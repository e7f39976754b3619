"""One rule for failed runs, stated once, the same number in Python, the CLI, the report and MLflow.

``evaluate`` leaves a failed run out (NaN, counted); ``compare`` counts it as 0 by default. Each
output says which rule its means follow and gives the mean by the other rule too.
"""

import json
import textwrap

import pytest

import levelfield as lf
from levelfield.cli import main
from levelfield.report import render as render_report

EXACT = "trajectory_exact_match"
# Twelve cases in four languages; the agent crashes on the three Japanese ones.
TEXTS = ["打开灯", "電気をつけて", "Mach das Licht an", "Acenda a luz"] * 3
CASES = [
    {"case_id": f"c{i}", "prompt": t, "reference": "ok",
     "reference_trajectory": [{"tool_name": "switch", "tool_input": {"room": t}}]}
    for i, t in enumerate(TEXTS)
]
AGENT_SOURCE = """
    def crashes_on_japanese(prompt):
        if prompt == "電気をつけて":
            raise RuntimeError("ライトが見つかりません")
        return {"response": "ok", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"room": prompt}}]}
"""


@pytest.fixture
def agent_module(tmp_path, monkeypatch):
    (tmp_path / "rule_agents.py").write_text(textwrap.dedent(AGENT_SOURCE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.invalidate_caches()
    return "rule_agents"


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), encoding="utf-8")
    return str(path)


def crashes_on_japanese(prompt):
    if prompt == "電気をつけて":
        raise RuntimeError("ライトが見つかりません")
    return {"response": "ok", "predicted_trajectory": [{"tool_name": "switch", "tool_input": {"room": prompt}}]}


def test_evaluate_leaves_failed_runs_out_and_gives_the_mean_with_them_as_zero():
    summary = lf.evaluate(CASES, crashes_on_japanese, metrics=[EXACT], progress=False).summary_metrics
    assert summary[f"{EXACT}/mean"] == 1.0 and summary[f"{EXACT}/nan_count"] == 3
    assert summary[f"{EXACT}/mean_failed_as_zero"] == pytest.approx(9 / 12)


def test_compare_counts_failed_runs_as_zero_and_gives_the_mean_with_them_left_out():
    row = lf.compare(CASES, {"a": crashes_on_japanese}, [EXACT], progress=False).summary.loc["a"]
    assert row[f"{EXACT}/mean"] == pytest.approx(9 / 12)
    assert row[f"{EXACT}/mean_failed_left_out"] == 1.0


def test_compare_with_failures_left_out_gives_the_mean_with_them_as_zero():
    cmp = lf.compare(CASES, {"a": crashes_on_japanese}, [EXACT], stats=lf.StatsConfig(failed_runs="exclude"),
                     progress=False)
    assert cmp.summary.loc["a", f"{EXACT}/mean"] == 1.0
    assert cmp.summary.loc["a", f"{EXACT}/mean_failed_as_zero"] == pytest.approx(9 / 12)


def test_cli_eval_prints_the_mean_evaluate_gives_and_says_the_rule_once(agent_module, dataset, capsys):
    expected = lf.evaluate(dataset, f"{agent_module}:crashes_on_japanese", metrics=[EXACT], progress=False).summary_metrics
    code = main(["eval", dataset, "--agent", f"{agent_module}:crashes_on_japanese", "-m", EXACT, "-q"])
    out = capsys.readouterr().out
    assert code == 0
    (mean_line,) = [line for line in out.splitlines() if line.startswith(EXACT)]
    assert mean_line.split()[1] == f"{expected[f'{EXACT}/mean']:.3f}" == "1.000"
    (other_line,) = [line for line in out.splitlines() if line.strip().startswith("failed runs as 0")]
    assert other_line.split()[-1] == f"{expected[f'{EXACT}/mean_failed_as_zero']:.3f}" == "0.750"
    assert out.count("failed runs are left out: 3 of 12 runs failed") == 1


def test_cli_compare_counts_failed_runs_as_zero_as_compare_does(agent_module, dataset, capsys):
    code = main(["compare", dataset, "--agent", f"a={agent_module}:crashes_on_japanese", "-m", EXACT, "-q"])
    out = capsys.readouterr().out
    assert code == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith(EXACT)] == ["0.750"]
    assert "failed runs count as 0: 3 of 12 runs failed" in out
    assert [line.split()[-1] for line in out.splitlines() if line.strip().startswith("failed runs left out")] == ["1.000"]


def test_report_states_the_rule_and_shows_the_other_mean():
    page = render_report(lf.compare(CASES, {"a": crashes_on_japanese}, [EXACT], progress=False))
    assert "failed runs count as 0" in page
    assert '<span class="sub">failed runs left out</span>' in page and '<span class="ci">1.000</span>' in page


def test_nothing_failed_shows_one_mean_and_says_no_run_failed():
    def fine(prompt):
        return crashes_on_japanese("x" + prompt) | {"predicted_trajectory": [{"tool_name": "switch", "tool_input": {"room": prompt}}]}

    text = str(lf.compare(CASES, {"a": fine}, [EXACT], progress=False))
    assert "failed runs count as 0: no run failed" in text and "failed runs left out" not in text
