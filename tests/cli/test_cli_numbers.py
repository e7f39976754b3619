"""Every number and URL option of every command read in its range: a bad value is one line naming the
option and exit 2, before anything runs; the Python API holds its options to the same ranges."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import levelfield as lf
from levelfield.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EVALSET = "tests/fixture/home.evalset.json"
CAREFUL = "samples.home_automation.agents.function_agents:careful_agent"
HASTY = "samples.home_automation.agents.function_agents:hasty_agent"

EVAL = ["eval", EVALSET, "--agent", CAREFUL, "-q"]
COMPARE = ["compare", EVALSET, "-a", f"careful={CAREFUL}", "-a", f"hasty={HASTY}", "-q"]
PLAN = ["plan", "--p0", "0.8", "--mde", "0.1"]

# (the command without the option, the option, bad values); eval and compare share every run option.
RUN_OPTIONS = [
    ("--concurrency", ["0", "-3", "x", "1.5"]),
    ("--timeout", ["-1", "nan", "inf", "x"]),
    ("--max-response", ["0", "-5", "lots"]),
    ("--retries", ["-1", "x", "1.5"]),
    ("--rpm", ["0", "a=0", "x"]),
    ("--tpm", ["-1", "a=x"]),
    ("--trials", ["0", "x"]),
    ("--max-cost", ["0", "-1", "nan", "inf", "x"]),
    ("--judge-max-cost", ["0", "inf"]),
    ("--fail-under", ["rouge_l=nan", "rouge_l=-0.1", "rouge_l=inf", "=0.5", "rouge_l"]),
    ("--max-turns", ["0", "x"]),
    ("--limit", ["0", "-1"]),
    ("--sample", ["0", "x"]),
    ("--seed", ["-1", "x", "0.5"]),
    ("--margin", ["-0.1", "nan", "inf", "x"]),
    ("--alpha", ["0", "1", "1.5", "nan", "x"]),
]
CASES = [
    *[(EVAL, option, value) for option, values in RUN_OPTIONS for value in values],
    *[(COMPARE, option, value) for option, values in RUN_OPTIONS for value in values],
    (["eval", EVALSET, "-q"], "--workers", "0"),
    (["eval", EVALSET, "-q"], "--workers", "-2"),
    (COMPARE + ["--stop-early"], "--seed", "-1"),
    *[(["plan", "--mde", "0.1"], "--p0", v) for v in ("0", "1", "1.2", "nan")],
    *[(["plan", "--mde", "0.1"], "--sd", v) for v in ("0", "-1", "inf")],
    *[(["plan", "--p0", "0.8"], "--mde", v) for v in ("0", "-0.1", "nan")],
    *[(PLAN, "--power", v) for v in ("0", "1", "2")],
    *[(PLAN, "--alpha", v) for v in ("0", "1", "-0.05", "nan")],
    *[(PLAN, "--discordance", v) for v in ("0", "1.5")],
    *[(PLAN, "--trials", v) for v in ("0",)],
    *[(PLAN, "--icc", v) for v in ("-0.1", "1.1", "nan")],
    *[(["view", "."], "--port", v) for v in ("-1", "65536", "x")],
    *[(["serve", CAREFUL], "--port", v) for v in ("-1", "70000")],
    (["serve", CAREFUL], "--url", "not-a-url"),
    (["serve", CAREFUL], "--url", "ftp://host/agent"),
    (["serve", CAREFUL], "--max-body", "0"),
    (["watch", "--out", "w", "-m", "trajectory_exact_match"], "--max-cost", "inf"),
    *[(["a2a-check", "http://127.0.0.1:9"], "--timeout", v) for v in ("nan", "0", "-1", "inf", "x")],
    *[(["a2a-check", "http://127.0.0.1:9"], "--max-response", v) for v in ("0", "lots")],
]


@pytest.mark.parametrize("command, option, value", CASES, ids=[f"{c[0]} {o}={v}" for c, o, v in CASES])
def test_a_bad_number_is_one_line_naming_the_option_and_exit_2(tmp_path, monkeypatch, capsys, command, option, value):
    monkeypatch.chdir(ROOT)
    out = ["--out", str(tmp_path / "out")] if command[0] in ("eval", "compare") else []
    with pytest.raises(SystemExit) as exited:
        main([*command, f"{option}={value}", *out])
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"argument {option}" in errors[0], err
    assert not (tmp_path / "out").exists()  # refused before anything ran


@pytest.mark.parametrize("command, option, value, read", [
    (EVAL, "--retries", "0", 0), (EVAL, "--seed", "0", 0), (EVAL, "--margin", "0.02", 0.02), (EVAL, "--alpha", "0.01", 0.01),
    (EVAL, "--timeout", "none", None), (EVAL, "--timeout", "2.5", 2.5), (EVAL, "--fail-under", "rouge_l=0", [("rouge_l", 0.0)]),
    (EVAL, "--max-cost", "$0.50", 0.5), (PLAN, "--icc", "0", 0.0), (PLAN, "--icc", "1", 1.0), (PLAN, "--discordance", "0.3", 0.3),
    (["view", "."], "--port", "0", 0), (["serve", CAREFUL], "--url", "http://127.0.0.1:9999", "http://127.0.0.1:9999"),
])
def test_a_good_number_is_read(command, option, value, read):
    from levelfield.cli.main import build_parser

    args = build_parser().parse_args([*command, f"{option}={value}"])
    assert getattr(args, option.lstrip("-").replace("-", "_")) == read


def test_stop_early_with_a_negative_seed_is_refused_without_a_traceback(tmp_path):
    # The reproduction: a numpy traceback from deep in the sequential test before the change.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "levelfield", *COMPARE, "--stop-early", "--seed", "-1",
                             "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "argument --seed: -1: give 0 or more" in result.stderr


@pytest.mark.parametrize("options, named", [
    ({"timeout": math.nan}, "timeout=nan"),
    ({"timeout": math.inf}, "timeout=inf"),
    ({"backoff": math.nan}, "backoff=nan"),
    ({"max_cost_usd": math.inf}, "max_cost_usd=inf"),
    ({"judge_max_cost_usd": math.nan}, "judge_max_cost_usd=nan"),
    ({"retries": -1}, "retries=-1"),
    ({"concurrency": 0}, "concurrency=0"),
    ({"trials": 0}, "trials=0"),
    ({"workers": 0}, "workers=0"),
    ({"requests_per_minute": 0}, "requests_per_minute=0"),
])
def test_run_options_of_the_python_api_are_held_to_the_same_ranges(options, named):
    with pytest.raises(lf.ConfigError, match=f"^{named}"):
        lf.RunConfig(**options)
    with pytest.raises(lf.ConfigError, match=named):
        lf.evaluate([{"prompt": "hi", "reference": "hi", "response": "hi"}], metrics=["exact_match"], **options)


@pytest.mark.parametrize("options, named", [
    ({"seed": -1}, "seed=-1"),
    ({"margin": math.inf}, "margin=inf"),
    ({"margin": -0.1}, "margin=-0.1"),
    ({"alpha": 1.5}, "alpha=1.5"),
    ({"alpha": math.nan}, "alpha=nan"),
])
def test_stats_options_of_the_python_api_are_held_to_the_same_ranges(options, named):
    with pytest.raises(lf.ConfigError, match=f"^{named}"):
        lf.StatsConfig(**options)


def test_compare_stop_early_with_a_negative_seed_is_a_config_error_before_any_run():
    calls = []

    def agent(prompt):
        calls.append(prompt)
        return "ok"

    with pytest.raises(lf.ConfigError, match=r"seed=-1"):
        lf.compare([{"prompt": "a", "reference": "ok"}, {"prompt": "b", "reference": "ok"}],
                   {"x": agent, "y": agent}, ["exact_match"], stop_early=True,
                   stats=lf.StatsConfig(seed=-1), progress=False)
    assert calls == []
