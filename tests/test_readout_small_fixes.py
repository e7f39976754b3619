"""The smaller items of issue #39, "Numbers a reader can act on": every count read from the summary,
crashes after a pass counted as worse, the run kind named by its command, only recorded hand-offs,
the noise shares, money in plain decimals, badges labelled, and ``--out`` refusing a user's files.

Each test runs the real thing (the command line through ``levelfield.cli.main``, the HTML report
parsed, the ``view`` app through Starlette's test client) and fails on the bug it pins.
"""

import json
import re
import textwrap

import pytest

import levelfield as lf
from levelfield.cli.main import main

# Thirteen cases, in several languages: the agents echo the case's answer, so every run passes but
# the ones an agent is written to crash on.
ANSWERS = {
    "pt_1": ("Acenda a luz da sala", "A luz da sala está acesa."),
    "zh_1": ("把客厅的灯打开", "客厅的灯已经打开了。"),
    "de_1": ("Schalte das Licht in der Küche ein", "Das Küchenlicht ist an."),
    "ja_1": ("玄関のドアをロックして", "ドアをロックしました。"),
    **{f"en_{i}": (f"Question number {i}", f"Answer number {i}.") for i in range(1, 10)},
}
AGENTS = '''
ANSWERS = {answers!r}
BY_PROMPT = {{prompt: answer for prompt, answer in ANSWERS.values()}}

def steady(prompt):
    return BY_PROMPT[prompt]

def hasty(prompt):
    if prompt == ANSWERS["zh_1"][0]:
        raise RuntimeError("超时: 服务没有回答")
    return BY_PROMPT[prompt]

def gründlich(prompt):
    return BY_PROMPT[prompt]

def ãgil(prompt):
    return BY_PROMPT[prompt]
'''


@pytest.fixture
def thirteen(tmp_path, monkeypatch):
    """A 13-case dataset and a module of agents (``readout_agents``) importable by spec."""
    (tmp_path / "readout_agents.py").write_text(textwrap.dedent(AGENTS.format(answers=ANSWERS)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"case_id": cid, "prompt": p, "reference": a}, ensure_ascii=False) + "\n"
                            for cid, (p, a) in ANSWERS.items()), encoding="utf-8")
    return data


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. counts that are wrong -------------------------------------------------------------------------


def test_compare_failure_block_counts_every_run_of_the_agent(thirteen, capsys):
    agents = [f"{name}=readout_agents:{name}" for name in ("steady", "hasty", "gründlich", "ãgil")]
    code, out, _ = run(capsys, "compare", thirteen, *[x for a in agents for x in ("--agent", a)],
                       "-m", "exact_match", "--trials", 3, "-q")
    assert code == 0
    block = out[out.index("Failures:"):]
    assert "  hasty: 3 of 39 runs failed" in block  # 13 cases x 3 trials; was "3 of 3"
    assert "超时: 服务没有回答" in block
    assert "gründlich" not in block and "ãgil" not in block  # no failure, no line
    assert "3/39" in out  # the summary table's "failed runs" row says the same


def test_eval_failure_block_counts_every_run_of_the_agent(thirteen, capsys):
    code, out, _ = run(capsys, "eval", thirteen, "--agent", "readout_agents:hasty", "-m", "exact_match", "-q")
    assert code == 0
    assert "  hasty: 1 of 13 runs failed" in out  # was "1 of 1"
