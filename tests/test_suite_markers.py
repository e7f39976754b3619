"""The suite's tiers hold: the markers are registered, the browser tests carry theirs, and the quick
loop CONTRIBUTING.md gives names only registered markers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")


def _pytest_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]


def _registered() -> set[str]:
    return {line.split(":", 1)[0].strip() for line in _pytest_config()["markers"]}


def test_ray_slow_and_browser_are_registered_markers():
    assert {"ray", "slow", "browser"} <= _registered()


def test_every_test_file_that_drives_a_browser_is_marked_browser():
    drivers = [p for p in sorted((ROOT / "tests").rglob("test_*.py")) if "from _browser import" in p.read_text(encoding="utf-8")]
    assert drivers, "tests/_browser.py has users"
    unmarked = [p.name for p in drivers if "pytest.mark.browser" not in p.read_text(encoding="utf-8")]
    assert not unmarked, f"these files drive Chromium but are not marked browser: {unmarked}"


def test_the_quick_loop_in_contributing_names_registered_markers():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    loop = re.search(r'pytest -q -m "([^"]+)"', text)
    assert loop, "CONTRIBUTING.md gives the quick loop as pytest -q -m \"...\""
    named = set(re.findall(r"not (\w+)", loop.group(1)))
    assert named == {"ray", "slow"} and named <= _registered()


def test_warnings_are_errors_with_the_expected_ones_listed():
    filters = _pytest_config()["filterwarnings"]
    assert filters[0] == "error", "the first filter makes every warning an error; the ones after it are the exceptions"
    assert all(f.split(":", 1)[0] in {"ignore", "default", "error"} for f in filters)


def test_the_suite_runs_on_every_core_with_each_ray_module_and_the_browser_tests_on_one_worker():
    from conftest import BY_MODULE, SHARED_WORKER

    options = _pytest_config()["addopts"].split()
    assert options[options.index("-n") + 1] == "auto" and options[options.index("--dist") + 1] == "loadgroup"
    assert set(SHARED_WORKER) == {"browser"} <= _registered() and set(BY_MODULE) == {"ray"} <= _registered()


def test_each_xdist_group_reaches_the_scheduler_in_the_node_ids(request):
    """A worker under ``--dist loadgroup`` tells xdist's scheduler a test's group by the ``@group`` end of
    its node id; without it every group is split over the workers, its module fixtures (a Ray cluster,
    a Chromium) built in each (pytest-xdist #1386 with pytest 9.2; conftest.GroupInNodeId)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("checks an xdist worker under --dist loadgroup, the suite's default")
    grouped = {item.nodeid: "_".join(sorted({str(m.args[0]) for m in item.iter_markers("xdist_group")}))
               for item in request.session.items if item.get_closest_marker("xdist_group")}
    assert grouped, "conftest groups the Ray, browser and module-fixture tests"
    assert [nodeid for nodeid, group in grouped.items() if not nodeid.endswith("@" + group)] == []


@pytest.mark.parametrize(("args", "command_line", "workers"), [
    (["tests/test_errors_plain.py"], ["tests/test_errors_plain.py"], 0),
    (["tests/cli/test_cli.py::test_x", "tests/test_evaluate.py"], ["tests/cli/test_cli.py::test_x", "tests/test_evaluate.py"], 0),
    (["tests"], [], None),  # the README's line: testpaths, the workers
    (["tests/core"], ["tests/core"], None),  # a folder: the workers
    (["tests/test_errors_plain.py"], ["-n", "2", "tests/test_errors_plain.py"], None),  # asked for: obeyed
    (["tests/test_errors_plain.py"], ["-nauto", "tests/test_errors_plain.py"], None),
])
def test_named_test_files_run_in_one_process_unless_workers_are_asked_for(monkeypatch, args, command_line, workers):
    """The quick loop: ``pytest tests/x.py`` runs in this process (the workers' start cost more than the
    file); the whole suite, a folder, or an explicit ``-n`` keeps the workers."""
    import types

    from conftest import pytest_xdist_auto_num_workers

    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    config = types.SimpleNamespace(args=args, invocation_params=types.SimpleNamespace(args=tuple(command_line)))
    got = pytest_xdist_auto_num_workers(config)
    assert got == 0 if workers == 0 else got >= 2
