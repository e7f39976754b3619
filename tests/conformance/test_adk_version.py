"""response_match_score follows google-adk 2.x's tokenizer (1.x reads accented words differently:
"Sacsayhuamán" is one word in 2.x, two in 1.x), so the extras that install ADK require 2.x, and the
google-adk installed here is one levelfield matches."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from adk_oracle import adk_response_scores, invocation  # noqa: E402

import levelfield as lf  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _adk_floor(extra: str) -> tuple[int, ...]:
    line = next(x for x in PYPROJECT.read_text(encoding="utf-8").splitlines() if x.startswith(f"{extra} = ["))
    found = re.search(r'"google-adk>=([0-9.]+)"', line)
    assert found, f"the {extra} extra does not bound google-adk from below"
    return tuple(int(p) for p in found.group(1).split("."))


@pytest.mark.parametrize("extra", ["adk", "vertex"])
def test_the_extras_require_the_adk_whose_tokenizer_levelfield_follows(extra):
    assert _adk_floor(extra) >= (2,)


def test_the_installed_adk_scores_accented_words_as_levelfield_does():
    assert int(version("google-adk").split(".")[0]) >= 2
    reference, response = "Visit Sacsayhuamán above Cusco", "Sacsayhuamán is above Cusco in Peru"
    adk, _ = adk_response_scores([invocation("p", response, None, expected=False)],
                                 [invocation("p", reference, None, expected=True)])
    ours = lf.evaluate([{"case_id": "c", "prompt": "p", "reference": reference, "response": response}],
                       metrics=["response_match_score"], progress=False)
    assert ours.metrics_table["response_match_score/score"][0] == pytest.approx(adk)
