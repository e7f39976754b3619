"""ScriptedChatModel: the deterministic chat model users drive their own offline agent tests with."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from levelfield.testing import ScriptedChatModel, last_human_text, tool_outputs_by_turn
from levelfield.testing.chat_model import count_tokens


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def two_lookups(messages):
    if not tool_outputs_by_turn(messages):
        return [("lookup", {"key": "a"}), ("lookup", {"key": "b"})]
    return "found " + " ".join(tool_outputs_by_turn(messages)[0])


def test_string_decision_is_a_final_answer():
    reply = ScriptedChatModel(lambda m: "hello there").invoke("hi")
    assert reply.content == "hello there" and reply.tool_calls == []


def test_list_decision_is_parallel_tool_calls_with_distinct_ids():
    reply = ScriptedChatModel(two_lookups).bind_tools([lookup]).invoke("go")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("lookup", {"key": "a"}), ("lookup", {"key": "b"})]
    assert len({c["id"] for c in reply.tool_calls}) == 2


def test_same_conversation_gives_same_tool_call_ids():
    model = ScriptedChatModel(two_lookups)
    assert [c["id"] for c in model.invoke("go").tool_calls] == [c["id"] for c in model.invoke("go").tool_calls]


def test_each_call_returns_a_fresh_message_even_when_the_policy_reuses_one():
    shared = AIMessage(content="same")
    model = ScriptedChatModel(lambda m: shared)
    first, second = model.invoke("x"), model.invoke("x")
    first.content = "changed"
    assert second.content == "same" and shared.content == "same"


def test_usage_counts_words_in_and_out():
    reply = ScriptedChatModel(lambda m: "three word answer").invoke("two words")
    assert reply.usage_metadata == {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}
    assert count_tokens("a b  c") == 3


def test_async_reply_equals_sync_reply():
    model = ScriptedChatModel(two_lookups).bind_tools([lookup])
    sync_calls = model.invoke("go").tool_calls
    async_calls = asyncio.run(model.ainvoke("go")).tool_calls
    assert sync_calls == async_calls


def test_calling_a_tool_that_is_not_bound_is_an_error_naming_it():
    model = ScriptedChatModel(lambda m: [("launch", {})]).bind_tools([lookup])
    with pytest.raises(ValueError, match="launch"):
        model.invoke("go")


def test_policy_returning_something_else_is_a_type_error():
    with pytest.raises(TypeError, match="expected a str"):
        ScriptedChatModel(lambda m: 42).invoke("go")


def test_tool_outputs_are_grouped_by_turn_in_tool_call_order():
    messages = [
        HumanMessage("old question"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "old"}]),
        ToolMessage("stale", tool_call_id="old"),
        HumanMessage("new question"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "1"}, {"name": "lookup", "args": {}, "id": "2"}]),
        ToolMessage("second", tool_call_id="2"),  # finished first
        ToolMessage("first", tool_call_id="1"),
        AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "3"}]),
        ToolMessage("third", tool_call_id="3"),
    ]
    assert tool_outputs_by_turn(messages) == [["first", "second"], ["third"]]
    assert last_human_text(messages) == "new question"
