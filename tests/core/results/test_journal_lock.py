"""One writer per out folder (issue #42): a second resume of a journal being written is refused,
naming the holder; the lock goes when the holder dies, even by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import levelfield as lf
from _resume import journal_runs, run_keys
from levelfield._core.results.lock import LOCK_FILE, FolderInUseError, OutLock

ROOT = Path(__file__).resolve().parents[3]
ROWS = [{"prompt": f"case {i}", "reference": f"answer to case {i}"} for i in range(40)]

pytestmark = [pytest.mark.slow,  # writers in subprocesses, killed with SIGKILL
              pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork-free subprocess timing are POSIX's")]

DRIVER = textwrap.dedent(
    """
    import sys, time
    import levelfield as lf

    def slow(prompt):
        time.sleep(0.4)  # 16 s for the 40: still writing while the test is refused, on a loaded machine too (killed after)
        return "answer to " + prompt

    rows = [{"prompt": f"case {i}", "reference": f"answer to case {i}"} for i in range(40)]
    lf.evaluate(rows, slow, metrics=["exact_match"], out=sys.argv[1], concurrency=1, progress=False, resume=True)
    """
)


def answer(prompt: str) -> str:
    return "answer to " + prompt


def start_driver(tmp_path: Path, out: Path) -> subprocess.Popen:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(script), str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_runs(driver: subprocess.Popen, out: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None and len(journal_runs(out)) < n:
        time.sleep(0.05)
    assert driver.poll() is None, "the driver ended before the test could meet it: " + driver.stderr.read().decode()[-2000:]
    assert len(journal_runs(out)) >= n


def test_a_second_resume_while_another_process_writes_the_journal_is_refused_naming_its_pid(tmp_path):
    out = tmp_path / "out"
    driver = start_driver(tmp_path, out)
    try:
        wait_for_runs(driver, out, 2)
        calls: list[str] = []

        def counted(prompt: str) -> str:
            calls.append(prompt)
            return answer(prompt)

        with pytest.raises(FolderInUseError) as refused:
            lf.evaluate(ROWS, counted, name="slow", metrics=["exact_match"], out=out, resume=True, progress=False)
        message = str(refused.value)
        assert f"PID {driver.pid}" in message and str(out) in message
        assert "resume=True" in message and "started" in message
        assert calls == []  # refused before any agent call: nothing paid twice
        with pytest.raises(FolderInUseError):  # replacing it is a second writer too
            lf.evaluate(ROWS, counted, metrics=["exact_match"], out=out, overwrite=True, progress=False)
        assert driver.poll() is None  # the holder goes on undisturbed
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.communicate(timeout=30)  # waited for, its stderr pipe closed


def test_after_the_holder_is_killed_a_resume_takes_the_lock_and_runs_each_missing_run_once(tmp_path):
    out = tmp_path / "out"
    driver = start_driver(tmp_path, out)
    try:
        wait_for_runs(driver, out, 3)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.communicate(timeout=30)  # waited for, its stderr pipe closed
    before = run_keys(journal_runs(out))
    assert (out / LOCK_FILE).exists()  # a SIGKILL leaves the note behind; the OS dropped the lock itself
    calls: list[str] = []

    def counted(prompt: str) -> str:
        calls.append(prompt)
        return answer(prompt)

    result = lf.evaluate(ROWS, counted, name="slow", metrics=["exact_match"], out=out, resume=True, progress=False)
    keys = run_keys(journal_runs(out))
    assert len(keys) == len(set(keys)) == len(ROWS)
    assert len(calls) == len(ROWS) - len(before)
    assert result.summary_metrics["exact_match/mean"] == 1.0
    assert not (out / LOCK_FILE).exists()  # released cleanly: the note is gone


def test_two_evaluations_of_one_process_on_one_folder_are_two_writers(tmp_path):
    out = tmp_path / "out"
    started = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def held(prompt: str) -> str:
        started.set()
        release.wait(30)
        return answer(prompt)

    def first() -> None:
        try:
            lf.evaluate(ROWS[:2], held, metrics=["exact_match"], out=out, progress=False)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert started.wait(30)
        with pytest.raises(FolderInUseError, match=f"PID {os.getpid()}"):
            lf.evaluate(ROWS[:2], answer, name="held", metrics=["exact_match"], out=out, resume=True, progress=False)
    finally:
        release.set()
        thread.join(30)
    assert errors == []
    again = lf.evaluate(ROWS[:2], answer, name="held", metrics=["exact_match"], out=out, resume=True, progress=False)
    assert len(again.runs) == 2


def test_compare_holds_the_folder_too(tmp_path):
    out = tmp_path / "out"
    lock = OutLock.acquire(out)
    try:
        with pytest.raises(FolderInUseError, match=f"PID {os.getpid()}"):
            lf.compare(ROWS[:2], {"a": answer, "b": answer}, metrics=["exact_match"], out=out, progress=False)
    finally:
        lock.release()
    cmp = lf.compare(ROWS[:2], {"a": answer, "b": answer}, metrics=["exact_match"], out=out, progress=False)
    assert set(cmp.results) == {"a", "b"}
    assert not (out / LOCK_FILE).exists()


def test_a_stale_lock_note_left_by_a_dead_process_does_not_block_or_count_as_a_foreign_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text('{"pid": 999999, "started": "yesterday"}\n', encoding="utf-8")
    result = lf.evaluate(ROWS[:2], answer, metrics=["exact_match"], out=out, progress=False)
    assert result.summary_metrics["exact_match/mean"] == 1.0
    assert (out / "runs.jsonl").exists() and not (out / LOCK_FILE).exists()


def test_an_evaluation_refused_before_writing_leaves_no_empty_folder(tmp_path):
    out = tmp_path / "new" / "out"
    with pytest.raises(lf.LevelfieldError, match="prompt"):
        lf.evaluate([{"reference": "no prompt"}], answer, metrics=["exact_match"], out=out, progress=False)
    assert not out.exists()
