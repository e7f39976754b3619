"""The docs' promises that were not kept: names importable where the docs say, extras named when missing."""

import sys

import pytest

import levelfield as lf


def test_tool_outputs_by_turn_is_importable_from_levelfield_testing():
    pytest.importorskip("langchain_core")
    from levelfield.testing import ScriptedChatModel, tool_outputs_by_turn

    assert "tool_outputs_by_turn" in (ScriptedChatModel.__doc__ or "")
    assert tool_outputs_by_turn([]) == []


def test_eval_test_without_pytest_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pytest", None)  # how an uninstalled package looks to import
    with pytest.raises(lf.MissingExtraError, match=r"pip install 'levelfield\[pytest\]'"):
        lf.testing.eval_test("tests/fixture/", lambda prompt: "hi")


def test_guide_config_examples_name_files_that_exist():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs" / "guide").glob("*.md"))]
    lines = [text for page in pages for text in page.read_text(encoding="utf-8").splitlines()
             if text.lstrip().startswith("--config")]
    assert lines, "the guide shows `levelfield eval ... --config FILE` (an ADK test_config.json)"
    for line in lines:
        config = line.split("--config", 1)[1].split()[0]
        assert (root / config).is_file(), f"{config} (named in {line.strip()!r}) does not exist"


def test_readme_extras_table_lists_every_extra_of_pyproject():
    import re
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).resolve().parents[2]
    extras = set(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    readme = (root / "README.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| `([a-z0-9-]+)` \|", readme, re.M))
    assert table == extras, f"README's extras table lists {sorted(table)}; pyproject.toml has {sorted(extras)}"
