"""The public entry points document their arguments one by one (a Google-style ``Args:`` section naming
every parameter), and a ``Comparison`` is made in one step: no base class, nothing set on it afterwards."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import levelfield as lf

ENTRY_POINTS = {
    "evaluate": lambda: lf.evaluate,
    "aevaluate": lambda: lf.aevaluate,
    "compare": lambda: lf.compare,
    "acompare": lambda: lf.acompare,
    "EvalTask": lambda: lf.EvalTask,
    "EvalTask.evaluate": lambda: lf.EvalTask.evaluate,
    "check_eval": lambda: lf.testing.check_eval,
    "assert_eval": lambda: lf.testing.assert_eval,
    "load_dataset": lambda: lf.load_dataset,
    "load_traces": lambda: lf.load_traces,
    "check_regressions": lambda: lf.gate.check_regressions,
    "Comparison": lambda: lf.Comparison,
    "Comparison.load": lambda: lf.Comparison.load,
    "Comparison.pairwise": lambda: lf.Comparison.pairwise,
}
TWINS = {"aevaluate": "evaluate", "acompare": "compare"}  # "the same arguments": documented once


def _args_section(doc: str) -> str:
    match = re.search(r"^\s*Args:\n(.*?)(?:^\s*(?:Returns|Raises|Yields|Examples?):|\Z)", doc, re.M | re.S)
    return match.group(1) if match else ""


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_argument_of_an_entry_point_is_documented_under_args(name):
    obj = ENTRY_POINTS[name]()
    documented = ENTRY_POINTS[TWINS[name]]() if name in TWINS else obj
    doc = inspect.getdoc(documented) or ""
    section = _args_section(doc)
    assert section, f"{name}: no Args: section"
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = [p for p in inspect.signature(target).parameters.values() if p.name not in ("self", "cls")]
    missing = []
    for p in params:
        label = f"**{p.name}" if p.kind is p.VAR_KEYWORD else p.name
        if not re.search(rf"^\s+{re.escape(label)}:", section, re.M):
            missing.append(label)
    assert missing == [], f"{name}: arguments not under Args: {missing}"


@pytest.mark.parametrize("name", ["evaluate", "compare"])
def test_evaluate_and_compare_name_every_run_option(name):
    import dataclasses

    section = _args_section(inspect.getdoc(ENTRY_POINTS[name]()) or "")
    unnamed = [f.name for f in dataclasses.fields(lf.RunConfig) if f"``{f.name}``" not in section]
    assert unnamed == []


def test_a_comparison_has_no_base_class_but_object():
    assert lf.Comparison.__bases__ == (object,)


def test_the_statistics_options_of_a_comparison_are_read_from_its_stats():
    cmp = lf.Comparison(lf.EvalDataset([]), {}, [], stats=lf.StatsConfig(confidence=0.9, seed=3, margin=0.02))
    assert (cmp.confidence, cmp.seed, cmp.margin, cmp.failed_runs) == (0.9, 3, 0.02, "zero")
    assert (cmp.test, cmp.reducer) == (cmp.stats.test, cmp.stats.reducer)


def test_trials_has_one_source_the_run_config():
    ds = lf.EvalDataset([])
    assert lf.Comparison(ds, {}, [], trials=3).config.trials == 3
    assert lf.Comparison(ds, {}, [], config=lf.RunConfig(trials=2)).trials == 2
    assert lf.Comparison(ds, {}, [], config=lf.RunConfig(trials=2), trials=4).config.trials == 4


# What a run adds to a comparison, given once in its context: never set on a comparison afterwards.
CONTEXT_FIELDS = {"kind", "baseline", "saved_baseline", "evaluator_notes", "stopped_early", "missing_runs", "complete",
                  "tools_header", "tool_levelling", "faulted", "robustness", "trials", "config", "stats"}


def test_no_module_sets_what_a_comparison_was_made_with_after_making_it():
    package = Path(lf.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if (isinstance(target, ast.Attribute) and target.attr in CONTEXT_FIELDS
                        and isinstance(target.value, ast.Name) and target.value.id in ("cmp", "clean", "comparison")):
                    offenders.append(f"{path.relative_to(package)}:{node.lineno} sets {target.value.id}.{target.attr}")
    assert offenders == []
