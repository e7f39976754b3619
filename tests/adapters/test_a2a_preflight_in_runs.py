"""The A2A preflight of an evaluation: passive by default (the card before the first case, then the
evaluation's own answers as they arrive; no message of its own), probing only when asked
(``a2a_probe=True``). Kept in the run record, shown in the report (and so in ``view``), warned about
when a check fails, and the one source of "this agent does not expose its tool calls over A2A" on
trajectory metrics (never a 0). Servers on 127.0.0.1."""

from __future__ import annotations

import json
import warnings

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

import _a2a_wire as wire  # noqa: E402
import levelfield as lf  # noqa: E402
from levelfield._core.errors import ConfigError  # noqa: E402
from levelfield._core.run.notices import NoToolCallsWarning  # noqa: E402
from levelfield._core.run.preflight import A2APreflightWarning  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.server import start_asgi, start_server  # noqa: E402
from levelfield.cli.main import build_parser  # noqa: E402
from levelfield.report import render as render_report  # noqa: E402

FAST = {"progress": False, "retries": 0}
CASES = lf.load_dataset([
    {"case_id": f"c{i}", "prompt": f"question {i}", "reference": f"answer: question {i}",
     "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"query": f"question {i}"}}]}
    for i in range(3)
])
TRAJECTORY = ["trajectory_exact_match", "trajectory_recall"]


def _compare(agents: dict, **kwargs) -> tuple[lf.Comparison, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cmp = lf.compare(CASES, agents, metrics=[*TRAJECTORY, "exact_match"], **{**FAST, **kwargs})
    return cmp, list(seen)


def test_the_preflight_runs_before_the_cases_and_is_kept_in_the_record(tmp_path):
    with wire.start() as server:
        result = lf.evaluate(CASES, A2AAgent(server.url, timeout=5), metrics=TRAJECTORY, out=str(tmp_path / "o"), **FAST)
    found = result.a2a_preflight["wire-agent"]
    assert found["ok"] is True and found["tool_calls"] == "adk" and found["versions"] == []
    rows = {c["name"]: c["status"] for c in found["checks"]}
    assert rows["card.required_fields"] == "pass" and rows["probes"] == "skip"
    assert rows["traffic.protocol"] == "pass" and rows["traffic.parts"] == "pass" and rows["tool_calls"] == "pass"
    header = json.loads((tmp_path / "o" / "runs.jsonl").read_text().splitlines()[0])
    assert header["a2a_preflight"]["wire-agent"]["checks"] == found["checks"]
    again = lf.EvalResult.load(tmp_path / "o")
    assert again.a2a_preflight["wire-agent"]["ok"] is True
    assert lf.Comparison.load(tmp_path / "o").a2a_preflight == {"wire-agent": found}


def _counting_agent():
    calls = []

    def agent(prompt: str) -> str:
        calls.append(prompt)
        return f"answer: {prompt}"

    return agent, calls


def test_the_preflight_sends_no_message_of_its_own_by_default():
    agent, calls = _counting_agent()
    with start_server(agent, name="counted") as server:
        result = lf.evaluate(CASES, A2AAgent(server.url), metrics=[], trials=2, **FAST)
    assert sorted(calls) == sorted(["question 0", "question 1", "question 2"] * 2)  # N x trials, no more
    assert result.a2a_preflight["counted"]["ok"] is True


def test_a_comparison_of_several_names_for_one_agent_sends_only_the_cases():
    agent, calls = _counting_agent()
    with start_server(agent, name="counted") as server:
        lf.compare(CASES, {name: A2AAgent(server.url, timeout=5) for name in ("a", "b", "c")}, metrics=[], **FAST)
    assert sorted(calls) == sorted(["question 0", "question 1", "question 2"] * 3)


def test_a_resume_with_nothing_left_sends_nothing(tmp_path):
    agent, calls = _counting_agent()
    with start_server(agent, name="counted") as server:
        lf.evaluate(CASES, A2AAgent(server.url), metrics=[], out=str(tmp_path / "o"), **FAST)
        calls.clear()
        again = lf.evaluate(CASES, A2AAgent(server.url), metrics=[], out=str(tmp_path / "o"), resume=True, **FAST)
    assert calls == [] and len(again.runs) == 3


def test_probes_are_sent_only_when_asked_and_the_preflight_can_be_turned_off():
    agent, calls = _counting_agent()
    with start_server(agent, name="counted") as server:
        lf.evaluate(CASES, A2AAgent(server.url), metrics=[], a2a_probe=True, **FAST)
        probed = calls.count("question 0") - 1  # one is the case's own run
        calls.clear()
        result = lf.evaluate(CASES, A2AAgent(server.url), metrics=[], a2a_preflight=False, **FAST)
    # send and stream, over the version the agent speaks (1.0) only: each probe costs the agent an answer
    assert probed == 2
    assert sorted(calls) == ["question 0", "question 1", "question 2"] and result.a2a_preflight == {}


def test_the_preflight_uses_the_runs_timeout(monkeypatch):
    seen = []

    async def apreflight(self, prompt=None, *, timeout=None, every_version=True, probe=True):
        seen.append((timeout, probe))
        return wire_preflight()

    from levelfield.adapters.a2a.checks import Preflight

    def wire_preflight():
        return Preflight(url="http://127.0.0.1:1")

    monkeypatch.setattr(A2AAgent, "apreflight", apreflight)
    with wire.start() as server:
        lf.evaluate(CASES, A2AAgent(server.url, timeout=5), metrics=[], timeout=7.5, **FAST)
    assert seen == [(7.5, False)]


def test_the_cli_turns_it_off_asks_for_probes_and_the_options_are_checked():
    args = build_parser().parse_args(["eval", "cases.jsonl", "--agent", "http://127.0.0.1:1", "--no-a2a-preflight"])
    assert args.a2a_preflight is False and args.a2a_probe is False
    args = build_parser().parse_args(["eval", "cases.jsonl", "--agent", "http://127.0.0.1:1", "--a2a-probe"])
    assert args.a2a_probe is True
    with pytest.raises(ConfigError, match="a2a_preflight"):
        lf.RunConfig(a2a_preflight="no")
    with pytest.raises(ConfigError, match="a2a_probe"):
        lf.RunConfig(a2a_probe="yes")


def test_a_failed_check_is_warned_about_and_shown_in_the_report_beside_the_agent(tmp_path):
    with wire.start() as good, wire.start("stream_not_served") as broken:
        cmp, seen = _compare({"good": A2AAgent(good.url, timeout=2), "broken": A2AAgent(broken.url, timeout=2)})
    said = [str(w.message) for w in seen if issubclass(w.category, A2APreflightWarning)]
    # Seen in the evaluation's own answers (no probe was sent): the streamed runs broke the spec.
    assert len(said) == 1 and "'broken': its answers broke A2A" in said[0] and "claims streaming" in said[0]
    page = render_report(cmp)
    assert '<section id="a2a">' in page and "does NOT conform" in page and "conforms: " in page
    assert "the card claims streaming (capabilities.streaming) but the stream is not served" in page
    assert "whose fault" in page and "protocol: the card claims streaming" in page


def test_an_agent_exposing_tool_calls_as_plain_data_gets_the_message_not_a_zero():
    with wire.start() as good, wire.start(wire.PLAIN_TOOL_CALLS) as plain:
        cmp, seen = _compare({"good": A2AAgent(good.url, timeout=5), "plain": A2AAgent(plain.url, timeout=5)})
    table = cmp.results["plain"].metrics_table
    for metric in TRAJECTORY:
        assert table[f"{metric}/score"].isna().all()
        assert table[f"{metric}/explanation"].str.contains("does not expose its tool calls over A2A").all()
        assert cmp.summary.loc["good", f"{metric}/mean"] == 1.0
    assert cmp.summary.loc["plain", "exact_match/mean"] == 1.0  # the answers are scored as usual
    notes = [str(w.message) for w in seen if issubclass(w.category, NoToolCallsWarning)]
    assert len(notes) == 1 and "'plain'" in notes[0] and "not 0" in notes[0]


def test_an_agent_that_shows_no_calls_for_a_case_expecting_some_gets_the_message():
    from tests.adapters.test_a2a_preflight import _hello_world_app

    with start_asgi(_hello_world_app) as server:
        result = lf.evaluate(CASES, A2AAgent(server.url, timeout=5), metrics=TRAJECTORY, a2a_probe=True, **FAST)
    assert result.a2a_preflight["Hello World Agent"]["tool_calls"] == "none"
    assert result.metrics_table["trajectory_exact_match/score"].isna().all()
    assert "does not expose its tool calls over A2A" in result.metrics_table["trajectory_exact_match/explanation"][0]


def test_unprobed_an_agent_that_shows_no_calls_is_scored_as_what_it_showed_and_the_record_says_so():
    # Without a probe, "exposes none" cannot be told from "called none" before the runs: its runs score
    # what they showed (0 here) and the preflight records that its answers held no tool call.
    from tests.adapters.test_a2a_preflight import _hello_world_app

    with start_asgi(_hello_world_app) as server:
        result = lf.evaluate(CASES, A2AAgent(server.url, timeout=5), metrics=TRAJECTORY, **FAST)
    found = result.a2a_preflight["Hello World Agent"]
    assert found["tool_calls"] == "none"
    # Its card declares no tools: its answers holding none is no finding.
    assert {c["name"]: c["status"] for c in found["checks"]}["tool_calls"] == "skip"
    assert (result.metrics_table["trajectory_exact_match/score"] == 0.0).all()


def test_without_an_expected_call_a_silent_agent_is_scored_as_usual():
    # The preflight cannot tell "exposes none" from "called none" when the probed case expects none.
    from tests.adapters.test_a2a_preflight import _hello_world_app

    cases = lf.load_dataset([{"case_id": "c0", "prompt": "hi", "reference_trajectory": []}])
    with start_asgi(_hello_world_app) as server:
        result = lf.evaluate(cases, A2AAgent(server.url, timeout=5), metrics=["trajectory_exact_match"], **FAST)
    assert result.metrics_table["trajectory_exact_match/score"][0] == 1.0


def test_an_agent_the_preflight_cannot_reach_is_warned_about_and_its_runs_still_recorded():
    with wire.nobody_listening() as url, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = lf.evaluate(CASES, A2AAgent(url, name="gone", timeout=2), metrics=[], **FAST)
    said = [str(w.message) for w in seen if issubclass(w.category, A2APreflightWarning)]
    assert said and "could not run" in said[0] and "connection refused" in said[0]
    assert "error" in result.a2a_preflight["gone"]
    assert len(result.runs) == 3 and all(r.failure_class == "transport" for r in result.runs)


def test_agents_that_are_not_a2a_are_not_probed():
    agent, _ = _counting_agent()
    result = lf.evaluate(CASES, agent, metrics=[], **FAST)
    assert result.a2a_preflight == {}


def test_view_shows_the_preflight_beside_the_agent_on_the_run_page(tmp_path):
    pytest.importorskip("starlette.testclient")
    from starlette.testclient import TestClient

    from levelfield.view import create_app

    with wire.start() as good, wire.start("get_task_lost") as broken:
        _compare({"good": A2AAgent(good.url, timeout=5), "broken": A2AAgent(broken.url, timeout=5)},
                 out=str(tmp_path / "runs" / "r1"), a2a_probe=True)  # GetTask is probed, never used by a stream
    client = TestClient(create_app([tmp_path / "runs"], allowed_hosts=["testserver"]))
    page = client.get("/run", params={"run": "runs/r1"}).text
    assert '<section id="a2a">' in page and "the task just answered could not be read back" in page
    assert page.index('<section id="summary">') < page.index('<section id="a2a">')
    listing = client.get("/").text
    assert "A2A ✓" in listing and "A2A: does not conform (1)" in listing and "get_task 1.0" in listing
