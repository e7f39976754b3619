"""isolation="process": agents run in worker processes; a crash there fails one run, not the evaluation."""

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.cli.main import main as cli_main

pytestmark = pytest.mark.slow  # every test starts worker processes; some kill them or press Ctrl-C

# Agents live at module level: a worker process imports them from this module.


def crashing_agent(prompt: str) -> str:
    if prompt == "exit":
        os._exit(3)
    if prompt == "segfault":
        ctypes.string_at(0)  # reads address 0: SIGSEGV in native code
    if prompt == "hang":
        threading.Event().wait()
    if prompt == "raise":
        raise ValueError("bad input, ärgerlich")
    return f"answer from {os.getpid()}"


async def async_pid_agent(prompt: str) -> str:
    return str(os.getpid())


def pid_agent(prompt: str, history=None) -> str:
    return f"{os.getpid()}:{len(history or [])}"


class FlakyOnce:
    """Fails with a transient error on its first call in each worker, then answers."""

    name = "flaky"

    def __init__(self):
        self.calls = 0

    async def arun(self, request):
        self.calls += 1
        if self.calls == 1:
            raise lf.TransientAgentError("busy, try again")
        return lf.AgentOutput(response="ok")


def _loaded_after(seconds: float) -> "SlowToLoad":
    time.sleep(seconds)  # in the worker: an agent whose import or unpickling takes this long
    return SlowToLoad(seconds)


class SlowToLoad:
    """Quick to answer, slow to load in a worker (a heavy import, a model read at unpickling)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, prompt: str) -> str:
        return f"loaded in {self.seconds} s, answered at once"

    def __reduce__(self):
        return _loaded_after, (self.seconds,)


class Unpicklable:
    """An agent holding a lock: it cannot be pickled, but it can be named by its spec."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            return f"locked answer from {os.getpid()}"


LOCKED = Unpicklable()

CASES = [{"case_id": k, "prompt": k} for k in ("ok1", "exit", "segfault", "raise", "ok2")]


def evaluate(cases, agent, **kw):
    kw.setdefault("progress", False)
    kw.setdefault("retries", 0)
    kw.setdefault("timeout", 60)
    return lf.evaluate(cases, agent, metrics=[], isolation="process", **kw)


def test_os_exit_and_a_segfault_fail_their_runs_and_the_rest_go_on():
    result = evaluate(CASES, crashing_agent, concurrency=2)
    runs = {r.case_id: r for r in result.runs}
    assert runs["exit"].failure and runs["exit"].error_type == "worker_died"
    assert "exit code 3" in runs["exit"].error
    assert runs["segfault"].failure and runs["segfault"].error_type == "worker_died"
    assert "SIGSEGV" in runs["segfault"].error
    assert runs["raise"].error == "ValueError: bad input, ärgerlich" and runs["raise"].error_type == "ValueError"
    assert not runs["ok1"].failure and not runs["ok2"].failure


def test_agents_run_in_other_processes():
    result = evaluate([{"prompt": "a"}], async_pid_agent)
    assert result.runs[0].output.response != str(os.getpid())


def test_a_hung_agent_times_out_and_its_worker_is_replaced():
    cases = [{"case_id": "hang", "prompt": "hang"}, {"case_id": "after", "prompt": "after"}]
    result = evaluate(cases, crashing_agent, concurrency=1, timeout=1.0)
    runs = {r.case_id: r for r in result.runs}
    assert runs["hang"].error_type == "timeout"
    assert runs["after"].output.response.startswith("answer from")


def test_loading_the_agent_in_a_worker_is_not_the_runs_time():
    # 0.6 s to load, 0.5 s to answer: before, the load counted against the first run's timeout.
    result = evaluate([{"case_id": "a", "prompt": "a"}, {"case_id": "b", "prompt": "b"}], SlowToLoad(0.6),
                      concurrency=1, timeout=0.5)
    assert [r.error for r in result.runs] == [None, None]
    assert result.runs[0].output.response == "loaded in 0.6 s, answered at once"


def test_an_agent_that_never_loads_fails_its_run_by_the_timeout(monkeypatch):
    monkeypatch.setattr("levelfield._core.run.isolation._LOAD_WAIT", 1.0)
    result = evaluate([{"case_id": "a", "prompt": "a"}], SlowToLoad(600), concurrency=1, timeout=0.5)
    assert result.runs[0].error_type == "timeout"


def test_every_turn_of_a_case_runs_in_the_same_worker():
    result = evaluate([{"turns": [{"prompt": "one"}, {"prompt": "two"}, {"prompt": "three"}]}], pid_agent)
    pids = [t.response.split(":")[0] for t in result.runs[0].turns]
    assert len(set(pids)) == 1 and pids[0] != str(os.getpid())
    assert [t.response.split(":")[1] for t in result.runs[0].turns] == ["0", "2", "4"]


def test_transient_errors_in_a_worker_are_retried():
    result = evaluate([{"prompt": "a"}], FlakyOnce(), retries=1, backoff=0.01)
    assert not result.runs[0].failure and result.runs[0].attempts == 2


def test_an_agent_that_cannot_be_pickled_is_an_error_before_any_run():
    called = []

    def local_agent(prompt):
        called.append(prompt)
        return "x"

    with pytest.raises(lf.ConfigError, match=r"agent 'local_agent' .*cannot be sent to a worker process.*spec string"):
        evaluate([{"prompt": "a"}], local_agent)
    assert called == []


def test_an_unpicklable_agent_given_as_a_spec_string_runs_in_a_worker():
    result = evaluate([{"prompt": "a"}], "test_isolation:LOCKED")
    assert result.runs[0].output.response.startswith("locked answer from")
    assert result.runs[0].output.response != f"locked answer from {os.getpid()}"


def test_compare_isolates_every_agent():
    cmp = lf.compare([{"case_id": "exit", "prompt": "exit"}, {"case_id": "fine", "prompt": "fine"}],
                     {"crashing": crashing_agent, "pid": async_pid_agent}, metrics=[], progress=False,
                     isolation="process", retries=0)
    crashing = {r.case_id: r for r in cmp.results["crashing"].runs}
    assert crashing["exit"].error_type == "worker_died" and not crashing["fine"].failure
    assert [r.failure for r in cmp.results["pid"].runs] == [False, False]


def test_unknown_isolation_mode_is_a_config_error():
    with pytest.raises(lf.ConfigError, match=r"isolation='thread': must be 'none' .* or 'process'"):
        lf.evaluate([{"prompt": "a"}], crashing_agent, isolation="thread", progress=False)


def test_cli_runs_agents_in_worker_processes_with_isolation_process(tmp_path, capsys):
    data = tmp_path / "cases.jsonl"
    data.write_text('{"case_id": "exit", "prompt": "exit"}\n{"case_id": "ok", "prompt": "fine", "reference": "x"}\n')
    code = cli_main(["eval", str(data), "--agent", "test_isolation:crashing_agent", "--isolation", "process", "-q",
                     "--metric", "exact_match", "--retries", "0", "--out", str(tmp_path / "out")])
    assert code == 0
    lines = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines() if line.strip()]
    runs = {r["case_id"]: r["run"] for r in lines if r.get("kind") == "run"}
    assert runs["exit"]["error_type"] == "worker_died"
    assert runs["ok"]["output"]["response"].startswith("answer from")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_with_worker_processes_exits_130_and_leaves_no_process_behind(tmp_path):
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(f'{{"case_id": "c{i}", "prompt": "case {i}"}}\n' for i in range(40)))
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, LF_TEST_CALLS=str(tmp_path / "calls.txt"), LF_TEST_SLEEP="0.2",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "levelfield", "eval", str(data), "--agent", "tests.fixture.counting_agent:agent",
           "--isolation", "process", "--concurrency", "2", "--out", str(tmp_path / "out"), "--quiet"]
    # A session of its own, so the SIGINT goes to the whole group as a terminal's Ctrl-C does.
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    calls = tmp_path / "calls.txt"
    deadline = time.monotonic() + 90
    while not (calls.exists() and len(calls.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    deadline = time.monotonic() + 30
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group_alive(proc.pid)  # no worker (or fork server) outlives the command


def test_an_unpicklable_agent_leaves_no_journal_behind(tmp_path):
    with pytest.raises(lf.ConfigError, match="cannot be sent to a worker process"):
        lf.evaluate([{"prompt": "a"}], lambda p: "x", isolation="process", out=tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "runs.jsonl").exists()
    result = lf.evaluate([{"prompt": "a"}], crashing_agent, out=tmp_path / "out", progress=False)  # no --overwrite needed
    assert not result.runs[0].failure
