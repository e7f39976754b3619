"""executor="ray" on a real two-node Ray cluster that this module starts with `ray start` (token auth on).

One head and one more node on this machine (`levelfield.testing.ray_cluster`), each with its own
temp dir and ports, every process ended by PID at teardown. Checks: every run is recorded once and
every node starts a worker (not which node ran which run: the scheduler's choice); the numbers
equal a local run's; a node SIGKILLed half way loses no run and the call returns;
a node lost with no other node left stops with an ExecutorError and a journal that resumes;
`--resume` after the driver is killed; runtime_env shipping code (working_dir at the job level,
py_modules for a process already connected, the user's own ray.init runtime_env kept); a bad
runtime_env is a ConfigError with no journal; no blocking ray.get in the async workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from ray_agents import slowish_careful_agent, where_agent  # noqa: E402

import levelfield as lf  # noqa: E402
from _ray_loopback import linux_only, off_loopback, on_loopback, ray_tree  # noqa: E402
from _resume import journal_runs, kill_then_resume, run_keys  # noqa: E402
from levelfield.testing.ray_cluster import LocalRayCluster, RayNode, token_auth_here  # noqa: E402
from samples.home_automation.agents.function_agents import careful_agent, hasty_agent  # noqa: E402

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
DATASET = str(ROOT / "samples" / "home_automation" / "dataset.jsonl")
QUIET = {"progress": False}
HEARTBEAT = 3.0  # seconds: a lost node's runs go elsewhere soon, so the tests stay short
WORKERS_PATH = os.pathsep.join([str(ROOT), str(Path(__file__).parent), str(Path(__file__).resolve().parents[1])])  # the nodes have levelfield installed


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    """A head and a second node (1 CPU each); this process is the driver, connected with the token."""
    before = os.environ.get("RAY_AUTH_MODE")
    token_auth_here()
    nodes = LocalRayCluster(cpus_per_node=1, env={"PYTHONPATH": WORKERS_PATH})
    try:
        nodes.start()
        nodes.add_node()
        yield nodes
    finally:
        ray.shutdown()
        nodes.stop()
        token_auth_here(before == "token")


def on(cluster: LocalRayCluster, **settings: Any) -> lf.RayExecutor:
    return lf.RayExecutor(address=cluster.address, heartbeat=HEARTBEAT, **settings)


# The agents the workers import are in ray_agents.py (a light module: see its docstring).


# -- helpers -----------------------------------------------------------------------------------


def _without_latency(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in frame.columns if "latency" in c])


def _kill_when_journaled(cluster: LocalRayCluster, node: RayNode, out: Path, runs: int) -> threading.Thread:
    """SIGKILL every process of ``node`` once the journal holds ``runs`` runs (half way through)."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(journal_runs(out)) < runs:
            time.sleep(0.05)
        cluster.kill(node)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _worker_logs(cluster: LocalRayCluster) -> str:
    texts = []
    for path in cluster.root.glob("*/session_*/logs/worker-*"):
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


# -- same runs and numbers as locally, on both nodes -------------------------------------------


def _connected(cluster: LocalRayCluster) -> None:
    """This process is a driver of the module's cluster (not of a Ray started here on its own)."""
    if ray.is_initialized() and ray.get_runtime_context().gcs_address != cluster.address:
        ray.shutdown()
    if not ray.is_initialized():
        ray.init(address=cluster.address)


def _worker_actors() -> dict[str, str]:
    """Every worker actor the cluster has started (alive or ended): actor id -> the node it was placed on,
    from the GCS's actor table (the state API needs the dashboard, which these nodes run without)."""
    from ray._private import state

    return {actor_id: actor["Address"]["NodeID"] for actor_id, actor in state.actors().items()
            if actor["ActorClassName"].endswith("_Worker")}


def test_every_run_is_recorded_once_and_every_node_starts_a_worker(cluster):
    # What executor="ray" promises: one worker a CPU (one a node here), and each run recorded once.
    # Which worker ran which run is the scheduler's choice, not asserted: the first worker up may take them all.
    _connected(cluster)
    before = _worker_actors()
    result = lf.evaluate(DATASET, hasty_agent, metrics=[], trials=2, executor=on(cluster), **QUIET)
    keys = [(run.case_id, run.trial) for run in result.runs]
    assert len(keys) == len(set(keys)) == 2 * len(lf.load_dataset(DATASET))
    started = {node for actor, node in _worker_actors().items() if actor not in before}
    assert {node.node_id for node in cluster.nodes if not node.killed} <= started


@linux_only
def test_every_node_and_process_of_the_cluster_is_on_loopback(cluster):
    """Issue #41: the head's address, the GCS, every node, and what every process of the cluster and of this
    driver names on its command line or listens on, is inside 127.0.0.0/8."""
    assert on_loopback(cluster.address)
    _connected(cluster)
    lf.evaluate(DATASET, where_agent, metrics=[], executor=on(cluster), **QUIET)  # workers up on both nodes
    assert on_loopback(ray.get_runtime_context().gcs_address)
    nodes = ray.nodes()
    assert len([n for n in nodes if n["Alive"]]) >= 2
    assert all(on_loopback(node["NodeManagerAddress"]) for node in nodes), nodes
    pids = set(ray_tree(os.getpid())) | {pid for node in cluster.nodes if not node.killed for pid in node.pids()}
    assert off_loopback(pids) == []


def test_a_comparison_on_two_nodes_equals_a_local_one(cluster):
    agents = {"hasty": hasty_agent, "careful": careful_agent}
    local = lf.compare(DATASET, agents, trials=2, **QUIET)
    remote = lf.compare(DATASET, agents, trials=2, executor=on(cluster), **QUIET)
    for name in agents:
        pd.testing.assert_frame_equal(_without_latency(remote.results[name].metrics_table),
                                      _without_latency(local.results[name].metrics_table))
    pd.testing.assert_frame_equal(_without_latency(remote.summary), _without_latency(local.summary))
    pd.testing.assert_frame_equal(remote.pairwise("trajectory_exact_match"), local.pairwise("trajectory_exact_match"))


def test_workers_fetch_their_data_without_a_blocking_get_in_the_async_actor(cluster, capfd):
    lf.evaluate(DATASET, hasty_agent, executor=on(cluster), **QUIET)
    driver = capfd.readouterr().err
    assert "constructor arguments in the object store" not in driver  # a restart needs nothing from the store
    logs = _worker_logs(cluster)
    assert "_Worker" in logs  # the workers' logs were read
    assert "Using blocking ray.get inside async actor" not in logs


# -- a node lost -------------------------------------------------------------------------------


def test_a_node_killed_half_way_loses_no_run_and_the_call_returns(cluster, tmp_path):
    extra = cluster.add_node()  # 3 nodes, one worker each; this one dies half way
    out = tmp_path / "out"
    killer = _kill_when_journaled(cluster, extra, out, 20)
    result = lf.evaluate(DATASET, slowish_careful_agent, name="careful", trials=3, executor=on(cluster, concurrency_per_worker=2),
                         out=out, **QUIET)
    killer.join(30)
    assert extra.killed
    assert result.streamed  # the runs are in the journal, not held by the driver
    keys = run_keys(journal_runs(out))
    assert len(keys) == len(set(keys)) == 54  # every run once: none lost, none twice
    assert result.summary_metrics["failure/count"] == 0 and result.summary_metrics["row_count"] == 54
    assert not result.metrics_table["failure"].any()  # a lost node's runs ran elsewhere, not recorded as failed
    local = lf.evaluate(DATASET, careful_agent, name="careful", trials=3, **QUIET)
    pd.testing.assert_frame_equal(_without_latency(result.metrics_table), _without_latency(local.metrics_table))


def test_a_node_lost_with_no_other_left_stops_with_an_error_and_the_journal_resumes(cluster, tmp_path):
    # Every CPU of the module's two nodes is held, so the workers can only live on a third node.
    @ray.remote(num_cpus=1)
    class Hold:
        def ready(self) -> bool:
            return True

    # On the module's cluster, wherever this test runs in the module: a Ray started on its own here
    # would take the holds and then be the one the executor uses (a process already connected keeps
    # its connection), where no worker can ever start.
    _connected(cluster)
    holds = [Hold.remote() for _ in range(2)]
    ray.get([h.ready.remote() for h in holds], timeout=60)
    try:
        extra = cluster.add_node()
        out = tmp_path / "out"
        killer = _kill_when_journaled(cluster, extra, out, 12)
        executor = on(cluster, num_workers=1, concurrency_per_worker=2, wait_for_workers=5)
        with pytest.raises(lf.ExecutorError, match=r"no Ray worker has answered .* runs finished.*resume=True"):
            lf.evaluate(DATASET, slowish_careful_agent, name="careful", trials=3, executor=executor, out=out, **QUIET)
        killer.join(30)
        before = {(r["agent"], r["case_id"], r["trial"]): r for r in journal_runs(out)}
        assert 12 <= len(before) < 54
    finally:
        for hold in holds:
            ray.kill(hold)
    resumed = lf.evaluate(DATASET, slowish_careful_agent, name="careful", trials=3, executor=on(cluster), out=out,
                          resume=True, **QUIET)
    runs = journal_runs(out)
    keys = [(r["agent"], r["case_id"], r["trial"]) for r in runs]
    assert len(keys) == len(set(keys)) == 54
    assert {key: run for key, run in zip(keys, runs) if key in before} == before  # kept as they were
    assert not resumed.metrics_table["failure"].any()


def test_a_worker_slower_to_start_than_the_heartbeat_is_waited_for_not_given_up(cluster):
    """Before its first answer a worker is starting (scheduled, process started, code imported): held
    to start_timeout, not to the heartbeat, so a slow start is not taken for a lost node."""
    from tests.ray_slow_start import IMPORT_SECONDS, slow_start_agent

    assert IMPORT_SECONDS > HEARTBEAT
    result = lf.evaluate(DATASET, slow_start_agent, name="slow-start", executor=on(cluster, num_workers=1, wait_for_workers=1),
                         **QUIET)
    assert len(result.runs) == 18 and not result.metrics_table["failure"].any()
    careful = lf.evaluate(DATASET, careful_agent, name="slow-start", **QUIET)
    assert result.summary_metrics["trajectory_exact_match/mean"] == careful.summary_metrics["trajectory_exact_match/mean"]


def test_start_timeout_is_checked():
    with pytest.raises(lf.ConfigError, match=r"start_timeout=0\): must be a number of seconds > 0"):
        lf.RayExecutor(start_timeout=0)


def test_resume_after_the_driver_is_killed_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "out"
    env = {**cluster.env(), "PYTHONPATH": WORKERS_PATH}
    command = [sys.executable, "-m", "levelfield", "eval", DATASET, "--agent", "ray_agents:slowish_careful_agent",
               "--name", "slow", "--trials", "3", "--executor", "ray", "--ray-address", cluster.address,
               "--out", str(out), "-q"]
    kill_then_resume(command, env, out, journaled=8, total=54)


# -- shipping code with runtime_env ------------------------------------------------------------


def _package(folder: Path, name: str, answer: str) -> Path:
    """A package the cluster's nodes do not have: ``name.agents:answer`` says ``answer`` and where it was loaded."""
    package = folder / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "agents.py").write_text(textwrap.dedent(f"""
        import os

        def answer(prompt):
            return {answer!r} + " " + os.environ.get("LF_MARK", "-") + " " + __file__
    """), encoding="utf-8")
    return package


def test_working_dir_ships_the_code_at_the_job_level_as_documented(cluster, tmp_path):
    shipped = tmp_path / "project"
    _package(shipped, "shipped_pkg", "こんにちは")
    driver = tmp_path / "driver" / "run.py"  # elsewhere: Ray would put the driver's folder on the workers' path
    driver.parent.mkdir()
    driver.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, ".")  # the driver loads the agent from its folder, as a user's script does
        import levelfield as lf
        result = lf.evaluate({DATASET!r}, "shipped_pkg.agents:answer", metrics=[], progress=False,
                             executor=lf.RayExecutor(address={cluster.address!r}, runtime_env={{"working_dir": "."}}))
        print(result.runs[0].output.response)
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(driver)], cwd=shipped, env={**cluster.env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    answer, _, loaded_from = done.stdout.strip().splitlines()[-1].split(" ", 2)
    assert answer == "こんにちは"
    assert not loaded_from.startswith(str(shipped))  # the workers loaded Ray's unpacked copy, not this folder


def test_py_modules_are_uploaded_for_a_process_already_connected_and_its_job_env_is_kept(cluster, tmp_path):
    package = _package(tmp_path / "code", "uploaded_pkg", "Grüße")
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(package.parent)!r})
        import ray
        import levelfield as lf
        ray.init(address={cluster.address!r}, runtime_env={{"env_vars": {{"LF_MARK": "theirs"}}}})
        result = lf.evaluate({DATASET!r}, "uploaded_pkg.agents:answer", metrics=[], progress=False,
                             executor=lf.RayExecutor(runtime_env={{"py_modules": [{str(package)!r}]}}))
        print(result.runs[0].output.response)
        print(ray.get_runtime_context().runtime_env.get("env_vars"))
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env={**cluster.env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    response, job_env = done.stdout.strip().splitlines()[-2:]
    answer, mark, loaded_from = response.split(" ", 2)
    assert (answer, mark) == ("Grüße", "theirs")  # our module shipped, the user's job env kept
    assert not loaded_from.startswith(str(package))
    assert job_env == "{'LF_MARK': 'theirs'}"


@pytest.mark.parametrize(("runtime_env", "message"), [
    ({"working_dir": "no/such/folder"}, r"'no/such/folder' does not exist"),
    ({"wokring_dir": "."}, r"unknown field\(s\) 'wokring_dir'; Ray knows .*working_dir"),
    ({"env_vars": {"N": 1}}, r"env_vars"),
    ({"working_dir": "gcs://_ray_pkg_0000000000000000.zip"}, r"could not set it up on the cluster"),
])
def test_a_bad_runtime_env_is_a_config_error_before_any_run(cluster, tmp_path, runtime_env, message):
    executor = on(cluster, runtime_env=runtime_env)
    with pytest.raises(lf.ConfigError, match=message):
        lf.evaluate(DATASET, hasty_agent, executor=executor, out=tmp_path / "out", **QUIET)
    assert not (tmp_path / "out" / "runs.jsonl").exists()


# -- docs/ray.md, as written -------------------------------------------------------------------


def _saved_predictions(path: Path) -> None:
    """hasty_agent's answers to the sample dataset, saved as predictions (trajectories as JSON text, as Vertex saves them)."""
    run = lf.evaluate(DATASET, hasty_agent, metrics=[], **QUIET)
    calls = lambda cs: json.dumps([{"tool_name": c.tool_name, "tool_input": c.tool_input} for c in cs or []])  # noqa: E731
    rows = [{"case_id": case.case_id, "prompt": case.prompt, "reference": case.reference,
             "reference_trajectory": calls(case.reference_trajectory), "response": agent_run.output.response,
             "predicted_trajectory": calls(agent_run.output.trajectory)} for case, agent_run in zip(run.dataset, run.runs)]
    path.parent.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(path, index=False)


def test_every_call_of_docs_ray_md_works_as_written_on_the_cluster(cluster, tmp_path):
    import re
    import shlex
    import shutil

    page = (ROOT / "docs" / "ray.md").read_text(encoding="utf-8")
    python = re.findall(r"```python\n(.*?)```", page, re.S)
    commands = [" ".join(block.replace("\\\n", " ").split()) for block in re.findall(r"```bash\n(.*?)```", page, re.S)]
    cli = [c for c in commands if c.startswith("levelfield ")]
    assert len(python) >= 3 and cli
    project = tmp_path / "project"  # the reader's folder: the samples, and saved predictions in logs/
    shutil.copytree(ROOT / "samples", project / "samples")
    _saved_predictions(project / "logs" / "predictions.parquet")
    (project / "docs_ray.py").write_text("\n".join(python), encoding="utf-8")
    # As the page says: the head's address and token auth in the environment; levelfield installed.
    env = {**cluster.env(), "RAY_ADDRESS": cluster.address, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "docs_ray.py"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for command in cli:
        ran = subprocess.run([sys.executable, "-m", *shlex.split(command)], cwd=project, env=env, capture_output=True,
                             text=True, timeout=300)
        assert ran.returncode == 0, (command, ran.stderr[-3000:])
    assert len(journal_runs(project / "results" / "eval")) == 18
    assert len(journal_runs(project / "results" / "compare")) == 2 * 3 * 18
    assert len(journal_runs(project / "results" / "cli")) == 2 * 18
    assert json.loads((project / "scores" / "summary.json").read_text(encoding="utf-8"))["row_count"] == 18
