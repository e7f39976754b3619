"""A failed run says what happened even when the exception has no message; ``error`` is always a column."""

import warnings

import pytest

import levelfield as lf
from levelfield import AllRunsFailedWarning
from levelfield._core.run.failures import describe_error


def _bare_not_implemented():
    raise NotImplementedError


def test_an_exception_without_a_message_names_its_type_and_where_it_was_raised():
    try:
        _bare_not_implemented()
    except NotImplementedError as exc:
        text, error_type = describe_error(exc)
    assert error_type == "NotImplementedError"
    assert text.startswith("NotImplementedError (raised in _bare_not_implemented, test_errors_plain.py:")
    line = int(text.rsplit(":", 1)[1].rstrip(")"))
    assert line == _bare_not_implemented.__code__.co_firstlineno + 1


def test_an_exception_with_a_message_keeps_it():
    text, _ = describe_error(ValueError("Größe ungültig: 太大"))
    assert text == "ValueError: Größe ungültig: 太大"


def test_a_langgraph_agent_whose_model_cannot_bind_tools_says_bind_tools():
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    graph = create_agent(GenericFakeChatModel(messages=iter([AIMessage(content="ok")])), [lookup])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AllRunsFailedWarning)
        result = lf.evaluate([{"prompt": "東京の天気は?", "reference": "晴れ"}], graph, metrics=["exact_match"],
                             progress=False)
    error = result.metrics_table["error"][0]
    assert "NotImplementedError (raised in bind_tools, " in error, error


def test_error_column_is_present_when_no_run_failed():
    result = lf.evaluate([{"prompt": "Olá", "reference": "Olá"}], lambda p: p, metrics=["exact_match"], progress=False)
    table = result.metrics_table
    assert "error" in table.columns and "error_type" in table.columns
    assert table["error"].isna().all()
