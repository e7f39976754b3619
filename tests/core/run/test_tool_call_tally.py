"""What the no-tool-call warning reads: successful runs, and of them those that made a tool call."""

from __future__ import annotations

from levelfield._core.data.types import AgentOutput, AgentRun, ToolCall
from levelfield._core.run.notices import tool_call_tally


def _out(calls: int) -> AgentOutput:
    return AgentOutput(response="r", trajectory=[ToolCall(tool_name=f"t{i}") for i in range(calls)])


def _run(i: int, *, output: AgentOutput | None = None, turns: list[AgentOutput] | None = None,
         failure: bool = False) -> AgentRun:
    return AgentRun(case_id=f"c{i}", agent_name="a", output=output, turns=turns or [], failure=failure)


def test_runs_are_counted_once_whatever_the_number_of_calls_and_failed_runs_not_at_all() -> None:
    runs = [
        _run(0, output=_out(0)),                              # answered, no call
        _run(1, output=_out(3)),                              # three calls: one run with calls
        _run(2, output=_out(0), turns=[_out(0), _out(2)]),    # the call in a later turn
        _run(3, output=None, turns=[_out(1)]),                # no final answer kept, a turn with a call
        _run(4, output=None),                                 # nothing at all
        _run(5, output=_out(4), failure=True),                # failed: not counted, calls or not
        _run(6, output=None, turns=[_out(0), _out(0)]),       # turns without calls
    ]
    assert tool_call_tally(runs) == (6, 3)
    assert tool_call_tally(iter(runs)) == (6, 3)  # any iterable, read once
    assert tool_call_tally([]) == (0, 0)
    assert tool_call_tally([_run(0, failure=True)]) == (0, 0)
