"""The runner records every run: failures, timeouts, retries, concurrency bounds and trials."""

import asyncio
import threading
import time

import pytest

import levelfield as lf

CASES = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference": "ok"} for i in range(6)]


def run(agent, **kw):
    kw.setdefault("progress", False)
    kw.setdefault("metrics", ["exact_match"])
    return lf.evaluate(CASES, agent, **kw)


def test_agent_that_raises_is_a_failed_row_and_others_go_on():
    def agent(prompt):
        if prompt == "p2":
            raise RuntimeError("boom on p2")
        return "ok"

    result = run(agent)
    table = result.metrics_table
    assert list(table["case_id"]) == [c["case_id"] for c in CASES]
    assert list(table["failure"]) == [0, 0, 1, 0, 0, 0]
    assert table["error"][2] == "RuntimeError: boom on p2" and table["error_type"][2] == "RuntimeError"
    assert pd_isnan(table["exact_match/score"][2])
    assert result.summary_metrics["failure/mean"] == pytest.approx(1 / 6)
    assert result.summary_metrics["failure/count"] == 1
    assert result.summary_metrics["exact_match/mean"] == 1.0  # over the 5 completed runs
    assert result.summary_metrics["exact_match/nan_count"] == 1


def pd_isnan(x):
    return x != x


def test_agent_that_hangs_times_out_and_evaluation_completes():
    cancelled = []

    async def agent(prompt):
        if prompt == "p1":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(prompt)
                raise
        return "ok"

    result = run(agent, timeout=0.2)
    runs = {r.case_id: r for r in result.runs}
    assert runs["c1"].failure and runs["c1"].error_type == "timeout"
    assert not runs["c0"].failure
    # Stopped at its timeout (its call cancelled), not when the agent would have answered; the latency
    # recorded is the time it was given (a lower bound only: a loaded machine may cancel it late).
    assert cancelled == ["p1"]
    assert runs["c1"].latency_in_seconds >= 0.15


def test_sync_agent_that_hangs_times_out_too():
    release = threading.Event()

    def agent(prompt):
        if prompt == "p3":
            release.wait(30)
        return "ok"

    try:
        result = run(agent, timeout=1.0)  # the others answer at once, in threads: within 1 s on a loaded machine
    finally:
        release.set()
    assert [r.failure for r in result.runs] == [False, False, False, True, False, False]


@pytest.mark.parametrize("value,expected", [
    (42, "returned int; expected a str, an AgentOutput, or a dict"),
    ({"answer": "x"}, "returned a dict without 'response'"),
    ({"response": 3}, "returned 'response' of type int"),
    ({"response": "x", "predicted_trajectory": "set_temperature"}, "'predicted_trajectory' of type str"),
    ({"response": "x", "predicted_trajectory": [{"tool_input": {}}]}, "malformed tool call"),
])
def test_wrong_shape_is_a_failed_row_saying_what_was_expected(value, expected):
    result = run(lambda p: value)
    first = result.runs[0]
    assert first.failure and first.error_type == "bad_output"
    assert expected in first.error and "'<lambda>'" in first.error


def test_transient_errors_are_retried_with_backoff():
    attempts = {}

    def agent(prompt):
        attempts[prompt] = attempts.get(prompt, 0) + 1
        if attempts[prompt] < 3:
            raise lf.TransientAgentError("503 from upstream")
        return "ok"

    result = run(agent, retries=2, backoff=0.01)
    assert all(not r.failure and r.attempts == 3 for r in result.runs)
    assert set(attempts.values()) == {3}


def test_transient_errors_give_up_after_retries():
    calls = []

    def agent(prompt):
        calls.append(prompt)
        raise lf.TransientAgentError("429 too many requests")

    result = run(agent, retries=1, backoff=0.01)
    assert all(r.failure and r.attempts == 2 and r.error_type == "transient" for r in result.runs)
    assert len(calls) == 2 * len(CASES)


def test_other_errors_are_not_retried():
    calls = []

    def agent(prompt):
        calls.append(prompt)
        raise ValueError("bad")

    run(agent, retries=3, backoff=0.01)
    assert len(calls) == len(CASES)


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_concurrency_is_bounded_and_used(kind):
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    full = threading.Event()  # four in flight at once, seen

    def enter():
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] == 4:
                full.set()

    def leave():
        with lock:
            state["now"] -= 1

    # Each call holds its slot until four have been in flight at once (or 10 s): the concurrency is used
    # whatever the machine's load, rather than when calls happen to overlap within a sleep.
    async def async_agent(prompt):
        enter()
        deadline = time.monotonic() + 10
        while not full.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        leave()
        return "ok"

    def sync_agent(prompt):
        enter()
        full.wait(10)
        leave()
        return "ok"

    cases = [{"prompt": f"p{i}"} for i in range(20)]
    lf.evaluate(cases, async_agent if kind == "async" else sync_agent, metrics=[], concurrency=4, progress=False)
    assert full.is_set() and state["peak"] == 4


def test_trials_give_one_row_per_case_and_trial_in_dataset_order():
    result = run(lambda p: "ok", trials=3)
    table = result.metrics_table
    assert len(table) == 18
    assert list(table["case_id"][:3]) == ["c0"] * 3 and list(table["trial"][:3]) == [0, 1, 2]
    assert result.summary_metrics["row_count"] == 18


def test_every_case_and_trial_gets_its_own_session_id():
    seen = []

    def agent(prompt, session_id=None):
        seen.append(session_id)
        return "ok"

    run(agent, trials=2)
    assert len(set(seen)) == 12


def test_progress_bar_is_shown_and_can_be_turned_off(capsys):
    lf.evaluate(CASES, lambda p: "ok", metrics=[], progress=True)
    assert "run" in capsys.readouterr().err
    lf.evaluate(CASES, lambda p: "ok", metrics=[], progress=False)
    assert capsys.readouterr().err == ""


async def test_evaluate_works_inside_a_running_event_loop():
    # Jupyter runs user code inside a loop; the sync entry point must still work there.
    result = lf.evaluate(CASES, lambda p: "ok", metrics=["exact_match"], progress=False)
    assert result.summary_metrics["exact_match/mean"] == 1.0


def test_adapter_partial_output_is_kept_on_failure():
    class Flaky:
        name = "flaky"

        async def arun(self, request):
            raise RuntimeError("model error")

        def partial_output(self, request):
            return lf.AgentOutput(response="", trajectory=[lf.ToolCall(tool_name="get_device_info")])

    result = lf.evaluate(CASES[:1], Flaky(), metrics=["exact_match"], progress=False)
    run_ = result.runs[0]
    assert run_.failure and run_.partial_output.trajectory[0].tool_name == "get_device_info"
    assert result.metrics_table["predicted_trajectory"][0] == [{"tool_name": "get_device_info", "tool_input": {}}]


def test_adapter_returning_non_agent_output_fails_that_run():
    class Sloppy:
        name = "sloppy"

        async def arun(self, request):
            return {"response": "ok"}

    first = lf.evaluate(CASES[:1], Sloppy(), metrics=[], progress=False).runs[0]
    assert first.failure and "must return AgentOutput" in first.error


@pytest.mark.parametrize("option,value", [("concurrency", 0), ("trials", 0), ("retries", -1), ("timeout", 0)])
def test_bad_run_options_are_rejected(option, value):
    with pytest.raises(ValueError, match=option):
        lf.evaluate(CASES, lambda p: "ok", progress=False, **{option: value})


def test_transient_error_with_its_own_error_type_is_still_retried():
    attempts = []

    def agent(prompt):
        attempts.append(prompt)
        if len(attempts) == 1:
            raise lf.TransientAgentError("connection refused", error_type="connection_error")
        return "ok"

    result = lf.evaluate(CASES[:1], agent, metrics=[], retries=1, backoff=0.01, progress=False)
    assert not result.runs[0].failure and result.runs[0].attempts == 2
