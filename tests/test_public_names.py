"""What users see names the public homes: an exported error prints as ``levelfield.DatasetError`` (in a
traceback, in ``repr`` of its class) and pickles back to the same class; ``help`` of an exported
function names ``levelfield`` or its public subpackage; every documented subpackage is an attribute
right after ``import levelfield as lf``; and what runs save (a metric's class path, an error's type
name) is unchanged by any of it."""

from __future__ import annotations

import pickle
import subprocess
import sys
import types
import typing

import pytest

import levelfield as lf
from levelfield._core.results.provenance import evaluator_of
from levelfield._core.results.record import metric_spec

# The subpackages the docs use as ``lf.<name>`` (tests/test_public_api.py lists the public homes).
SUBPACKAGES = ["metrics", "stats", "gate", "report", "testing", "tools", "benchmarks", "judge", "simulation", "formats",
               "executors", "adapters", "view", "watch"]


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _exported(kind: type | tuple[type, ...]) -> list[str]:
    return [n for n in lf.__all__ if isinstance(getattr(lf, n), type) and issubclass(getattr(lf, n), kind)]


@pytest.mark.slow  # a fresh interpreter
def test_every_documented_subpackage_is_an_attribute_right_after_import():
    code = ("import sys\nimport levelfield as lf\n"
            f"names = {SUBPACKAGES!r}\n"
            "assert not any(f'levelfield.{n}' in sys.modules for n in ('adapters', 'formats', 'view', 'watch')), 'loaded at import'\n"
            "print([type(getattr(lf, n)).__name__ for n in names]); print(lf.adapters.A2AAgent.__name__)\n"
            "print(lf.formats.__name__, lf.executors.__name__)")
    done = _fresh(code)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(["module"] * len(SUBPACKAGES))
    assert lines[1:] == ["A2AAgent", "levelfield.formats levelfield.executors"]


@pytest.mark.slow  # a fresh interpreter
def test_an_error_raised_by_the_package_prints_under_its_public_name():
    done = _fresh("import levelfield as lf\nlf.load_dataset('no/such/file.jsonl')")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("levelfield.DatasetError: "), last
    assert "_core" not in last


@pytest.mark.slow  # a fresh interpreter
def test_errors_raised_before_their_name_is_used_still_print_public():
    """Errors that load with their feature, raised from inside before ``lf.<Name>`` was ever read."""
    code = ("from levelfield._core.stats.certify import UncertifiedJudgeError\n"
            "from levelfield._core.results.lock import FolderInUseError\n"
            "from levelfield._core.errors import DatasetError\n"
            "print(UncertifiedJudgeError.__module__, FolderInUseError.__module__, DatasetError.__module__)")
    done = _fresh(code)
    assert done.stdout.split() == ["levelfield"] * 3, done.stderr


@pytest.mark.parametrize("name", _exported((BaseException, Warning)))
def test_every_exported_error_and_warning_names_a_public_module(name):
    cls = getattr(lf, name)
    assert not _private(cls.__module__), f"{name} shows as {cls.__module__}.{name}"
    assert repr(cls) == f"<class '{cls.__module__}.{name}'>"


def _instance(cls: type) -> BaseException:
    special = {
        "MissingExtraError": ("traces", "opentelemetry-sdk", "TracedAgent"),
        "WriteError": ("out/runs.jsonl", OSError(28, "No space left on device")),
        "RegressionError": (_Gate("agent 'b' is worse"), {"agents": ["a", "b"]}),
    }
    return cls(*special.get(cls.__name__, ("bad row 3 of cases.jsonl",)))


class _Gate:  # RegressionError reads gate.message(); a module-level class pickles
    def __init__(self, text: str) -> None:
        self.text = text

    def message(self) -> str:
        return self.text


@pytest.mark.parametrize("name", _exported(BaseException))
def test_every_exported_error_pickles_back_to_the_same_class_and_message(name):
    """A worker process (isolation="process", Ray) sends its errors back pickled; pickle finds a class
    by ``__module__`` + ``__qualname__``, so the public name must resolve to the very class."""
    error = _instance(getattr(lf, name))
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert back.__dict__.keys() == error.__dict__.keys()


def test_an_adapter_error_keeps_its_type_and_partial_output_through_pickle():
    error = lf.RateLimitedError("429 from the endpoint", retry_after=2.5, error_type="http_429", partial={"response": "hal"})
    back = pickle.loads(pickle.dumps(error))
    assert (back.retry_after, back.error_type, back.partial) == (2.5, "http_429", {"response": "hal"})


def test_functions_read_through_a_public_home_name_it_in_help():
    for function in (lf.stats.sample_size, lf.stats.wilson_interval, lf.certify_judge, lf.panel_report, lf.rows_to_label):
        assert isinstance(function, types.FunctionType)
        assert not _private(function.__module__), function
        assert pickle.loads(pickle.dumps(function)) is function


@pytest.mark.parametrize("name", [n for n in lf.__all__ if isinstance(getattr(lf, n), type)])
def test_every_exported_class_resolves_its_type_hints(name):
    """A class's string annotations resolve in the module its ``__module__`` names (typing, pydantic
    building a schema for a user's model holding one): shown elsewhere, a data class would break them."""
    typing.get_type_hints(getattr(lf, name))


def test_what_a_run_saves_of_a_metric_and_an_error_is_unchanged():
    metric = lf.metrics.TrajectoryExactMatch()
    saved = metric_spec(metric)["class"]
    assert saved == "levelfield._core.score.metrics.trajectory.TrajectoryExactMatch"  # the kind saved runs compare by
    assert evaluator_of(metric).kind == saved
    assert lf.AgentOutputError("x").error_type == "bad_output"
    from levelfield._core.errors import exception_text

    assert exception_text(lf.DatasetError("row 3: no 'query'")) == "DatasetError: row 3: no 'query'"


HOMES = ["levelfield", *(f"levelfield.{name}" for name in SUBPACKAGES)]


def _documented() -> dict[str, str]:
    """What ``help`` shows of each public home: the docstrings of the home, its exported names and
    the public members of its exported classes, by the public name they are read at."""
    import importlib

    found: dict[str, str] = {}
    seen: set[int] = set()

    def visit(name: str, value: object, members: bool) -> None:
        if id(value) in seen or isinstance(value, (str, int, float, tuple, list, dict, frozenset)):
            return
        seen.add(id(value))
        doc = getattr(value, "__doc__", None)
        if isinstance(doc, str):
            found[name] = doc
        if members and isinstance(value, type):
            for key, member in vars(value).items():
                if not key.startswith("_") or key == "__init__":
                    visit(f"{name}.{key}", getattr(member, "fget", None) or getattr(member, "__func__", None) or member, False)

    for home in HOMES:
        module = importlib.import_module(home)
        visit(home, module, False)
        for name in module.__all__:
            visit(f"{home}.{name}", getattr(module, name), True)
    return found


def test_what_help_shows_names_no_private_module():
    """``help(lf.stats)``, ``help(lf.EvalResult)``...: a reader is pointed at names they can import."""
    private = {name: [line.strip() for line in doc.splitlines() if "levelfield._" in line]
               for name, doc in _documented().items()}
    assert {name: lines for name, lines in private.items() if lines} == {}
