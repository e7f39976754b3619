"""No judge can stall or poison a run (issue #42): a sync judge that hangs, a judge redefined
between runs, a judge that raises KeyboardInterrupt or SystemExit, an answer UTF-8 cannot hold."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import threading
import time

import pytest

import levelfield as lf
from levelfield import JudgeAnswersUnreadableWarning

ROWS = [{"prompt": f"case {i}"} for i in range(8)]
GOOD = '{"explanation": "fine", "score": "1"}'
BAD = '{"explanation": "poor", "score": "0"}'


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("LEVELFIELD_CACHE_DIR", str(tmp_path / "cache"))


def rated(judge, **how) -> lf.metrics.PointwiseMetric:
    """A metric asking ``judge`` in text, retrying at once, without a cache; ``how``: other JudgeConfig fields."""
    config = lf.JudgeConfig(**{"structured_output": False, "backoff": 0.0, "cache": False, **how})
    return lf.metrics.PointwiseMetric("rated", "Rate the answer to {prompt}: {response}", judge, judge_config=config)


def evaluate(rows, judge, **how) -> lf.EvalResult:
    return lf.evaluate(rows, lambda p: f"answer to {p}", metrics=[rated(judge, **how)], progress=False)


# --- a sync judge runs on a worker thread, under the judge's timeout ----------------------------


def test_a_sync_judge_that_hangs_fails_its_row_naming_the_timeout_and_the_others_are_scored():
    release, hung_call_returned = threading.Event(), threading.Event()

    def judge(prompt: str) -> str:
        if "case 3" in prompt:
            release.wait(60)  # hangs (until the test ends): on the event loop it would freeze every row
            hung_call_returned.set()
        return GOOD

    try:
        result = evaluate(ROWS, judge, timeout=0.5, retries=0)
        # The evaluation ended while the hung call still hung: it waited for the timeout, not for the call.
        assert not hung_call_returned.is_set()
    finally:
        release.set()
    table = result.metrics_table.set_index("case_id")
    assert math.isnan(table.loc["3", "rated/score"]) and table.loc["3", "rated/failed"] == True  # noqa: E712
    assert "timeout of 0.5 s" in table.loc["3", "rated/error"]
    assert "TimeoutError" in table.loc["3", "rated/error"]
    others = table.drop(index="3")
    assert (others["rated/score"] == 1.0).all()
    assert result.summary_metrics["rated/failure_count"] == 1


def test_sync_judges_overlap_up_to_the_judges_concurrency():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    four_at_once = threading.Event()

    def judge(prompt: str) -> str:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            if state["now"] == 4:
                four_at_once.set()
        # Each call is held until four are in flight together: calls made one after another (on the event
        # loop, or on one thread) never get there, and every call would wait out the 10 s.
        four_at_once.wait(10)
        with lock:
            state["now"] -= 1
        return GOOD

    result = evaluate(ROWS, judge, concurrency=4)
    assert (result.metrics_table["rated/score"] == 1.0).all()
    assert four_at_once.is_set(), state
    assert state["peak"] == 4, state  # up to the concurrency: eight rows, never more than four calls at once


def test_an_async_judge_still_runs_on_the_event_loop():
    seen: list[str] = []

    async def judge(prompt: str) -> str:
        asyncio.get_running_loop()  # raises off the loop
        seen.append(threading.current_thread().name)
        return GOOD

    result = evaluate(ROWS[:2], judge)
    assert (result.metrics_table["rated/score"] == 1.0).all()
    assert seen and all(not name.startswith("levelfield-sync") for name in seen)


# --- a redefined judge is asked again, not served the old judge's verdicts ----------------------


def _same_name(fn, like):
    fn.__name__, fn.__qualname__, fn.__module__ = like.__name__, like.__qualname__, like.__module__
    return fn


def test_a_redefined_function_judge_is_not_served_the_old_verdicts_from_the_cache(tmp_path):
    def judge(prompt: str) -> str:
        return GOOD

    def changed(prompt: str) -> str:
        return BAD

    changed = _same_name(changed, judge)  # same module and name, another body: a judge edited and rerun
    first = evaluate(ROWS[:3], judge, cache=tmp_path)
    second = evaluate(ROWS[:3], changed, cache=tmp_path)
    assert first.summary_metrics["rated/mean"] == 1.0
    assert second.summary_metrics["rated/mean"] == 0.0
    assert second.summary_metrics["rated/judge_calls/sum"] == 3


def test_an_unchanged_judge_defined_again_is_still_answered_from_the_cache(tmp_path):
    source = "def judge(prompt):\n    return " + repr(GOOD) + "\n"

    class Calls:
        n = 0

    calls = Calls()  # an object the judge holds: its state is not the judge's code

    def define():
        namespace = {"__name__": __name__}
        exec(source, namespace)
        inner = namespace["judge"]

        def counted(prompt: str) -> str:
            calls.n += 1
            return inner(prompt)

        return _same_name(counted, counted)

    first = evaluate(ROWS[:3], define(), cache=tmp_path)
    again = evaluate(ROWS[:3], define(), cache=tmp_path)
    assert first.summary_metrics["rated/mean"] == again.summary_metrics["rated/mean"] == 1.0
    assert calls.n == 3  # the second definition, same code, paid nothing
    assert again.summary_metrics["rated/judge_calls/sum"] == 0


def test_judges_differing_only_in_a_closure_value_or_a_default_do_not_share_answers(tmp_path):
    def make(answer: str):
        def judge(prompt: str) -> str:
            return answer

        return judge

    def with_default(prompt: str, answer: str = GOOD) -> str:
        return answer

    def other_default(prompt: str, answer: str = BAD) -> str:
        return answer

    assert evaluate(ROWS[:2], make(GOOD), cache=tmp_path).summary_metrics["rated/mean"] == 1.0
    assert evaluate(ROWS[:2], make(BAD), cache=tmp_path).summary_metrics["rated/mean"] == 0.0
    assert evaluate(ROWS[:2], with_default, cache=tmp_path).summary_metrics["rated/mean"] == 1.0
    changed = _same_name(other_default, with_default)
    assert evaluate(ROWS[:2], changed, cache=tmp_path).summary_metrics["rated/mean"] == 0.0


_VERDICT = GOOD


def _helper_verdict() -> str:
    return _VERDICT


def test_a_judge_whose_module_helper_or_constant_changed_is_asked_again(tmp_path, monkeypatch):
    def judge(prompt: str) -> str:
        return _helper_verdict()

    assert evaluate(ROWS[:2], judge, cache=tmp_path).summary_metrics["rated/mean"] == 1.0
    monkeypatch.setitem(globals(), "_VERDICT", BAD)
    assert evaluate(ROWS[:2], judge, cache=tmp_path).summary_metrics["rated/mean"] == 0.0


# --- whatever a judge raises fails its row; only the user's Ctrl-C stops the evaluation -------


class Fatal(BaseException):
    """A BaseException of a library's own (as gevent's Timeout or a test framework's Exit)."""


def _raising(exc: BaseException, *, is_async: bool):
    if is_async:
        async def judge(prompt: str) -> str:
            if "case 1" in prompt:
                raise exc
            return GOOD
    else:
        def judge(prompt: str) -> str:
            if "case 1" in prompt:
                raise exc
            return GOOD
    return judge


def _check_saved(result: lf.EvalResult, tmp_path) -> None:
    written = result.save(tmp_path / "saved")
    assert written
    result.to_csv(tmp_path / "table.csv")
    with open(tmp_path / "table.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(result.metrics_table)
    loaded = lf.load_result(tmp_path / "saved") if hasattr(lf, "load_result") else None
    if loaded is not None:
        assert len(loaded.metrics_table) == len(result.metrics_table)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    "exc, name",
    [(KeyboardInterrupt("judge pressed ctrl-c"), "KeyboardInterrupt"), (SystemExit(3), "SystemExit"), (Fatal("boom"), "Fatal")],
    ids=["KeyboardInterrupt", "SystemExit", "BaseException"],
)
def test_a_judge_raising_a_base_exception_fails_its_row_and_the_evaluation_goes_on(exc, name, is_async, tmp_path):
    result = evaluate(ROWS[:3], _raising(exc, is_async=is_async), retries=0)
    table = result.metrics_table.set_index("case_id")
    assert math.isnan(table.loc["1", "rated/score"]) and table.loc["1", "rated/failed"] == True  # noqa: E712
    assert table.loc["1", "rated/error"].startswith(f"{name}:")
    assert list(table.drop(index="1")["rated/score"]) == [1.0, 1.0]
    _check_saved(result, tmp_path)


def test_the_users_ctrl_c_while_judging_still_stops_the_evaluation():
    import signal

    def judge(prompt: str) -> str:
        signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, delivered to the main thread
        time.sleep(0.2)
        return GOOD

    with pytest.raises(KeyboardInterrupt):
        evaluate(ROWS[:2], judge, retries=0)


# --- an answer UTF-8 cannot hold is made writable where it enters ------------------------------


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_judge_answer_with_a_lone_surrogate_saves_and_tabulates(is_async, tmp_path):
    answer = '{"explanation": "cut \ud83d short", "score": "1"}'  # half of an emoji: a truncated model answer

    if is_async:
        async def judge(prompt: str) -> str:
            return answer
    else:
        def judge(prompt: str) -> str:
            return answer

    result = evaluate(ROWS[:2], judge, cache=tmp_path / "cache")
    table = result.metrics_table
    assert list(table["rated/score"]) == [1.0, 1.0]
    assert list(table["rated/explanation"]) == ["cut \ufffd short"] * 2
    table.to_json(orient="records")  # encodes as UTF-8
    _check_saved(result, tmp_path)
    # The cache kept the cleaned answer: a rerun reads it back without asking.
    again = evaluate(ROWS[:2], judge, cache=tmp_path / "cache")
    assert again.summary_metrics["rated/judge_calls/sum"] == 0
    assert list(again.metrics_table["rated/explanation"]) == ["cut \ufffd short"] * 2


def test_an_unreadable_answer_with_a_lone_surrogate_is_kept_writable(tmp_path):
    with pytest.warns(JudgeAnswersUnreadableWarning):
        result = evaluate(ROWS[:1], lambda prompt: "no idea \udc80")
    table = result.metrics_table
    assert table["rated/unreadable_answer"].iloc[0] == "no idea \ufffd"
    json.dumps(table.to_dict("records"), ensure_ascii=False).encode("utf-8")
    _check_saved(result, tmp_path)


# --- simulators: a sync one runs on a worker thread; whatever one raises fails its run only --------


def _travel_agent(prompt: str) -> str:
    return "Which city?" if "flight" in prompt.lower() else "Booked."


SCENARIOS = [{"case_id": f"s{i}", "scenario": {"starting_prompt": "I need a flight.", "conversation_plan": "Fly to Paris."}}
             for i in range(3)]


class SyncUser:
    """A sync simulator: answers the city, then ends; with ``hangs`` it never answers (until released)."""

    max_turns = 4

    def __init__(self, hangs: bool = False) -> None:
        self.release = threading.Event()
        self.hung_call_returned = threading.Event()
        self.hangs = hangs
        self.threads: set[str] = set()

    def next_turn(self, scenario, transcript):
        from levelfield._core.run.conversation import UserTurn

        self.threads.add(threading.current_thread().name)
        if self.hangs and len(transcript) == 1:
            self.release.wait(60)
            self.hung_call_returned.set()
            return UserTurn("too late")
        return UserTurn("Paris." if len(transcript) == 1 else None)


def test_a_sync_simulator_runs_on_a_worker_thread_and_plays_the_conversation():
    user = SyncUser()
    result = lf.evaluate(SCENARIOS, _travel_agent, [], simulator=user, progress=False)
    assert [r.conversation.user_turns for r in result.runs] == [["I need a flight.", "Paris."]] * 3
    assert not any(r.conversation.simulator_failure for r in result.runs)
    assert user.threads and all(name.startswith("levelfield-sync") for name in user.threads)


def test_a_sync_simulator_that_hangs_times_out_as_a_simulator_failure():
    user = SyncUser(hangs=True)
    try:
        result = lf.evaluate(SCENARIOS, _travel_agent, [], simulator=user, timeout=0.5, retries=0, progress=False)
        assert not user.hung_call_returned.is_set()  # ended at the timeout, while the calls still hung
    finally:
        user.release.set()
    for run in result.runs:
        assert run.conversation.simulator_failure and "timed out" in run.conversation.error and not run.failure


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt("sim"), SystemExit(2), Fatal("sim")],
                         ids=["KeyboardInterrupt", "SystemExit", "BaseException"])
def test_a_simulator_raising_a_base_exception_fails_its_run_and_the_evaluation_goes_on(exc, is_async, tmp_path):
    from levelfield._core.run.conversation import UserTurn

    class Raising:
        max_turns = 4

    calls: list[int] = []

    def sync_turn(self, scenario, transcript):
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return UserTurn("Paris." if len(transcript) == 1 else None)

    async def async_turn(self, scenario, transcript):
        return sync_turn(self, scenario, transcript)

    Raising.next_turn = async_turn if is_async else sync_turn
    result = lf.evaluate(SCENARIOS, _travel_agent, [], simulator=Raising(), retries=0, concurrency=1, progress=False,
                         out=tmp_path / "out")
    failed = [r for r in result.runs if r.conversation.simulator_failure]
    assert len(failed) == 1 and type(exc).__name__ in failed[0].conversation.error
    assert not failed[0].failure
    assert sum(1 for r in result.runs if not r.conversation.simulator_failure) == 2
    result.metrics_table.to_csv(tmp_path / "t.csv")
