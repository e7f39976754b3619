"""The public surface, pinned: what ``levelfield`` exports, that every exported name resolves, and that
``RunOptions`` (the keywords every entry point takes) names exactly ``RunConfig``'s fields.

A change to the surface is deliberate: edit the list below in the same commit, and say so."""

from __future__ import annotations

import dataclasses
import typing

import pytest

import levelfield as lf
from levelfield._core.data.config import RunConfig, RunOptions

PACKAGE = sorted([
    # running and comparing
    "evaluate", "aevaluate", "compare", "acompare", "Comparison", "EvalTask", "EvalResult", "RunConfig", "StatsConfig",
    "as_agent", "RayExecutor",
    # data
    "load_dataset", "load_traces", "export_scores", "to_adk_evalset", "EvalCase", "EvalDataset", "ToolCallMatcher",
    "AgentRequest", "AgentRunnable", "AgentOutput", "AgentRun", "Handoff", "Message", "ToolCall", "Usage",
    # simulated users, tools
    "UserSimulator", "UserTurn", "TaskSuccess", "ToolCassette", "Faults",
    # judges
    "JudgeConfig", "certify_judge", "rows_to_label", "panel_report",
    # subpackages
    "metrics", "stats", "gate", "report", "testing", "tools",
    # errors
    "LevelfieldError", "DatasetError", "MetricError", "AdapterError", "AgentOutputError", "TransientAgentError",
    "RateLimitedError", "MissingExtraError", "ConfigError", "ConfigTypeError", "AgentSpecError", "RecordError",
    "TraceError", "WriteError", "RegressionError", "ExecutorError",
])


def test_the_package_exports_exactly_the_pinned_names():
    assert sorted(lf.__all__) == PACKAGE
    assert len(set(lf.__all__)) == len(lf.__all__)


@pytest.mark.parametrize("name", PACKAGE)
def test_every_exported_name_resolves(name):
    assert getattr(lf, name) is not None
    assert name in dir(lf)


@pytest.mark.parametrize("package", ["metrics", "stats", "testing", "tools", "report", "judge", "simulation",
                                     "formats", "executors", "adapters"])
def test_every_name_a_public_subpackage_exports_resolves(package):
    import importlib

    module = importlib.import_module(f"levelfield.{package}")
    assert len(set(module.__all__)) == len(module.__all__), f"levelfield.{package}.__all__ names one twice"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == [], f"levelfield.{package}.__all__ names what it does not have: {missing}"


def test_run_options_name_exactly_the_run_config_fields():
    options = set(typing.get_type_hints(RunOptions))
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    assert options == fields, f"only in RunOptions: {options - fields}; only in RunConfig: {fields - options}"


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'levelfield' has no attribute 'evalute'"):
        lf.evalute  # noqa: B018
