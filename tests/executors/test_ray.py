"""executor="ray": the same runs and numbers as locally, on a local Ray cluster started by this module.

Function, LangGraph (driven by ScriptedChatModel) and A2A agents (a real a2a-sdk server on
127.0.0.1) run on two Ray workers; their metrics tables, summaries and comparison statistics
equal a local run's. Also: spec strings built on the workers, an agent that cannot be shipped,
a worker killed mid-run, a driver killed mid-run and resumed, Ray not installed.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from ray_agents import ExitAlways, ExitOnce, echo_cjk_agent  # noqa: E402

import levelfield as lf  # noqa: E402
from _ray_loopback import linux_only, off_loopback, on_loopback, ray_tree  # noqa: E402
from _resume import journal_runs, kill_then_resume, run_keys  # noqa: E402
from levelfield import AllRunsFailedWarning  # noqa: E402
from levelfield._core.data.types import AgentRun  # noqa: E402
from levelfield._core.results import tables as result_module  # noqa: E402
from levelfield._core.run.notices import ResumeWarning  # noqa: E402
from levelfield.adapters.a2a.server import start_server  # noqa: E402
from levelfield.executors.ray.runtime_env import _on_loopback  # noqa: E402
from levelfield.testing.ray_cluster import LOOPBACK, local_ray_options  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent  # noqa: E402

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
DATASET = str(ROOT / "samples" / "home_automation" / "dataset.jsonl")
GRAPH = "samples.home_automation.agents.langgraph_agent:make_graph"
QUIET = {"progress": False}


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """One local Ray for the module; its workers import levelfield, the samples and ray_agents.py."""
    before = os.environ.get("PYTHONPATH")
    # The raylet, and so every worker (this module's and a CLI driver's), inherits this path.
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])] + ([before] if before else []))
    try:
        ray.init(num_cpus=2, log_to_driver=False, logging_level="ERROR", **local_ray_options())  # on loopback
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def a2a_url() -> Iterator[str]:
    with start_server(careful_agent) as server:
        yield server.url


# The agents the workers import are in ray_agents.py (a light module: see its docstring).


# -- helpers -----------------------------------------------------------------------------------


def _without_latency(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if "latency" in c])


def _summary(result: lf.EvalResult) -> pd.Series:
    return pd.Series({k: v for k, v in result.summary_metrics.items() if "latency" not in k}, dtype=object)


# -- same numbers as locally -------------------------------------------------------------------


def test_evaluate_on_ray_gives_the_local_metrics_table_and_summary(cluster):
    local = lf.evaluate(DATASET, hasty_agent, trials=2, **QUIET)
    remote = lf.evaluate(DATASET, hasty_agent, trials=2, executor="ray", **QUIET)
    pd.testing.assert_frame_equal(_without_latency(remote.metrics_table), _without_latency(local.metrics_table))
    pd.testing.assert_series_equal(_summary(remote), _summary(local))


def test_compare_of_function_langgraph_and_a2a_agents_on_ray_equals_local(cluster, a2a_url):
    agents = {"function": hasty_agent, "langgraph": GRAPH, "a2a": a2a_url}
    local = lf.compare(DATASET, agents, trials=2, **QUIET)
    remote = lf.compare(DATASET, agents, trials=2, executor=lf.RayExecutor(num_workers=2), **QUIET)
    for name in agents:
        table = _without_latency(remote.results[name].metrics_table)
        pd.testing.assert_frame_equal(table, _without_latency(local.results[name].metrics_table))
        assert not remote.results[name].metrics_table["failure"].any(), name
    pd.testing.assert_frame_equal(_without_latency(remote.summary), _without_latency(local.summary))
    for metric in ("trajectory_exact_match", "rouge_l_sum"):
        pd.testing.assert_frame_equal(remote.pairwise(metric), local.pairwise(metric))


def test_eval_task_takes_a_ray_executor_in_its_config(cluster):
    task = lf.EvalTask(DATASET, ["trajectory_exact_match"], config=lf.RunConfig(executor=lf.RayExecutor(num_workers=1)))
    remote = task.evaluate(runnable=careful_agent, progress=False)
    assert remote.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert remote.config.executor == lf.RayExecutor(num_workers=1)


def test_a_spec_string_agent_is_built_on_the_workers(cluster):
    result = lf.evaluate(DATASET, "ray_agents:make_pid_agent", metrics=[], executor="ray", **QUIET)
    answers = [run.output.response.split() for run in result.runs]
    built = {int(words[1]) for words in answers}
    ran = {int(words[3]) for words in answers}
    assert built == ran  # each worker built its own agent and ran it
    assert os.getpid() not in ran


# -- what cannot run, and what dies ------------------------------------------------------------


def test_an_agent_that_cannot_be_shipped_fails_before_any_run_and_leaves_no_journal(cluster, tmp_path):
    lock = threading.Lock()

    def locked_agent(prompt: str) -> str:
        with lock:
            return "ok"

    with pytest.raises(lf.ConfigError, match=r"agent 'locked_agent'.*cannot be sent to Ray workers.*spec string"):
        lf.evaluate(DATASET, locked_agent, executor="ray", out=tmp_path / "out", **QUIET)
    assert not (tmp_path / "out" / "runs.jsonl").exists()


def test_executor_ray_without_ray_installed_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(lf.MissingExtraError, match=r"levelfield\[ray\]"):
        lf.evaluate(DATASET, careful_agent, executor="ray", out=tmp_path / "out", **QUIET)
    assert not (tmp_path / "out" / "runs.jsonl").exists()


def test_an_unknown_executor_name_is_a_config_error():
    with pytest.raises(lf.ConfigError, match=r"executor='spark'.*'local'.*'ray'"):
        lf.RunConfig(executor="spark")


def test_cli_ray_address_without_executor_ray_is_a_usage_error(capsys):
    from levelfield.cli.main import main

    code = main(["eval", DATASET, "--agent", "samples.home_automation.agents.function_agents:careful_agent",
                 "--ray-address", "auto", "-q"])
    assert code == 2 and "--ray-address needs --executor ray" in capsys.readouterr().err


def test_a_worker_killed_mid_run_has_its_runs_rerun_and_none_counted_twice(cluster, tmp_path):
    marker = tmp_path / "exited"
    out = tmp_path / "out"
    result = lf.evaluate(DATASET, ExitOnce(str(marker)), executor="ray", out=out, **QUIET)
    assert marker.exists()  # a worker did die mid-run
    keys = run_keys(journal_runs(out))
    assert len(keys) == len(set(keys)) == 18
    assert not result.metrics_table["failure"].any()
    local = lf.evaluate(DATASET, careful_agent, name=result.agent_name, **QUIET)
    pd.testing.assert_frame_equal(_without_latency(result.metrics_table), _without_latency(local.metrics_table))


def test_a_run_that_kills_its_worker_every_time_is_one_failed_run(cluster):
    result = lf.evaluate(DATASET, ExitAlways(), executor=lf.RayExecutor(max_retries=0), **QUIET)
    failed = result.metrics_table[result.metrics_table["failure"].astype(bool)]
    assert list(failed["case_id"]) == ["turn_off_device_2"]
    assert [r.error_type for r in result.runs if r.failure] == ["worker_died"]


def test_resume_after_the_driver_is_killed_runs_only_what_the_journal_lacks(cluster, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])])}
    command = [sys.executable, "-m", "levelfield", "eval", DATASET, "--agent", "ray_agents:slow_careful_agent",
               "--name", "slow", "--trials", "3", "--executor", "ray", "--ray-address", cluster, "--out", str(out), "-q"]
    kill_then_resume(command, env, out, journaled=8, total=54)


# -- on loopback (issue #41) -------------------------------------------------------------------


@linux_only
def test_the_modules_ray_and_its_workers_are_on_loopback(cluster):
    lf.evaluate(DATASET, hasty_agent, executor="ray", **QUIET)  # its workers started
    assert on_loopback(cluster)
    assert [node["NodeManagerAddress"] for node in ray.nodes()] == [LOOPBACK]
    assert off_loopback(ray_tree(os.getpid())) == []  # no process names, nor listens on, another address


@linux_only
def test_a_ray_that_executor_ray_starts_itself_is_on_loopback(tmp_path):
    """No address, no RAY_ADDRESS, no cluster ``ray start`` left here: levelfield starts Ray, on loopback."""
    import shutil
    import subprocess
    import tempfile

    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import json, os
        import ray
        import levelfield as lf
        from _ray_loopback import off_loopback, ray_tree
        result = lf.evaluate({DATASET!r}, "samples.home_automation.agents.function_agents:careful_agent",
                             executor="ray", progress=False)
        print(json.dumps({{"runs": len(result.runs), "nodes": [n["NodeManagerAddress"] for n in ray.nodes()],
                          "gcs": ray.get_runtime_context().gcs_address, "off": off_loopback(ray_tree(os.getpid()))}}))
    """), encoding="utf-8")
    ray_tmp = tempfile.mkdtemp(prefix="lfr-", dir="/tmp")  # short (socket paths), and no `ray start` of this machine
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(RAY_TMPDIR=ray_tmp, PYTHONPATH=os.pathsep.join([str(ROOT), str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])]))
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["runs"] == 18
    assert seen["nodes"] == [LOOPBACK] and on_loopback(seen["gcs"])
    assert seen["off"] == []


@linux_only
def test_a_ray_given_an_address_is_joined_as_ray_would_with_no_loopback_address_of_ours(monkeypatch):
    assert _on_loopback("auto") == _on_loopback("10.0.0.5:6379") == _on_loopback("ray://10.0.0.5:10001") == {}
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert _on_loopback(None) == {}  # ray.init joins RAY_ADDRESS
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setenv("RAY_TMPDIR", "/nonexistent-lf")  # no cluster recorded: ray.init starts one, on loopback
    assert _on_loopback(None) == {"_node_ip_address": LOOPBACK}


# -- saved predictions on Ray Data -------------------------------------------------------------

SAVED_METRICS = ["trajectory_exact_match", "trajectory_recall", "rouge_l_sum", "bleu", "exact_match"]


def _saved_rows() -> list[dict[str, Any]]:
    """hasty_agent's answers to the sample dataset, one failed run, and non-Latin rows without an id."""
    run = lf.evaluate(DATASET, hasty_agent, metrics=[], **QUIET)
    rows = []
    for case, agent_run in zip(run.dataset, run.runs):
        calls = lambda cs: [{"tool_name": c.tool_name, "tool_input": c.tool_input} for c in cs or []]  # noqa: E731
        rows.append({"case_id": case.case_id, "prompt": case.prompt, "reference": case.reference,
                     "reference_trajectory": calls(case.reference_trajectory), "response": agent_run.output.response,
                     "predicted_trajectory": calls(agent_run.output.trajectory), "failure": False})
    rows[3]["failure"] = True
    rows += [
        {"prompt": "北京的天气怎么样？", "reference": "北京今天晴天。", "response": "北京今天晴天，很暖和。"},
        {"prompt": "Wie spät ist es?", "reference": "Es ist fünf Uhr.", "response": "Es ist fünf Uhr."},
        {"prompt": "Que horas são?", "reference": "São cinco horas.", "response": "São seis horas."},
    ]
    return rows


@pytest.fixture(scope="module")
def saved_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("saved")
    rows = _saved_rows()
    jsonl = folder / "saved.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    parquet = folder / "saved.parquet"
    frame = pd.DataFrame(rows)
    for column in ("reference_trajectory", "predicted_trajectory"):  # cells as JSON text, as Vertex saves them
        frame[column] = frame[column].map(lambda calls: json.dumps(calls) if isinstance(calls, list) else None)
    frame.to_parquet(parquet, index=False)
    return {"jsonl": jsonl, "parquet": parquet}


def _scored_locally(path: Path) -> lf.EvalResult:
    from levelfield._core.score.metrics.registry import resolve_metrics
    from levelfield.executors.saved import score_saved_rows

    return score_saved_rows(path, resolve_metrics(SAVED_METRICS), lf.RunConfig(progress=False))


def test_a_saved_jsonl_file_scored_on_ray_data_equals_the_local_columnar_path(cluster, saved_files):
    remote = lf.evaluate(saved_files["jsonl"], metrics=SAVED_METRICS, executor="ray", **QUIET)
    local = _scored_locally(saved_files["jsonl"])
    pd.testing.assert_frame_equal(remote.metrics_table, local.metrics_table)
    assert remote.metrics_table["case_id"].tolist()[-3:] == ["18", "19", "20"]  # rows without an id: numbered by position
    pd.testing.assert_series_equal(pd.Series(remote.summary_metrics), pd.Series(local.summary_metrics))


def test_aevaluate_scores_a_saved_file_on_ray_data_too(cluster, saved_files):
    import asyncio

    remote = asyncio.run(lf.aevaluate(saved_files["jsonl"], metrics=SAVED_METRICS, executor="ray", **QUIET))
    local = _scored_locally(saved_files["jsonl"])
    pd.testing.assert_frame_equal(remote.metrics_table, local.metrics_table)


def test_a_saved_parquet_file_scored_on_ray_data_writes_the_local_table_and_summary(cluster, saved_files, tmp_path):
    remote = lf.evaluate(saved_files["parquet"], metrics=SAVED_METRICS, executor="ray", out=tmp_path / "out", **QUIET)
    local = _scored_locally(saved_files["parquet"])
    written = pd.read_parquet(tmp_path / "out" / "metrics_table.parquet")
    pd.testing.assert_frame_equal(written, local.metrics_table)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["row_count"] == 21 and summary["failure/count"] == 1
    pd.testing.assert_series_equal(pd.Series(remote.summary_metrics), pd.Series(local.summary_metrics))


def test_a_bad_row_on_ray_data_raises_the_dataset_error_naming_it(cluster, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "ok", "predicted_trajectory": "not calls"}\n', encoding="utf-8")
    with pytest.raises(lf.DatasetError, match=r"bad.jsonl.*predicted_trajectory"):
        lf.evaluate(bad, metrics=["trajectory_exact_match"], executor="ray", **QUIET)


def test_a_journal_that_cannot_be_written_stops_a_ray_evaluation_naming_the_file(cluster, tmp_path, unwritable_journal):
    with pytest.raises(lf.RecordError, match=r"runs.jsonl: cannot write the journal .*No space left"):
        lf.evaluate(DATASET, hasty_agent, executor="ray", out=tmp_path, **QUIET)


# -- runs streamed to the journal, not held by the driver ---------------------------------------

CJK = [
    {"case_id": f"zh-{i}", "prompt": f"把第{i}个设备关掉，谢谢", "reference": f"好的：第{i}个设备已关闭"}
    for i in range(6)
] + [{"case_id": "ja-0", "prompt": "ライトを消して", "reference": "ライトを消しました"}]


def _live_runs() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is AgentRun)


@pytest.mark.parametrize("page", [None, 5], ids=["one-page", "pages-of-5"])
def test_evaluate_on_ray_with_out_holds_no_run_and_saves_what_a_local_run_saves(cluster, tmp_path, monkeypatch, page,
                                                                                 fresh_heap):
    if page is not None:
        monkeypatch.setattr(result_module, "TABLE_PAGE", page)  # 36 runs: 8 pages, the tables' columns learnt first
    metrics = ["trajectory_exact_match", "trajectory_recall", "exact_match", "rouge_l_sum"]
    local = lf.evaluate(DATASET, hasty_agent, metrics, trials=2, out=tmp_path / "local", **QUIET)
    del local
    gc.collect()
    before = _live_runs()
    remote = lf.evaluate(DATASET, hasty_agent, metrics, trials=2, executor="ray", out=tmp_path / "ray", **QUIET)
    gc.collect()
    assert remote.streamed
    assert _live_runs() == before  # the 36 runs are on disk only
    for name in ("metrics_table.csv", "metrics_table.parquet"):
        read = pd.read_csv if name.endswith("csv") else pd.read_parquet
        pd.testing.assert_frame_equal(_without_latency(read(tmp_path / "ray" / name)),
                                      _without_latency(read(tmp_path / "local" / name)))
    saved = lf.EvalResult.load(tmp_path / "local")
    pd.testing.assert_series_equal(_summary(remote), _summary(saved))
    assert json.loads((tmp_path / "ray" / "runs.jsonl").read_text().splitlines()[0])["status"] == "complete"
    assert remote.explain("turn_off_device_2") == saved.explain("turn_off_device_2")
    pd.testing.assert_series_equal(_summary(lf.EvalResult.load(tmp_path / "ray")), _summary(saved))
    # Asked for, the runs are read back: the same runs, in table order.
    assert [(r.case_id, r.trial, r.output.response) for r in remote.runs] == \
        [(r.case_id, r.trial, r.output.response) for r in saved.runs]
    assert not remote.streamed


def test_compare_on_ray_with_out_gives_the_local_summary_verdict_and_table(cluster, tmp_path):
    agents = {"careful": careful_agent, "hasty": hasty_agent}
    local = lf.compare(DATASET, agents, trials=2, out=tmp_path / "local", **QUIET)
    remote = lf.compare(DATASET, agents, trials=2, executor="ray", out=tmp_path / "ray", **QUIET)
    pd.testing.assert_frame_equal(_without_latency(remote.summary), _without_latency(local.summary))
    assert str(remote.verdict()) == str(local.verdict())
    # The report and the verdict's reasons read the runs back a page of cases at a time; none is kept.
    assert all(result.streamed for result in remote.results.values())
    for case_id in ("turn_off_device_2", json.loads(Path(DATASET).read_text().splitlines()[-1])["case_id"]):
        assert _views(remote.case_view(case_id)) == _views(local.case_view(case_id))
    pd.testing.assert_frame_equal(_without_latency(pd.read_csv(tmp_path / "ray" / "metrics_table.csv")),
                                  _without_latency(pd.read_csv(tmp_path / "local" / "metrics_table.csv")))
    loaded = lf.Comparison.load(tmp_path / "ray")
    assert loaded.complete and not loaded.missing_runs
    pd.testing.assert_frame_equal(_without_latency(loaded.summary), _without_latency(local.summary))


def test_chinese_and_japanese_runs_are_read_back_from_the_journal_exactly(cluster, tmp_path):
    metrics = ["exact_match", "rouge_l_sum", "bleu"]
    local = lf.evaluate(CJK, echo_cjk_agent, metrics, name="echo", **QUIET)
    remote = lf.evaluate(CJK, "ray_agents:echo_cjk_agent", metrics, name="echo", executor="ray", out=tmp_path, **QUIET)
    assert remote.streamed
    assert [r.case_id for r in remote.failures] == []
    assert remote.summary_metrics["exact_match/mean"] == pytest.approx(6 / 7)
    pd.testing.assert_series_equal(_summary(remote), _summary(local))
    assert [r.output.response for r in remote.runs] == [r.output.response for r in local.runs]
    table = pd.read_csv(tmp_path / "metrics_table.csv")
    assert table.loc[table["case_id"] == "zh-2", "response"].item() == "没有这个设备"


def test_a_journal_changed_under_a_streamed_result_is_an_error_naming_it(cluster, tmp_path):
    result = lf.evaluate(CJK, "ray_agents:echo_cjk_agent", ["exact_match"], executor="ray", out=tmp_path, **QUIET)
    journal = tmp_path / "runs.jsonl"
    journal.write_text(journal.read_text(encoding="utf-8")[:200], encoding="utf-8")
    with pytest.raises(lf.RecordError, match=r"runs\.jsonl at byte \d+"):
        _ = result.runs


def test_resume_on_ray_with_other_metrics_scores_every_run_again(cluster, tmp_path):
    lf.evaluate(DATASET, hasty_agent, ["exact_match"], executor="ray", out=tmp_path, **QUIET)
    lines = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "runs.jsonl").write_text("".join(lines[:-5]), encoding="utf-8")  # 5 runs lost with the driver
    with pytest.warns(ResumeWarning, match="metrics differ"):
        resumed = lf.evaluate(DATASET, hasty_agent, ["exact_match", "trajectory_recall"], executor="ray", out=tmp_path,
                              resume=True, **QUIET)
    local = lf.evaluate(DATASET, hasty_agent, ["exact_match", "trajectory_recall"], **QUIET)
    pd.testing.assert_series_equal(_summary(resumed), _summary(local))
    saved = pd.read_csv(tmp_path / "metrics_table.csv")
    assert saved["trajectory_recall/score"].notna().all() and len(saved) == 18


def test_resume_on_ray_with_the_same_metrics_streams_the_earlier_runs_from_the_journal(cluster, tmp_path):
    lf.evaluate(DATASET, hasty_agent, ["exact_match", "trajectory_recall"], trials=2, executor="ray", out=tmp_path, **QUIET)
    lines = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "runs.jsonl").write_text("".join(lines[:-7]), encoding="utf-8")
    resumed = lf.evaluate(DATASET, hasty_agent, ["exact_match", "trajectory_recall"], trials=2, executor="ray",
                          out=tmp_path, resume=True, **QUIET)
    assert resumed.streamed
    local = lf.evaluate(DATASET, hasty_agent, ["exact_match", "trajectory_recall"], trials=2, **QUIET)
    pd.testing.assert_series_equal(_summary(resumed), _summary(local))
    keys = run_keys(journal_runs(tmp_path))
    assert len(keys) == len(set(keys)) == 36
    pd.testing.assert_frame_equal(_without_latency(pd.read_csv(tmp_path / "metrics_table.csv")),
                                  _without_latency(_as_csv(local.with_explanations(), tmp_path / "local.csv")))


def _views(view: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {agent: [(e.trial, e.response, [c.status for c in e.calls], e.scores, e.failure) for e in entries]
            for agent, entries in view.runs.items()}


def _as_csv(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    from levelfield._core.results.tables import table_to_csv

    table_to_csv(table, path)
    return pd.read_csv(path)


def test_an_agent_failing_every_streamed_run_is_told_with_its_error_and_every_run_is_kept(cluster, tmp_path):
    with pytest.warns(AllRunsFailedWarning, match=r"every run of agent 'broken' failed \(36 runs\); most often "
                                                      r"RuntimeError x36, e\.g\. case .*kaputt, 坏了"):
        result = lf.evaluate(DATASET, "ray_agents:broken_agent", ["exact_match"], name="broken", trials=2,
                             executor="ray", out=tmp_path, retries=0, **QUIET)
    assert result.summary_metrics["failure/count"] == 36 and result.summary_metrics["exact_match/nan_count"] == 36
    assert result.streamed  # the failed runs were read back for the warning, the rest of the record was not
    assert {r.error_type for r in result.failures} == {"RuntimeError"}
    assert len(run_keys(journal_runs(tmp_path))) == 36
