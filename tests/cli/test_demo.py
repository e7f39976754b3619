"""``levelfield demo`` end to end: every framework that runs here, the comparison printed, the report written."""

import contextlib
import html
import io
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from levelfield import EvalDataset, cli
from levelfield.adapters.a2a import server as a2a_server
from levelfield.cli.demo_agents import demo_agents
from levelfield.formats import files

pytestmark = pytest.mark.slow  # the demo runs every framework, A2A servers included, in a subprocess

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Run the demo once, as a user runs it: ``levelfield demo`` in a process of its own."""
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "levelfield", "demo", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {"code": done.returncode, "out": done.stdout, "err": done.stderr, "dir": out}


def test_demo_exits_zero_and_says_where_the_report_is(demo):
    assert demo["code"] == 0
    report = demo["dir"] / "report.html"
    assert f"Report: {report}" in demo["out"] and report.exists()


def test_demo_compares_an_agent_of_every_framework_installed_here(demo):
    lines = demo["out"].splitlines()
    assert "4 frameworks (function, langgraph, agent-engine, a2a)" in lines[0]
    assert "note:" not in demo["out"]
    assert lines[2].split() == ["function", "langgraph", "agent-engine", "a2a", "function-hasty"]


def test_every_framework_gets_the_careful_agents_exact_match_score(demo):
    row = next(line for line in demo["out"].splitlines() if line.startswith("trajectory_exact_match "))
    assert row.count("1.000 [0.78, 1.00]") == 4 and "0.556" in row


def test_demo_stops_the_a2a_server_it_started(monkeypatch, tmp_path):
    # In this process, to see the server it starts: the demo command as it runs, on the sample's first
    # three cases (the module's demo, a process of its own, is checked whole by the other tests).
    started = []
    real = a2a_server.start_server

    def spy(*args, **kwargs):
        server = real(*args, **kwargs)
        started.append(server)
        return server

    loaded = files.load_dataset

    def first_cases(*args, **kwargs):
        data = loaded(*args, **kwargs)
        return EvalDataset(list(data)[:3], source=data.source)

    monkeypatch.setattr(a2a_server, "start_server", spy)
    monkeypatch.setattr(files, "load_dataset", first_cases)
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["demo", "--out", str(tmp_path), "--quiet"]) == 0
    assert len(started) == 1
    url = urlparse(started[0].url)
    with pytest.raises(OSError):
        socket.create_connection((url.hostname, url.port), timeout=2).close()


def test_a_framework_whose_extra_is_missing_is_skipped_with_a_note(monkeypatch):
    # As if langgraph were not installed: importing it fails, as it would without the extra.
    # langgraph itself whether loaded yet or not (it depends on the tests this process ran before), and its modules loaded.
    for name in ["langgraph", *(m for m in sys.modules if m.startswith("langgraph."))]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "samples.home_automation.agents.langgraph_agent", raising=False)
    notes = []
    with contextlib.ExitStack() as stack:
        agents = demo_agents(stack, notes)
    assert "langgraph" not in agents and "function" in agents
    assert any(n.startswith("langgraph: skipped") and "levelfield[langchain]" in n for n in notes)


def test_demo_report_opens_by_naming_the_worse_agent_and_why(demo):
    page = (demo["dir"] / "report.html").read_text(encoding="utf-8")
    first = page.split('<p class="headline">', 1)[1].split("</p>", 1)[0]
    assert page.index('<p class="headline">') < page.index('id="summary"')
    assert "function-hasty is worst (lowest on 8 of 8): it skips a reference call in 6 of 18 cases" in first
    verdict = next(line for line in demo["out"].splitlines() if line.startswith("Verdict: "))
    assert verdict[len("Verdict: "):] == html.unescape(first)


def test_demo_finds_the_careful_agents_significantly_better_than_the_hasty_one(demo):
    assert "significantly better than function-hasty (adjusted p=0.024)" in demo["out"]


def test_the_demo_prints_nothing_but_its_own_lines_on_stderr(demo):
    # The A2A preflight sends the demo's own server bad requests on purpose; a2a-sdk's warning for each
    # ("Request Error ... Method not found") was the first line a newcomer saw.
    assert demo["code"] == 0, demo["err"]
    assert "Request Error" not in demo["err"] and "Method not found" not in demo["err"]
