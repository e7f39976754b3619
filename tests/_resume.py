"""A journal read while it is written, and the kill-and-resume scenario of the CLI, for the executors' tests."""

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pandas as pd

WAIT_SECONDS = 300
"""How long the driver may take to journal its first runs, and the resumed one to finish: generous,
since a loaded 2-core CI machine starts Ray slowly (the waits end as soon as the runs are there)."""


def journal_runs(out: Path) -> list[dict[str, Any]]:
    """The run lines of ``out/runs.jsonl`` (none before it exists). Only whole lines: a line being
    written (or cut by a kill, perhaps inside a character) is not read nor decoded, so this can be
    called while the journal grows."""
    path = out / "runs.jsonl"
    if not path.exists():
        return []
    whole = path.read_bytes().split(b"\n")[:-1]  # the last piece has no newline yet
    return [r for r in (json.loads(line.decode("utf-8")) for line in whole if line.strip()) if r.get("kind") == "run"]


def run_keys(runs: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(r["agent"], r["case_id"], r["trial"]) for r in runs]


def kill_then_resume(command: list[str], env: dict[str, str], out: Path, *, journaled: int, total: int) -> None:
    """Run the CLI ``command`` (an eval journaling to ``out``), SIGKILL it once ``journaled`` runs are in
    the journal, run it again with ``--resume``, and check that the journal then holds each of the
    ``total`` runs once, those journaled before the kill kept as they were (latencies too, not run
    again), and that the table scores every run right."""
    driver = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and driver.poll() is None and len(journal_runs(out)) < journaled:
            time.sleep(0.05)
        assert driver.poll() is None, "the driver finished before it could be killed"
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.wait(30)
    runs = journal_runs(out)
    before = dict(zip(run_keys(runs), runs))
    assert journaled <= len(before) < total
    resumed = subprocess.run(command + ["--resume"], env=env, capture_output=True, text=True, timeout=WAIT_SECONDS)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = journal_runs(out)
    keys = run_keys(after)
    assert len(keys) == len(set(keys)) == total
    assert {key: run for key, run in zip(keys, after) if key in before} == before
    table = pd.read_csv(out / "metrics_table.csv")
    assert len(table) == total and table["trajectory_exact_match/score"].eq(1.0).all()
