"""Oracle agents for τ²-bench in three frameworks: each performs its task's reference path through the
benchmark's tools and tells the customer what the task says it must (``communicate_info``).

The task an agent serves is read from the run in progress (``current_scope().case_id``): a device of these
tests, which know the answers; a real agent learns the task from the customer. ``mutate(task_id, calls)``
gives the path an altered agent follows instead (one write skipped or changed)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from levelfield._core.run.scope import current_scope

Calls = list[tuple[str, dict[str, Any]]]
Mutation = Callable[[str, Calls], Calls]


def plan(bench: Any, task_id: str, mutate: Mutation | None = None) -> tuple[Calls, str]:
    """The calls the oracle makes and its final answer for one task."""
    calls = [(a["tool_name"], copy.deepcopy(a["tool_input"])) for a in bench.reference_path(task_id)]
    if mutate is not None:
        calls = mutate(task_id, calls)
    info = bench.communicate_info(task_id)
    text = "All done." + ("" if not info else " " + " ".join(info))
    return calls, text


WRITES = ("exchange", "return", "cancel", "modify", "book", "update", "send")


def careless_on_some_trials(task_id: str, calls: Calls) -> Calls:
    """Skips every write on the trials a hash of (task, trial) picks (one in three): verdicts that flip."""
    import zlib

    scope = current_scope()
    assert scope is not None
    if zlib.crc32(f"{task_id}-{scope.trial}".encode()) % 3 == 0:
        return [c for c in calls if not c[0].startswith(WRITES)]
    return calls


def _task() -> str:
    scope = current_scope()
    assert scope is not None, "the oracle runs inside an evaluation"
    return scope.case_id


# -- a function agent ------------------------------------------------------------------------


def function_oracle(bench: Any, mutate: Mutation | None = None, extra_tools: dict[str, Any] | None = None) -> Any:
    default = {**bench.tools("function"), **(extra_tools or {})}

    def oracle(prompt: str, tools: Any = default) -> dict[str, Any]:
        calls, text = plan(bench, _task(), mutate)
        trajectory = []
        for i, (name, args) in enumerate(calls):
            output = tools[name](**args)
            trajectory.append({"tool_name": name, "tool_input": args, "tool_output": output, "id": f"call-{i}"})
        return {"response": text, "predicted_trajectory": trajectory}

    return oracle


# -- a LangGraph agent -----------------------------------------------------------------------


def langgraph_oracle(bench: Any, mutate: Mutation | None = None, *, check_tools: bool = True) -> Any:
    """A real compiled graph (langchain's create_agent) driven by a scripted chat model that makes the
    oracle's calls one model turn at a time, then answers (``check_tools=False``: its model may name a tool
    the graph lacks, as a model can)."""
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage

    from levelfield.testing import ScriptedChatModel

    def policy(messages: list[Any]) -> Any:
        calls, text = plan(bench, _task(), mutate)
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < len(calls):
            return [calls[done]]
        return text

    return create_agent(ScriptedChatModel(policy, check_tools=check_tools), tools=bench.tools("langchain"), system_prompt=bench.policy,
                        name="langgraph_oracle")


# -- an ADK agent ----------------------------------------------------------------------------


def adk_oracle(bench: Any, mutate: Mutation | None = None) -> Any:
    """An ADK LlmAgent run by ADK's own runner, its model a local stand-in that makes the oracle's calls."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    class OracleLlm(BaseLlm):
        model: str = "tau2-oracle"

        async def generate_content_async(self, llm_request: Any, stream: bool = False):
            calls, text = plan(bench, _task(), mutate)
            # calls answered so far in this conversation
            done = sum(1 for c in llm_request.contents for p in c.parts or [] if p.function_response)
            if done < len(calls):
                name, args = calls[done]
                parts = [types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"adk-{done}"))]
            else:
                parts = [types.Part(text=text)]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    return LlmAgent(name="adk_oracle", model=OracleLlm(), tools=bench.tools("adk"), instruction=bench.policy)
