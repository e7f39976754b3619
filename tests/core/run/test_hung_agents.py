"""Hung agents do not starve the rest: abandoned sync calls hold no slot and never block exit;
an async agent that blocks the event loop is named in a warning."""

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.run.runner import BlockingAgentWarning

ROOT = Path(__file__).resolve().parents[3]


def test_healthy_runs_keep_their_slots_while_hung_sync_calls_are_abandoned():
    release = threading.Event()
    lock = threading.Lock()
    in_flight = peak = 0

    def agent(prompt):
        nonlocal in_flight, peak
        if prompt.startswith("hang"):
            release.wait(30)
            return "late"
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return "ok"

    # Two slots, both first taken by hung calls: before, their threads kept the pool's two
    # workers, and every healthy run behind them timed out too.
    cases = [{"case_id": f"hang{i}", "prompt": f"hang{i}"} for i in range(2)]
    cases += [{"case_id": f"ok{i}", "prompt": f"ok{i}"} for i in range(8)]
    try:
        result = lf.evaluate(cases, agent, metrics=[], progress=False, concurrency=2, timeout=1.0, retries=0)
    finally:
        release.set()
    by_id = {r.case_id: r for r in result.runs}
    assert [by_id[f"hang{i}"].error_type for i in range(2)] == ["timeout", "timeout"]
    assert [by_id[f"ok{i}"].failure for i in range(8)] == [False] * 8
    assert peak == 2  # the healthy runs had both slots


def test_a_hung_call_that_returns_later_changes_nothing_recorded():
    release = threading.Event()
    finished = threading.Event()

    def agent(prompt):
        if prompt == "slow":
            release.wait(30)
            finished.set()
            return "too late"
        return "ok"

    # "fast" answers at once (in a thread): 2 s for that on a loaded machine.
    result = lf.evaluate([{"prompt": "slow"}, {"prompt": "fast"}], agent, metrics=[], progress=False, timeout=2)
    release.set()
    assert finished.wait(30)
    assert result.runs[0].error_type == "timeout" and result.runs[0].output is None
    assert result.runs[1].output.response == "ok"


def run_script(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        # The test's own cache folder (conftest), not .levelfield-cache in the repository (the working directory).
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "LEVELFIELD_CACHE_DIR": os.environ["LEVELFIELD_CACHE_DIR"]},
    )


@pytest.mark.slow  # a subprocess that must exit despite the hung thread
def test_process_exits_when_the_evaluation_ends_despite_a_hung_sync_agent():
    done = run_script("""
        import threading
        import levelfield as lf

        def agent(prompt):
            if prompt == "hang":
                threading.Event().wait()  # forever
            return "ok"

        result = lf.evaluate([{"prompt": "hang"}, {"prompt": "fine"}], agent, metrics=[], progress=False,
                             timeout=0.5, retries=0)
        print([r.error_type for r in result.runs])
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['timeout', None]"


@pytest.mark.slow  # a subprocess running a LangGraph agent whose tool hangs
def test_process_exits_despite_a_hung_sync_tool_of_a_langgraph_agent():
    # LangChain runs sync tools on the loop's default executor, not through levelfield's run_sync.
    done = run_script("""
        import threading
        from langchain.agents import create_agent
        from langchain_core.tools import tool
        import levelfield as lf
        from levelfield.testing import ScriptedChatModel
        from levelfield.testing import tool_outputs_by_turn

        @tool
        def wait_forever(x: str) -> str:
            \"\"\"Never returns.\"\"\"
            threading.Event().wait()
            return x

        def policy(messages):
            return "done" if tool_outputs_by_turn(messages)[-1:] and tool_outputs_by_turn(messages)[-1] else [("wait_forever", {"x": "a"})]

        graph = create_agent(ScriptedChatModel(policy), tools=[wait_forever])
        result = lf.evaluate([{"prompt": "go"}], graph, metrics=[], progress=False, timeout=0.5, retries=0)
        print(result.runs[0].error_type)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "timeout"


def test_async_agent_blocking_the_loop_is_named_in_a_warning():
    async def blocker(prompt):
        time.sleep(0.3)  # a blocking call inside an async agent: nothing else runs meanwhile
        return "ok"

    with pytest.warns(BlockingAgentWarning, match=r"agent 'blocker' blocked the event loop for \d+\.\d s .*timeout \(0\.1 s\) could not stop it"):
        lf.evaluate([{"prompt": "a"}], blocker, metrics=[], progress=False, timeout=0.1)


def test_a_blocking_agent_is_warned_about_once_per_evaluation():
    async def blocker(prompt):
        time.sleep(0.15)
        return "ok"

    with pytest.warns(BlockingAgentWarning) as caught:
        lf.evaluate([{"prompt": "a"}, {"prompt": "b"}, {"prompt": "c"}], blocker, metrics=[], progress=False, timeout=0.1)
    assert len([w for w in caught if issubclass(w.category, BlockingAgentWarning)]) == 1


def test_well_behaved_async_agents_raise_no_blocking_warning(recwarn):
    async def polite(prompt):
        import asyncio

        await asyncio.sleep(0.2)
        return "ok"

    lf.evaluate([{"prompt": "a"}], polite, metrics=[], progress=False, timeout=5)
    assert not [w for w in recwarn if issubclass(w.category, BlockingAgentWarning)]


def test_sync_calls_reuse_idle_threads_instead_of_starting_one_each():
    from levelfield._core.run.threads import _DaemonThreads

    pool = _DaemonThreads(idle_seconds=5)  # a pool of its own: other tests' idle threads do not count
    names = []
    for _ in range(20):  # one call after another: the thread of the last call is idle for the next
        done = threading.Event()
        pool.submit(lambda done=done: (names.append(threading.current_thread().name), done.set()))
        assert done.wait(30)
        # The thread goes back to wait for work after its call: the next call is submitted once it has, however
        # late a loaded machine lets it (a fixed pause could end first, and the pool would rightly start a thread).
        deadline = time.monotonic() + 30
        while pool._idle == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
    assert len(set(names)) == 1


def test_a_hung_call_makes_the_pool_start_another_thread_for_the_next():
    from levelfield._core.run.threads import _DaemonThreads

    pool = _DaemonThreads(idle_seconds=5)
    stuck, release, done = threading.Event(), threading.Event(), threading.Event()
    pool.submit(lambda: (stuck.set(), release.wait(60)))
    assert stuck.wait(30)
    pool.submit(done.set)
    try:
        assert done.wait(30)  # not queued behind the hung call
    finally:
        release.set()
