"""experiment=: each agent's run logged to MLflow tracking, read back with MLflow's own API from a local store."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.cli.main import main

mlflow = pytest.importorskip("mlflow", reason="experiment logging needs the mlflow extra: pip install 'levelfield[mlflow]'")
pytestmark = pytest.mark.slow  # a local MLflow store per test: 20 s of the suite's time in one process

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "samples" / "home_automation" / "dataset.jsonl")
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
HASTY = "samples.home_automation.agents.function_agents:hasty_agent"
METRICS = ["trajectory_exact_match", "rouge_l_sum"]


@pytest.fixture(scope="module", autouse=True)
def store(tmp_path_factory):
    """One local SQLite tracking store for the module, chosen the way users do: MLFLOW_TRACKING_URI."""
    folder = tmp_path_factory.mktemp("mlflow")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{folder / 'mlflow.db'}")
        # MLflow puts artifacts in ./mlruns of the directory the store was opened in: not the repository.
        mp.chdir(folder)
        mp.syspath_prepend(str(ROOT))
        yield folder


def runs_of(experiment):
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} was created"
    return client.search_runs([exp.experiment_id], order_by=["attributes.run_name"])


def artifact_names(run):
    return sorted(a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id))


@pytest.fixture(scope="module")
def evaluated():
    lf.evaluate(SAMPLE, CAREFUL, metrics=METRICS, progress=False, experiment="lf-evaluate")
    (run,) = runs_of("lf-evaluate")
    return run


def test_evaluate_logs_params_naming_agent_dataset_metrics_and_trials(evaluated):
    p = evaluated.data.params
    assert p["agent"] == "careful_agent" and p["dataset"].endswith("dataset.jsonl")
    assert p["metrics"] == ",".join(METRICS) and p["trials"] == "1" and p["cases"] == "18"


def test_evaluate_logs_means_and_intervals(evaluated):
    m = evaluated.data.metrics
    assert m["trajectory_exact_match/mean"] == 1.0
    assert 0.7 < m["trajectory_exact_match/ci_low"] < 1.0 and m["trajectory_exact_match/ci_high"] == 1.0
    assert m["failures"] == 0 and "rouge_l_sum/std" in m


def crashes_on_the_bedroom(prompt):
    if "Bedroom" in prompt:
        raise RuntimeError("Schlafzimmer nicht erreichbar")
    from samples.home_automation.agents.function_agents import careful_agent

    return careful_agent(prompt)


def test_evaluate_logs_both_means_of_its_rule_for_failed_runs():
    result = lf.evaluate(SAMPLE, crashes_on_the_bedroom, metrics=METRICS, progress=False, experiment="lf-failed")
    (run,) = runs_of("lf-failed")
    logged, summary = run.data.metrics, result.summary_metrics
    assert run.data.params["failed_runs"] == "exclude" and logged["failures"] == 4
    assert logged["trajectory_exact_match/mean"] == summary["trajectory_exact_match/mean"] == 1.0
    assert logged["trajectory_exact_match/mean_failed_as_zero"] == pytest.approx(
        summary["trajectory_exact_match/mean_failed_as_zero"]) == pytest.approx(14 / 18)


def test_evaluate_logs_the_metrics_table_and_the_report_as_artifacts(evaluated):
    assert artifact_names(evaluated) == ["metrics_table.csv", "report.html"]
    local = mlflow.artifacts.download_artifacts(run_id=evaluated.info.run_id, artifact_path="metrics_table.csv")
    with open(local, encoding="utf-8") as f:
        assert sum(1 for _ in f) == 19  # header + 18 cases


def test_evaluate_run_is_finished_and_named_after_the_agent(evaluated):
    assert evaluated.info.status == "FINISHED" and evaluated.info.run_name == "careful_agent"


def test_compare_logs_one_run_per_agent_of_one_comparison():
    lf.compare(SAMPLE, {"careful": CAREFUL, "hasty": HASTY}, METRICS, trials=2, progress=False, experiment="lf-compare")
    runs = runs_of("lf-compare")
    assert [r.info.run_name for r in runs] == ["careful", "hasty"]
    assert len({r.data.tags["levelfield.comparison"] for r in runs}) == 1
    hasty = runs[1].data.metrics
    assert hasty["trajectory_exact_match/pass_at_2"] == pytest.approx(10 / 18)
    assert "significantly better than hasty" in runs[0].data.tags["mlflow.note.content"]


def test_eval_task_logs_to_its_experiment_under_the_run_name():
    task = lf.EvalTask(dataset=SAMPLE, metrics=["trajectory_exact_match"], experiment="lf-evaltask")
    task.evaluate(runnable=CAREFUL, experiment_run_name="run-1", progress=False)
    (run,) = runs_of("lf-evaltask")
    assert run.info.run_name == "run-1" and run.data.metrics["trajectory_exact_match/mean"] == 1.0


def test_cli_experiment_option_logs_each_agent(capsys):
    code = main(["compare", SAMPLE, "--agent", f"careful={CAREFUL}", "--agent", f"hasty={HASTY}",
                 "-m", "trajectory_exact_match", "-q", "--experiment", "lf-cli"])
    capsys.readouterr()
    assert code == 0
    assert [r.info.run_name for r in runs_of("lf-cli")] == ["careful", "hasty"]


def fails_every_third(prompt: str) -> str:
    """An agent whose runs fail on a third of the cases (by the prompt's length), for --failed-runs."""
    if len(prompt) % 3 == 0:
        raise RuntimeError("down")
    return "ok"


@pytest.mark.parametrize("rule", ["zero", "exclude"])
def test_cli_eval_logs_the_means_it_prints_whatever_the_failed_runs_rule(capsys, tmp_path, rule):
    code = main(["eval", SAMPLE, "--agent", "test_experiment:fails_every_third", "--name", "flaky", "-m",
                 "trajectory_exact_match", "--failed-runs", rule, "-q", "--experiment", f"lf-eval-{rule}",
                 "--allow-failures", "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert code == 0
    (run,) = runs_of(f"lf-eval-{rule}")
    logged = run.data.metrics["trajectory_exact_match/mean"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["failed_runs"] == rule
    assert logged == pytest.approx(summary["summary"]["flaky"]["trajectory_exact_match/mean"])


def test_missing_mlflow_fails_before_any_agent_runs(monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what an uninstalled package looks like to import
    with pytest.raises(lf.MissingExtraError, match=r"levelfield\[mlflow\]"):
        lf.evaluate(SAMPLE, lambda p: calls.append(p) or "x", metrics=["exact_match"], progress=False, experiment="x")
    assert calls == []


def test_empty_experiment_name_is_a_config_error():
    with pytest.raises(lf.ConfigError, match="experiment=''"):
        lf.evaluate(SAMPLE, CAREFUL, metrics=["exact_match"], progress=False, experiment="")


def test_a_store_that_refuses_the_run_warns_and_the_result_is_kept(monkeypatch, tmp_path):
    (tmp_path / "a_file").write_text("not a directory")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/a_file/mlflow.db")
    with pytest.warns(RuntimeWarning, match="could not log to MLflow experiment 'lf-refused'"):
        result = lf.evaluate(SAMPLE, CAREFUL, metrics=["exact_match"], progress=False, experiment="lf-refused")
    assert len(result.runs) == 18


def test_without_a_tracking_uri_runs_go_to_the_local_store_in_the_current_directory(tmp_path):
    # A fresh interpreter: MLflow caches stores by URI, and the default URI is relative.
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    code = (
        "import levelfield as lf, mlflow\n"
        f"lf.evaluate({SAMPLE!r}, lambda p: 'ok', metrics=['exact_match'], progress=False, experiment='local')\n"
        "exp = mlflow.MlflowClient().get_experiment_by_name('local')\n"
        "print(len(mlflow.MlflowClient().search_runs([exp.experiment_id])))\n"
    )
    with warnings.catch_warnings():
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "1"
    assert (tmp_path / "mlflow.db").exists() and (tmp_path / "mlruns").is_dir()


def test_compare_logs_cost_per_agent_and_names_the_model_without_a_price():
    def spender(model):
        return lambda prompt: {"response": "ok", "usage": {"input_tokens": 1000, "output_tokens": 500, "model": model}}

    rows = [{"case_id": f"c{i}", "prompt": f"问题 {i}", "reference": "ok"} for i in range(6)]
    lf.compare(rows, {"priced": spender("mine"), "unpriced": spender("house-model-7")}, ["exact_match"], progress=False,
               prices={"mine": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}, experiment="lf-cost")
    priced, unpriced = runs_of("lf-cost")
    assert priced.data.metrics["cost_usd/mean"] == pytest.approx(0.002)
    assert priced.data.metrics["cost_usd/sum"] == pytest.approx(0.012)
    assert "cost_usd/mean" not in unpriced.data.metrics  # unknown is not logged as a number, least of all 0
    assert "house-model-7" in unpriced.data.tags["levelfield.cost_note"]
