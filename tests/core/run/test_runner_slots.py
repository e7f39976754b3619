"""The runner's slots, deadline queue and batched hand-offs (issue #16's faster runner) keep the
behaviour the slower one had: timeouts per attempt, caps per agent, cancellation from outside,
every run's own answer, and a journal that never loses a run silently."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

import levelfield as lf


def _cases(n: int) -> list[dict]:
    return [{"prompt": f"p{i}", "reference": f"p{i}"} for i in range(n)]


def test_hung_attempts_time_out_in_place_while_the_others_in_the_queue_answer():
    async def agent(prompt):
        # Every third run hangs; the deadlines queued around it belong to runs that finish.
        await asyncio.sleep(30 if int(prompt[1:]) % 3 == 0 else 0.01)
        return prompt

    # 1 s for the runs that answer in 0.01 s: room for a loaded machine's stalls.
    result = lf.evaluate(_cases(30), agent, ["exact_match"], concurrency=10, timeout=1, retries=0, progress=False)
    timed_out = [r.case_id for r in result.runs if r.failure]
    assert [r.error for r in result.runs if r.failure] == ["timed out"] * 10
    assert len(timed_out) == 10 and all(r.output.response == f"p{i}" for i, r in enumerate(result.runs) if not r.failure)


def test_a_retried_attempt_gets_a_fresh_deadline():
    calls: list[float] = []

    async def agent(prompt):
        calls.append(time.perf_counter())
        if len(calls) == 1:
            raise lf.TransientAgentError("busy")
        await asyncio.sleep(0.5)  # shorter than the timeout, though the first attempt started earlier
        return prompt

    # The backoff (1.2 s, jittered to 0.6-1.8 s) plus this attempt's 0.5 s pass the 1 s timeout: one
    # deadline for both attempts would fail the run; 0.5 s of the timeout left for a loaded machine.
    result = lf.evaluate(_cases(1), agent, ["exact_match"], timeout=1, retries=1, backoff=1.2, progress=False)
    assert not result.runs[0].failure and result.runs[0].attempts == 2


def test_two_timeout_lengths_on_one_loop_each_keep_their_own():
    async def slow(prompt):
        await asyncio.sleep(0.4)
        return prompt

    async def both():
        short = lf.aevaluate(_cases(3), slow, ["exact_match"], timeout=0.1, retries=0, progress=False)
        long = lf.aevaluate(_cases(3), slow, ["exact_match"], timeout=5, retries=0, progress=False)
        return await asyncio.gather(short, long)

    short, long = asyncio.run(both())
    assert all(r.failure for r in short.runs) and not any(r.failure for r in long.runs)


async def test_cancelling_the_evaluation_under_a_timeout_cancels_it_rather_than_timing_runs_out():
    started = asyncio.Event()

    async def agent(prompt):
        started.set()
        await asyncio.sleep(30)
        return "ok"

    task = asyncio.create_task(lf.aevaluate(_cases(4), agent, metrics=[], progress=False, timeout=10, concurrency=2))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_every_sync_run_gets_its_own_answer_when_many_finish_together():
    gate = threading.Barrier(20, timeout=30)  # long enough for a loaded machine to start the twenty threads

    def agent(prompt):
        if int(prompt[1:]) < 20:
            gate.wait()  # the first twenty finish at the same moment: one batched hand-off
        return prompt

    result = lf.evaluate(_cases(200), agent, ["exact_match"], concurrency=50, progress=False)
    assert [r.output.response for r in result.runs] == [f"p{i}" for i in range(200)]
    assert result.summary_metrics["exact_match/mean"] == 1.0


def test_a_capped_agent_waits_for_its_own_slot_while_the_other_agent_uses_the_rest():
    in_flight = {"capped": 0, "free": 0}
    peak = {"capped": 0, "free": 0}

    def tracked(name):
        async def agent(prompt):
            in_flight[name] += 1
            peak[name] = max(peak[name], in_flight[name])
            await asyncio.sleep(0.02)
            in_flight[name] -= 1
            return prompt
        return agent

    cmp = lf.compare(_cases(12), {"capped": tracked("capped"), "free": tracked("free")}, ["exact_match"],
                     concurrency=6, agent_concurrency={"capped": 2}, progress=False)
    assert peak == {"capped": 2, "free": 4}  # the capped agent's queued jobs never held a shared slot
    assert all(len(r.runs) == 12 and not r.failures for r in cmp.results.values())


def test_a_journal_that_cannot_be_written_fails_the_evaluation_naming_the_file(tmp_path, unwritable_journal):
    with pytest.raises(lf.RecordError, match=r"runs.jsonl: cannot write the journal .*No space left"):
        lf.evaluate(_cases(3), lambda p: p, ["exact_match"], progress=False, out=tmp_path)


def test_an_evaluation_leaves_no_gc_hook_and_nothing_frozen_behind():
    hooks = list(gc.callbacks)
    lf.evaluate(_cases(50), lambda p: p, ["exact_match"], concurrency=5, progress=False)
    assert gc.callbacks == hooks and gc.get_freeze_count() == 0


# -- the thread switch interval while runs are in flight -------------------------------------------


def test_sync_agents_run_with_a_short_switch_interval_and_the_previous_one_comes_back():
    import sys

    from levelfield._core.run.threads import HANDOFF_INTERVAL

    before = sys.getswitchinterval()
    seen = []

    def agent(prompt):
        seen.append(sys.getswitchinterval())
        return prompt

    try:
        sys.setswitchinterval(0.004)
        lf.evaluate(_cases(5), agent, ["exact_match"], concurrency=2, progress=False)
        assert seen == [HANDOFF_INTERVAL] * 5
        assert sys.getswitchinterval() == 0.004
    finally:
        sys.setswitchinterval(before)


def test_the_switch_interval_comes_back_after_an_evaluation_is_cancelled():
    import sys

    started = threading.Event()

    def agent(prompt):
        started.set()
        time.sleep(0.2)
        return prompt

    async def main():
        task = asyncio.ensure_future(lf.aevaluate(_cases(4), agent, ["exact_match"], progress=False, concurrency=2))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    before = sys.getswitchinterval()
    asyncio.run(main())
    assert sys.getswitchinterval() == before


def test_a_shorter_switch_interval_is_kept_and_one_set_during_the_runs_is_not_undone():
    import sys

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.0002)
        shorter = sys.getswitchinterval()  # as the interpreter keeps it (whole microseconds)
        seen = []
        lf.evaluate(_cases(2), lambda p: seen.append(sys.getswitchinterval()) or p, ["exact_match"], progress=False)
        assert seen == [shorter, shorter] and sys.getswitchinterval() == shorter

        sys.setswitchinterval(0.005)

        def resets(prompt):
            sys.setswitchinterval(0.02)  # the user's own code changes it meanwhile
            return prompt

        lf.evaluate(_cases(1), resets, ["exact_match"], progress=False)
        assert sys.getswitchinterval() == 0.02
    finally:
        sys.setswitchinterval(before)


def test_two_evaluations_at_once_share_the_short_interval_until_the_last_one_ends():
    import sys

    from levelfield._core.run.threads import HANDOFF_INTERVAL

    before = sys.getswitchinterval()
    first_done = threading.Event()
    seen_after_first = []

    def quick(prompt):
        return prompt

    def slow(prompt):
        first_done.wait(10)
        seen_after_first.append(sys.getswitchinterval())  # the other evaluation ended: still short here
        return prompt

    async def main():
        async def first():
            result = await lf.aevaluate(_cases(1), quick, ["exact_match"], progress=False)
            first_done.set()
            return result

        await asyncio.gather(first(), lf.aevaluate(_cases(1), slow, ["exact_match"], progress=False))

    asyncio.run(main())
    assert seen_after_first == [HANDOFF_INTERVAL]
    assert sys.getswitchinterval() == before


# -- the garbage collector's threshold while runs are in flight ------------------------------------


def test_runs_are_made_with_fewer_collections_and_the_users_thresholds_come_back():
    from levelfield._core.run.runner import YOUNG_COLLECTION

    before = gc.get_threshold()
    seen = []

    def agent(prompt):
        seen.append(gc.get_threshold())
        return prompt

    async def async_agent(prompt):
        seen.append(gc.get_threshold())
        return prompt

    try:
        gc.set_threshold(500, 7, 9)
        lf.evaluate(_cases(3), agent, ["exact_match"], concurrency=2, progress=False)
        lf.evaluate(_cases(2), async_agent, ["exact_match"], progress=False)
        assert seen == [(YOUNG_COLLECTION, 7, 9)] * 5
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        gc.set_threshold(*before)


def test_a_larger_threshold_or_a_collector_turned_off_is_kept_and_one_set_during_the_runs_is_not_undone():
    from levelfield._core.run.runner import YOUNG_COLLECTION

    before = gc.get_threshold()
    seen = []
    try:
        for mine in [(YOUNG_COLLECTION * 3, 10, 10), (0, 10, 10)]:
            gc.set_threshold(*mine)
            lf.evaluate(_cases(2), lambda p: seen.append(gc.get_threshold()) or p, ["exact_match"], progress=False)
            assert seen == [mine, mine] and gc.get_threshold() == mine
            seen.clear()

        gc.set_threshold(700, 10, 10)

        def resets(prompt):
            gc.set_threshold(2000, 10, 10)  # the user's own code changes it meanwhile
            return prompt

        lf.evaluate(_cases(1), resets, ["exact_match"], progress=False)
        assert gc.get_threshold() == (2000, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_the_thresholds_come_back_after_an_evaluation_is_cancelled_and_when_the_last_of_two_ends():
    from levelfield._core.run.runner import YOUNG_COLLECTION

    before = gc.get_threshold()
    started = threading.Event()
    first_done = threading.Event()
    seen_after_first = []

    def hangs(prompt):
        started.set()
        time.sleep(0.2)
        return prompt

    def slow(prompt):
        first_done.wait(10)
        seen_after_first.append(gc.get_threshold()[0])  # the other evaluation ended: still raised here
        return prompt

    async def cancelled():
        task = asyncio.ensure_future(lf.aevaluate(_cases(4), hangs, ["exact_match"], progress=False, concurrency=2))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async def two():
        async def first():
            result = await lf.aevaluate(_cases(1), lambda p: p, ["exact_match"], progress=False)
            first_done.set()
            return result

        await asyncio.gather(first(), lf.aevaluate(_cases(1), slow, ["exact_match"], progress=False))

    try:
        gc.set_threshold(700, 10, 10)
        asyncio.run(cancelled())
        assert gc.get_threshold() == (700, 10, 10)
        asyncio.run(two())
        assert seen_after_first == [YOUNG_COLLECTION]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


# -- the progress bar reads the endpoints' limits as often as it can show them ----------------------


def test_the_progress_bar_reads_the_limits_every_few_hundredths_of_a_second_and_counts_every_failure():
    import io

    from levelfield._core.data.types import AgentRun
    from levelfield._core.run.runner import _LIMITS_READ_EVERY, _Progress

    class Limits:  # the registry's one method the bar reads
        def __init__(self):
            self.reads = 0

        def summary(self):
            self.reads += 1
            return f"{self.reads}/8"

    now = [0.0]
    limits = Limits()
    progress = _Progress(50, True, "agent", limits, clock=lambda: now[0])  # type: ignore[arg-type]
    progress.bar.fp = io.StringIO()  # type: ignore[union-attr]  # drawn nowhere
    try:
        ok = AgentRun(case_id="c", agent_name="agent", trial=0, output=None, failure=False)
        failed = AgentRun(case_id="c", agent_name="agent", trial=0, output=None, failure=True, error="boom")
        for _ in range(20):  # runs that end within one reading's time: read once
            progress.update(ok)
        assert limits.reads == 1 and progress.bar.postfix == "in flight=1/8"  # type: ignore[union-attr]
        progress.update(failed)  # a failure is counted at once, with the reading it had
        assert limits.reads == 1 and progress.bar.postfix == "failures=1, in flight=1/8"  # type: ignore[union-attr]
        now[0] += _LIMITS_READ_EVERY
        progress.update(ok)  # time enough: read again
        assert limits.reads == 2 and progress.bar.postfix == "failures=1, in flight=2/8"  # type: ignore[union-attr]
        assert progress.bar.n == 22 and progress.failures == 1  # type: ignore[union-attr]
    finally:
        progress.close()
