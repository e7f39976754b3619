"""Faults are runs, not crashes: whatever an agent raises is a failed run with its error type."""

import asyncio
import threading

import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool

import levelfield as lf
from levelfield.testing import ScriptedChatModel, tool_outputs_by_turn

CASES = [{"case_id": f"c{i}", "prompt": f"p{i}", "reference": "ok"} for i in range(4)]


class Custom(BaseException):
    """A BaseException subclass of the agent's own."""


class UnreadableError(Exception):
    def __str__(self):
        raise ValueError("cannot say")


FAULTS = {
    "SystemExit": lambda: SystemExit(3),
    "GeneratorExit": GeneratorExit,
    "CancelledError": asyncio.CancelledError,
    "Custom": lambda: Custom("mine"),
    "UnreadableError": UnreadableError,
    "StopIteration": StopIteration,
}


def sync_agent_raising(fault):
    def agent(prompt):
        if prompt == "p1":
            raise FAULTS[fault]()
        return "ok"

    return agent


def async_agent_raising(fault):
    async def agent(prompt):
        await asyncio.sleep(0)
        if prompt == "p1":
            raise FAULTS[fault]()
        return "ok"

    return agent


@pytest.mark.parametrize("make", [sync_agent_raising, async_agent_raising], ids=["sync", "async"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_agent_raising_any_exception_is_one_failed_run_with_its_type(fault, make):
    result = lf.evaluate(CASES, make(fault), metrics=["exact_match"], progress=False)
    runs = {r.case_id: r for r in result.runs}
    assert runs["c1"].failure and runs["c1"].error_type == fault
    assert runs["c1"].error.startswith(f"{fault}")
    assert [runs[c].failure for c in ("c0", "c2", "c3")] == [False, False, False]
    assert result.summary_metrics["exact_match/mean"] == 1.0


def test_exception_whose_message_cannot_be_read_is_recorded_with_a_note():
    result = lf.evaluate(CASES, sync_agent_raising("UnreadableError"), metrics=[], progress=False)
    assert result.runs[1].error == "UnreadableError: (its message could not be read: str() raised ValueError)"


def test_system_exit_keeps_its_code_in_the_error():
    result = lf.evaluate(CASES, async_agent_raising("SystemExit"), metrics=[], progress=False)
    assert result.runs[1].error == "SystemExit: 3"


def test_keyboard_interrupt_raised_by_a_sync_agent_in_its_thread_is_a_failed_run():
    def agent(prompt):
        if prompt == "p2":
            raise KeyboardInterrupt
        return "ok"

    result = lf.evaluate(CASES, agent, metrics=[], progress=False)
    assert [r.failure for r in result.runs] == [False, False, True, False]
    assert result.runs[2].error_type == "KeyboardInterrupt"


def test_keyboard_interrupt_raised_by_an_async_agent_is_a_failed_run():
    # No SIGINT arrived: the KeyboardInterrupt on the loop's thread is the agent's own, not Ctrl-C.
    async def agent(prompt):
        if prompt == "p1":
            raise KeyboardInterrupt
        return "ok"

    result = lf.evaluate(CASES, agent, metrics=[], progress=False)
    assert [r.failure for r in result.runs] == [False, True, False, False]
    assert result.runs[1].error_type == "KeyboardInterrupt"


async def test_cancelling_the_evaluation_itself_still_cancels_it():
    started = asyncio.Event()

    async def agent(prompt):
        started.set()
        await asyncio.sleep(30)
        return "ok"

    task = asyncio.create_task(lf.aevaluate(CASES, agent, metrics=[], progress=False, timeout=None))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_fault_in_a_later_turn_names_the_turn():
    def agent(prompt):
        if prompt == "second":
            raise SystemExit("bye")
        return "first answer"

    result = lf.evaluate([{"turns": [{"prompt": "first"}, {"prompt": "second"}]}], agent, metrics=[], progress=False)
    run = result.runs[0]
    assert run.failure and run.error_type == "SystemExit"
    assert run.error == "turn 2 of 2: SystemExit: bye"
    assert [t.response for t in run.turns] == ["first answer"]


def test_partial_output_hook_that_raises_does_not_sink_the_run():
    class Tracker:
        name = "tracker"

        async def arun(self, request):
            raise RuntimeError("agent failed")

        def partial_output(self, request):
            raise SystemExit("the hook itself fails")

    result = lf.evaluate(CASES[:1], Tracker(), metrics=[], progress=False)
    assert result.runs[0].error == "RuntimeError: agent failed" and result.runs[0].partial_output is None


def test_error_type_that_is_not_text_falls_back_to_the_class_name():
    class Odd(Exception):
        error_type = 42

    async def agent(prompt):
        raise Odd("x")

    result = lf.evaluate(CASES[:1], agent, metrics=[], progress=False)
    assert result.runs[0].error_type == "Odd"


def test_langgraph_tool_raising_system_exit_is_a_failed_run_of_that_case():
    @tool
    def shutdown(device: str) -> str:
        """Shut a device down."""
        if device == "bad":
            raise SystemExit("tool pulled the plug")
        return "off"

    def policy(messages):
        if not tool_outputs_by_turn(messages)[-1:] or not tool_outputs_by_turn(messages)[-1]:
            device = "bad" if "bad" in messages[-1].content else "lamp"
            return [("shutdown", {"device": device})]
        return "done"

    graph = create_agent(ScriptedChatModel(policy), tools=[shutdown])
    result = lf.evaluate([{"case_id": "ok", "prompt": "turn off lamp"}, {"case_id": "boom", "prompt": "turn off bad"}],
                         graph, metrics=[], progress=False, retries=0)
    runs = {r.case_id: r for r in result.runs}
    assert not runs["ok"].failure and runs["ok"].output.response == "done"
    assert runs["boom"].failure and runs["boom"].error_type == "SystemExit"


def test_langgraph_async_tool_raising_system_exit_in_its_own_task_is_a_failed_run():
    # LangGraph runs async tools in tasks of its own: asyncio would re-raise the SystemExit out of
    # the event loop, ending the whole evaluation.
    @tool
    async def shutdown(device: str) -> str:
        """Shut a device down."""
        if device == "bad":
            raise SystemExit("async tool pulled the plug")
        return "off"

    def policy(messages):
        if not tool_outputs_by_turn(messages)[-1:] or not tool_outputs_by_turn(messages)[-1]:
            return [("shutdown", {"device": "bad" if "bad" in messages[-1].content else "lamp"})]
        return "done"

    graph = create_agent(ScriptedChatModel(policy), tools=[shutdown])
    result = lf.evaluate([{"case_id": "ok", "prompt": "turn off lamp"}, {"case_id": "boom", "prompt": "turn off bad"}],
                         graph, metrics=[], progress=False, retries=0)
    runs = {r.case_id: r for r in result.runs}
    assert not runs["ok"].failure and runs["ok"].output.response == "done"
    assert runs["boom"].failure and "SystemExit: async tool pulled the plug" in runs["boom"].error


def test_other_runs_finish_while_a_fault_is_recorded_concurrently():
    gate = threading.Barrier(2, timeout=30)  # both in flight: however late a loaded machine starts the second

    def agent(prompt):
        if prompt in ("p0", "p1"):
            gate.wait()  # both in flight at once
            if prompt == "p1":
                raise GeneratorExit
        return "ok"

    result = lf.evaluate(CASES, agent, metrics=[], progress=False, concurrency=2)
    assert [r.failure for r in result.runs] == [False, True, False, False]
