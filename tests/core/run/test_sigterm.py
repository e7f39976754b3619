"""SIGTERM (a service manager, ``timeout``, ``docker stop``) ends ``eval`` and ``compare`` as Ctrl-C does: the runs
that finished stay journaled, those in flight are left for ``--resume``, the command that resumes is printed, and
the exit code is 143. Running that command completes the journal with every run once."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from levelfield._core.results.record import read_record

ROOT = Path(__file__).resolve().parents[3]
N = 24

pytestmark = pytest.mark.slow  # each test starts the CLI in a subprocess and signals it

SLOW_AGENT = '''
import os, time

def _log(prompt):
    with open(os.environ["SLOW_CALLS"], "a", encoding="utf-8") as f:
        f.write(prompt + "\\n")

def agent(prompt):
    _log(prompt)
    time.sleep(0.15)
    return {"response": prompt.upper(), "predicted_trajectory": [{"tool_name": "echo", "tool_input": {"text": prompt}}]}

def other(prompt):
    out = agent(prompt)
    out["response"] = prompt.lower()
    return out
'''


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "slow_agent_module.py").write_text(SLOW_AGENT, encoding="utf-8")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"case_id": f"c{i}", "prompt": f"case number {i}", "reference": f"CASE NUMBER {i}"})
                            + "\n" for i in range(N)), encoding="utf-8")
    env = dict(os.environ, SLOW_CALLS=str(tmp_path / "calls.txt"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return data, env


def _journal_runs(out: Path) -> list[dict]:
    path = out / "runs.jsonl"
    if not path.exists():
        return []
    whole = path.read_bytes().split(b"\n")[:-1]  # a line being written (perhaps cut inside a character) is not read
    return [r for r in (json.loads(line.decode("utf-8")) for line in whole if line.strip()) if r.get("kind") == "run"]


def _keys(runs: list[dict]) -> list[tuple[str, str, int]]:
    return [(r["agent"], r["case_id"], r["trial"]) for r in runs]


def _terminate_half_way(command: list[str], env: dict[str, str], out: Path, at_least: int) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "levelfield", *command], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(_journal_runs(out)) < at_least:
            time.sleep(0.02)
        assert proc.poll() is None, f"the command ended before SIGTERM: {proc.communicate()}"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stderr


@pytest.mark.parametrize("kind", ["compare", "eval"])
def test_sigterm_keeps_what_finished_prints_the_resume_command_and_exits_143(tmp_path, kind):
    data, env = _setup(tmp_path)
    out = tmp_path / "results"
    agents = (["--agent", "a=slow_agent_module:agent", "--agent", "b=slow_agent_module:other"] if kind == "compare"
              else ["--agent", "slow_agent_module:agent"])
    total = N * (2 if kind == "compare" else 1)
    command = [kind, str(data), *agents, "--metric", "exact_match", "--concurrency", "2", "--out", str(out), "--quiet"]

    code, stderr = _terminate_half_way(command, env, out, at_least=6)

    assert code == 143, stderr
    assert "Traceback" not in stderr
    assert f"levelfield {kind}: terminated (SIGTERM);" in stderr and "runs are saved in" in stderr
    kept = _journal_runs(out)
    assert 6 <= len(kept) < total
    assert not any(r["run"]["failure"] for r in kept)  # runs in flight were left for resume, not recorded as failures
    resume_line = stderr.strip().splitlines()[-1].strip()
    assert resume_line.startswith(f"levelfield {kind} ") and resume_line.endswith("--resume")

    resumed = subprocess.run([sys.executable, "-m", *shlex.split(resume_line)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = _journal_runs(out)
    keys = _keys(after)
    assert len(keys) == len(set(keys)) == total  # every run once: none lost, none twice
    assert {k: r for k, r in zip(keys, after) if k in set(_keys(kept))} == dict(zip(_keys(kept), kept))
    assert read_record(out).complete
    calls = (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
    # Only the runs in flight at SIGTERM (at most --concurrency) were called twice.
    assert total <= len(calls) <= total + 2


def test_sigterm_restores_the_handler_it_replaced(tmp_path):
    from levelfield.cli.main import main

    before = signal.getsignal(signal.SIGTERM)
    data, _ = _setup(tmp_path)
    assert main(["eval", str(data), "--metric", "exact_match", "--quiet"]) == 2  # no agent and no saved answers
    assert signal.getsignal(signal.SIGTERM) is before


MARKING_AGENT = '''
import os, random, time

def agent(prompt):
    with open(os.environ["SLOW_CALLS"], "a", encoding="utf-8") as f:
        f.write(prompt + "\\n")
    time.sleep(random.uniform(0.0, 0.02))
    out = {"response": prompt.upper(), "predicted_trajectory": []}
    # The call is over: marked as returned (with when), then returned.
    with open(os.environ["RETURNED"], "a", encoding="utf-8") as f:
        f.write(f"{prompt}\\t{time.time()!r}\\n")
    return out
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_graceful_stop_journals_every_run_that_returned_and_resume_reruns_none(tmp_path, sig):
    (tmp_path / "marking_agent_module.py").write_text(MARKING_AGENT, encoding="utf-8")
    # Many short runs in flight: at the signal, calls that have returned wait for the event loop to take them.
    n = 3000
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"case_id": f"c{i}", "prompt": f"case number {i}", "reference": f"CASE NUMBER {i}"})
                            + "\n" for i in range(n)),
                    encoding="utf-8")
    env = dict(os.environ, SLOW_CALLS=str(tmp_path / "calls.txt"), RETURNED=str(tmp_path / "returned.txt"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "results"
    command = ["eval", str(data), "--agent", "marking_agent_module:agent", "--metric", "exact_match",
               "--concurrency", "128", "--out", str(out), "--quiet"]
    proc = subprocess.Popen([sys.executable, "-m", "levelfield", *command], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(_journal_runs(out)) < 300:
            time.sleep(0.02)
        assert proc.poll() is None, f"the command ended before the signal: {proc.communicate()}"
        sent = time.time()
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), stderr
    marks = [line.split("\t") for line in (tmp_path / "returned.txt").read_text(encoding="utf-8").splitlines()]
    # Calls still working at the signal are left for resume (they may return later, on their abandoned threads).
    returned = {prompt for prompt, when in marks if float(when) < sent}
    journaled = {r["run"]["output"]["response"].lower() for r in _journal_runs(out)}
    assert len(returned) < n
    assert returned <= journaled, f"{len(returned - journaled)} returned runs were not journaled"

    resumed = subprocess.run([sys.executable, "-m", "levelfield", *command, "--resume"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    calls = (tmp_path / "calls.txt").read_text(encoding="utf-8").splitlines()
    twice = {p for p in calls if calls.count(p) > 1}
    assert not twice & returned  # resume ran none of the runs that had returned
    assert read_record(out).complete
