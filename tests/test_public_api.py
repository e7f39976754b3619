"""The public surface, pinned: what ``levelfield`` exports, that every exported name resolves, and that
``RunOptions`` (the keywords every entry point takes) names exactly ``RunConfig``'s fields.

A change to the surface is deliberate: edit the list below in the same commit, and say so."""

from __future__ import annotations

import dataclasses
import importlib
import re
import types
import typing
from pathlib import Path

import pytest

import levelfield as lf
from levelfield._core.data.config import RunConfig, RunOptions

PACKAGE = sorted([
    # running and comparing
    "evaluate", "aevaluate", "forget_limits", "compare", "acompare", "Comparison", "EvalTask", "EvalResult", "RunConfig", "StatsConfig",
    "as_agent", "RayExecutor",
    # data
    "load_dataset", "load_traces", "export_scores", "to_adk_evalset", "EvalCase", "EvalDataset", "ToolCallMatcher",
    "AgentRequest", "AgentRunnable", "AgentOutput", "AgentRun", "Handoff", "Message", "ToolCall", "Usage",
    # simulated users, tools
    "UserSimulator", "UserTurn", "TaskSuccess", "ToolCassette", "Faults",
    # judges
    "JudgeConfig", "certify_judge", "rows_to_label", "panel_report",
    # subpackages
    "metrics", "stats", "gate", "report", "testing", "tools", "benchmarks",
    # errors
    "LevelfieldError", "DatasetError", "MetricError", "AdapterError", "AgentOutputError", "TransientAgentError",
    "RateLimitedError", "MissingExtraError", "ConfigError", "ConfigTypeError", "AgentSpecError", "RecordError",
    "TraceError", "WriteError", "RegressionError", "ExecutorError", "EvaluatorsDifferError", "UncertifiedJudgeError",
    "FolderInUseError",
    # warnings: one tree under LevelfieldWarning
    "LevelfieldWarning", "BudgetWarning", "MissingReferenceWarning", "NoToolCallsWarning", "ResumeWarning",
    "A2APreflightWarning", "BlockingAgentWarning", "NotLevelledWarning", "AllRunsFailedWarning",
    "JudgeAnswersUnreadableWarning", "EvaluatorsDifferWarning",
])

# The public homes: the package and its public subpackages. Their modules (``levelfield.judge.client``, ...)
# are how a home is built, not a second address; ``levelfield._core`` and other ``_`` modules are private.
PUBLIC_PACKAGES = ["metrics", "stats", "gate", "report", "testing", "tools", "benchmarks", "judge", "simulation", "formats",
                   "executors", "adapters", "view", "watch"]


def test_the_package_exports_exactly_the_pinned_names():
    assert sorted(lf.__all__) == PACKAGE
    assert len(set(lf.__all__)) == len(lf.__all__)


@pytest.mark.parametrize("name", PACKAGE)
def test_every_exported_name_resolves(name):
    assert getattr(lf, name) is not None
    assert name in dir(lf)


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_name_a_public_subpackage_exports_resolves(package):
    import importlib

    module = importlib.import_module(f"levelfield.{package}")
    assert all(not n.startswith("_") for n in module.__all__)
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


def _homes() -> dict[int, list[str]]:
    """Every exported object (classes, functions, instances; not modules or plain values) -> where it is exported."""
    homes: dict[int, list[str]] = {}
    for home in ["levelfield", *(f"levelfield.{p}" for p in PUBLIC_PACKAGES)]:
        module = importlib.import_module(home)
        for name in module.__all__:
            obj = getattr(module, name)
            if not isinstance(obj, (types.ModuleType, str, int, float, tuple, frozenset, dict, list)) and obj is not None:
                homes.setdefault(id(obj), []).append(f"{home}.{name}")
    return homes


def test_no_object_has_two_public_homes():
    twice = sorted(paths for paths in _homes().values() if len(paths) > 1)
    assert twice == [], f"exported from two public homes (keep one): {twice}"


def test_every_warning_is_a_levelfield_warning_and_every_error_a_levelfield_error():
    warnings_ = [n for n in lf.__all__ if n.endswith("Warning")]
    errors = [n for n in lf.__all__ if n.endswith("Error")]
    assert len(warnings_) >= 10 and len(errors) >= 15
    assert [n for n in warnings_ if not issubclass(getattr(lf, n), lf.LevelfieldWarning)] == []
    assert [n for n in errors if not issubclass(getattr(lf, n), lf.LevelfieldError)] == []


ROOT = Path(__file__).resolve().parents[1]
_IMPORT = re.compile(r"^\s*from (levelfield(?:\.\w+)*) import \(?([\w ,\n]+?)\)?\s*(?:#.*)?$", re.M)
_ATTRIBUTE = re.compile(r"(?<![\"'])\b(?:lf|levelfield)((?:\.[a-z]\w*)+)\.([A-Z]\w*)\b")  # not inside a string: a recorded class path is data


def _named_elsewhere(text: str, homes: dict[int, list[str]]) -> list[str]:
    """References in ``text`` to an exported object through a public path that is not its home."""
    found = [(m.group(1), n.strip()) for m in _IMPORT.finditer(text) for n in m.group(2).replace("\n", " ").split(",")]
    found += [("levelfield" + m.group(1), m.group(2)) for m in _ATTRIBUTE.finditer(text)]
    wrong = []
    for module_name, name in found:
        if not name or " as " in name or any(p.startswith("_") for p in module_name.split(".")):
            continue
        try:
            obj = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError):
            continue  # a module attribute chain, not a module, or not a public object: not this test's business
        home = homes.get(id(obj))
        if home and f"{module_name}.{name}" not in home:
            wrong.append(f"{module_name}.{name} (its home: {home[0]})")
    return wrong


@pytest.mark.parametrize("where", ["README.md", "docs", "samples", "tests", "bench"])
def test_docs_samples_and_tests_name_each_object_by_its_home(where):
    homes = _homes()
    paths = [ROOT / where] if where.endswith(".md") else sorted((ROOT / where).rglob("*.md")) + sorted((ROOT / where).rglob("*.py"))
    wrong = {str(p.relative_to(ROOT)): w for p in paths if (w := _named_elsewhere(p.read_text(encoding="utf-8"), homes))}
    assert wrong == {}


@pytest.mark.parametrize("where", ["README.md", "docs", "samples"])
def test_what_users_read_never_reaches_into_private_modules(where):
    paths = [ROOT / where] if where.endswith(".md") else sorted((ROOT / where).rglob("*.md")) + sorted((ROOT / where).rglob("*.py"))
    private = re.compile(r"\b(?:lf|levelfield)\._(?!_)\w+")  # ``lf.__all__`` is public
    wrong = {str(p.relative_to(ROOT)): private.findall(p.read_text(encoding="utf-8")) for p in paths}
    assert {k: v for k, v in wrong.items() if v} == {}
