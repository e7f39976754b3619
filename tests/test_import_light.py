"""``import levelfield`` and the command line's start stay light: the heavy packages (and the parts
of levelfield that need them) load when a name that needs them is first used, never at import."""

import json
import subprocess
import sys

import pytest

import levelfield as lf

# Top-level packages a bare import must not load. NumPy and pydantic too: nothing at start-up needs them.
HEAVY_PACKAGES = ("pandas", "scipy", "pyarrow", "numpy", "langchain", "langgraph", "a2a", "ray", "mlflow",
                  "starlette", "uvicorn", "opentelemetry", "vertexai", "grpc", "pydantic", "tau2", "litellm",
                  "loguru")
# Google's packages by name (the bare "google" and "google.cloud" namespaces are left out: .pth files
# create them at start-up), and levelfield's own heavy parts.
HEAVY_MODULES = ("google.adk", "google.genai", "google.cloud.aiplatform", "google.protobuf", "google.auth",
                 "levelfield.gate", "levelfield.report", "levelfield.view", "levelfield.watch", "levelfield.judge",
                 "levelfield.formats")

pytestmark = pytest.mark.slow  # every test starts fresh interpreters


def loaded_after(code: str) -> list[str]:
    """``sorted(sys.modules)`` in a fresh interpreter after running ``code``."""
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(sorted(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return eval(out.strip().splitlines()[-1])  # a list of module names, printed by us


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules
            if m.split(".")[0] in HEAVY_PACKAGES or any(m == h or m.startswith(h + ".") for h in HEAVY_MODULES)]


def test_import_levelfield_loads_no_heavy_package_or_module():
    assert heavy(loaded_after("import levelfield")) == []


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["eval", "--help"], ["compare", "--help"]])
def test_the_command_line_answers_version_and_help_without_pandas(argv):
    code = ("import contextlib, io, sys\n"
            f"sys.argv = ['levelfield', *{argv!r}]\n"
            "from levelfield.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main()")
    assert heavy(loaded_after(code)) == []


def test_levelfield_version_prints_the_version():
    out = subprocess.run([sys.executable, "-m", "levelfield", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"levelfield {lf.__version__}"


def test_every_public_name_resolves_in_a_fresh_interpreter():
    code = ("import levelfield as lf\n"
            "for name in lf.__all__:\n"
            "    exec(f'from levelfield import {name} as by_from')\n"
            "    assert by_from is getattr(lf, name) and name in dir(lf), name\n"
            "print(len(lf.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(len(lf.__all__))


def test_every_public_name_is_the_object_of_its_home_module():
    for name in lf.__all__:
        value = getattr(lf, name)
        if isinstance(value, type(sys)):
            assert value.__name__ == f"levelfield.{name}"
        else:
            home = sys.modules[value.__module__]  # the package itself for an error it shows as its own
            assert home.__name__.partition(".")[0] == "levelfield" and getattr(home, value.__name__) is value, name


def test_submodules_are_attributes_as_before():
    assert lf.gate.__name__ == "levelfield.gate"
    assert lf.report.write and lf.metrics.TrajectoryRecall and lf.stats.sample_size
    assert lf.testing.ScriptedJudge


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'evaluatee'"):
        lf.evaluatee  # noqa: B018
    with pytest.raises(ImportError):
        exec("from levelfield import evaluatee")


def test_scoring_saved_rows_loads_neither_nltk_nor_scipy_nor_the_comparison():
    # nltk's package start (scipy.stats among it) costs seconds; its Porter stemmer module alone is needed.
    code = ("import levelfield as lf\n"
            "rows = [{'prompt': 'p', 'reference': 'the lights are running', 'response': 'lights run',\n"
            "         'reference_trajectory': [], 'predicted_trajectory': []}] * 3\n"
            "r = lf.evaluate(rows, metrics=['response_match_score', 'rouge_l', 'bleu', 'trajectory_exact_match'],\n"
            "                progress=False)\n"
            "assert 0 < r.summary_metrics['response_match_score/mean'] < 1\n")
    loaded = loaded_after(code)
    assert [m for m in loaded if m.split(".")[0] in ("nltk", "scipy")] == []
    assert "levelfield.comparison._comparison" not in loaded


def test_nltk_imported_after_the_stemmer_is_the_whole_package():
    code = ("import levelfield as lf\n"
            "lf.evaluate([{'prompt': 'p', 'reference': 'running', 'response': 'runs'}], metrics=['response_match_score'],\n"
            "            progress=False)\n"
            "import nltk\n"
            "from nltk.stem.porter import PorterStemmer\n"
            "assert hasattr(nltk, 'download') and PorterStemmer().stem('running') == 'run'\n")
    assert "nltk.corpus" in loaded_after(code)


# What scoring saved rows must not load: the runner and engine, the adapters, the simulator and
# judges, Ray's executor, the outside formats a JSON Lines file does not use, a comparison's statistics.
NOT_FOR_SAVED_ROWS = ("levelfield._core.run.runner", "levelfield._core.run.engine", "levelfield._core.run.conversation",
                      "levelfield._core.run.case", "levelfield._core.run.attempt", "levelfield._core.run.journaling",
                      "levelfield._core.run.early_stop",
                      "levelfield.adapters", "levelfield.simulation", "levelfield.judge", "levelfield.executors.ray",
                      "levelfield.executors.local", "levelfield.formats.adk", "levelfield.formats.databricks",
                      "levelfield.formats.vertex", "levelfield.formats.mlflow", "levelfield.formats.otel",
                      "levelfield._core.stats", "levelfield.comparison._comparison", "levelfield.comparison._cases",
                      "levelfield.comparison._record", "levelfield.comparison._text", "levelfield.comparison._verdict",
                      "levelfield.comparison._robustness", "levelfield.comparison._baseline", "levelfield.report",
                      "levelfield.gate")


@pytest.mark.parametrize("route", ["path", "df", "load_dataset"])
def test_scoring_a_saved_file_by_every_route_loads_only_the_scoring_side(tmp_path, route):
    saved = tmp_path / "saved.jsonl"
    rows = [{"prompt": "p", "reference": "the lights are off", "response": "lights off",
             "reference_trajectory": [{"tool_name": "t", "tool_input": {"x": i}}],
             "predicted_trajectory": [{"tool_name": "t", "tool_input": {"x": i % 2}}]} for i in range(4)]
    saved.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = {"path": repr(str(saved)), "df": f"pd.read_json({str(saved)!r}, lines=True)",
            "load_dataset": f"lf.load_dataset({str(saved)!r})"}[route]
    code = ("import pandas as pd\n"
            "import levelfield as lf\n"
            f"r = lf.evaluate({data}, metrics=['trajectory_exact_match', 'rouge_1'], progress=False)\n"
            "assert r.summary_metrics['trajectory_exact_match/mean'] == 0.5 and len(r.metrics_table) == 4\n")
    loaded = loaded_after(code)
    assert [m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_FOR_SAVED_ROWS)] == []
    # The bare "google" and "google.cloud" namespaces are made by .pth files at start-up.
    assert [m for m in loaded if m.split(".")[0] in ("scipy", "nltk", "langchain", "a2a", "google", "ray")
            and m not in ("google", "google.cloud")] == []


@pytest.mark.parametrize("route", ["path", "load_dataset"])
def test_the_summary_of_a_saved_file_loads_no_pandas_until_the_table_is_asked_for(tmp_path, route):
    # The metrics table is a pandas DataFrame (Vertex AI's shape); a summary read alone does not pay
    # for pandas and the pyarrow it loads: most of a fresh process's time at 1,000 rows (issue #46).
    saved = tmp_path / "saved.jsonl"
    rows = [{"id": f"c{i}", "prompt": "p", "reference": "the lights are off", "response": "lights off",
             "reference_trajectory": [{"tool_name": "t", "tool_input": {"x": i}}],
             "predicted_trajectory": [{"tool_name": "t", "tool_input": {"x": i % 2}}]} for i in range(4)]
    saved.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = repr(str(saved)) if route == "path" else f"lf.load_dataset({str(saved)!r})"
    code = ("import sys\n"
            "import levelfield as lf\n"
            f"r = lf.evaluate({data}, metrics=['trajectory_exact_match', 'rouge_1'], progress=False)\n"
            "assert r.summary_metrics['trajectory_exact_match/mean'] == 0.5\n"
            "assert [m for m in ('pandas', 'pyarrow') if m in sys.modules] == []\n"
            "table = r.metrics_table\n"
            "assert type(table).__module__.startswith('pandas') and table['case_id'].tolist() == ['c0', 'c1', 'c2', 'c3']\n"
            "assert table['trajectory_exact_match/score'].tolist() == [1.0, 1.0, 0.0, 0.0]\n")
    loaded = loaded_after(code)
    assert "pandas" in loaded  # the table, once asked for
