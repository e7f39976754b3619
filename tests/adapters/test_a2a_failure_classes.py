"""Every failed A2A run says whose fault it was: protocol (which rule), transport, or agent.

The broken servers are the one-defect wire servers of ``_a2a_wire`` (127.0.0.1, port 0): at least
95 % of their failed runs must be classified protocol and none agent. A refused connection and a
server too slow to answer are transport; a conformant server whose agent fails is agent.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("a2a.server.request_handlers")
pytest.importorskip("uvicorn")

from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import _a2a_wire as wire  # noqa: E402
import levelfield as lf  # noqa: E402
from levelfield.adapters import A2AAgent  # noqa: E402
from levelfield.adapters.a2a.server import start_asgi, start_server  # noqa: E402
from levelfield.comparison._failures import format_failures  # noqa: E402

FAST = {"progress": False, "retries": 0, "a2a_preflight": False}  # classification needs no preflight
CASES = lf.load_dataset([{"case_id": f"c{i}", "prompt": f"question {i}", "reference": f"answer: question {i}"}
                         for i in range(3)])


def _runs(url: str, *, streaming: bool, timeout: float = 1.5, **kwargs) -> list[lf.AgentRun]:
    with _quiet():
        result = lf.evaluate(CASES, A2AAgent(url, streaming=streaming, timeout=timeout), metrics=[], **{**FAST, **kwargs})
    return result.runs


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")  # every run of a broken server fails: that warning is expected here

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def test_the_broken_servers_failed_runs_are_protocol_faults_never_the_agents():
    failed: list[lf.AgentRun] = []
    for defect in sorted(wire.DEFECTS):
        for streaming in (True, False):
            with wire.start(defect) as server:
                failed += [r for r in _runs(server.url, streaming=streaming) if r.failure]
    classes = [r.failure_class for r in failed]
    assert len(failed) >= 30  # most defects fail every run, in at least one of the two modes
    assert classes.count("protocol") / len(classes) >= 0.95, [(r.error_type, r.failure_class) for r in failed]
    assert "agent" not in classes
    assert all(r.failure_rule and "§" in r.failure_rule for r in failed if r.failure_class == "protocol")


@pytest.mark.parametrize("defect, words", [
    ("no_final_state", "never reached a final state"),
    ("stream_not_served", "claims streaming"),
    ("no_retry_after", "without Retry-After"),
    ("bad_card", "agent card"),
    ("invalid_state", "without a final task state"),
    ("no_jsonrpc_envelope", "JSON-RPC"),
])
def test_a_protocol_failure_names_the_rule_it_broke(defect, words):
    with wire.start(defect) as server:
        run = _runs(server.url, streaming=True)[0]
    assert run.failure and run.failure_class == "protocol" and words in run.failure_rule


def test_the_conformant_wire_server_has_no_failed_run():
    with wire.start() as server:
        for streaming in (True, False):
            runs = _runs(server.url, streaming=streaming)
            assert not any(r.failure for r in runs), [r.error for r in runs]
            assert all(r.failure_class is None for r in runs)


def test_a_refused_connection_is_transport():
    with wire.nobody_listening() as url:
        run = _runs(url, streaming=True)[0]
    assert run.failure and run.error_type == "connection_refused" and run.failure_class == "transport"
    assert run.failure_rule is None


def _slow_app(url: str) -> Starlette:
    agent = wire.WireAgent(url, None)

    async def slow(request):
        await asyncio.sleep(3)
        return JSONResponse({})

    return Starlette(routes=[Route("/.well-known/agent-card.json", agent.card_route), Route("/", slow, methods=["POST"])])


def test_a_server_too_slow_to_answer_is_transport_at_the_adapters_and_the_runners_timeout():
    with start_asgi(_slow_app) as server:
        adapter = _runs(server.url, streaming=False, timeout=0.5)[0]
        runner = lf.evaluate(CASES, A2AAgent(server.url, streaming=False, timeout=None), metrics=[],
                             timeout=0.5, **FAST).runs[0]
    assert adapter.failure and adapter.error_type == "timeout" and adapter.failure_class == "transport"
    assert runner.failure and runner.failure_class == "transport", runner.error


def _crashing(prompt: str) -> dict:
    raise RuntimeError("the agent's tool blew up")


def test_a_conformant_server_whose_agent_fails_is_agent():
    with start_server(_crashing, name="crashing") as server:
        run = _runs(server.url, streaming=True)[0]
    assert run.failure and run.failure_class == "agent", (run.error_type, run.error)


def test_the_class_is_kept_in_the_run_record(tmp_path):
    with wire.start("no_retry_after") as server:
        _runs(server.url, streaming=True, out=str(tmp_path / "out"))
    lines = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines() if line.strip()]
    runs = [line["run"] for line in lines if line.get("kind") == "run"]
    assert runs and all(r["failure_class"] == "protocol" and "Retry-After" in r["failure_rule"] for r in runs)


def test_summary_failures_and_verdict_count_and_say_protocol_faults():
    with wire.start() as good, wire.start("no_final_state") as broken, _quiet():
        cmp = lf.compare(CASES, {"good": A2AAgent(good.url, timeout=1.5), "broken": A2AAgent(broken.url, timeout=1.5)},
                         metrics=["exact_match"], **FAST)
    summary = cmp.summary
    assert summary.loc["broken", "protocol_failures"] == 3 and summary.loc["broken", "agent_failures"] == 0
    assert summary.loc["good", "protocol_failures"] == 0 and summary.loc["broken", "failures"] == 3
    text = format_failures({a: cmp.results[a].runs for a in cmp.agents})
    assert "broken: 3 of 3 runs failed (protocol 3, transport 0, agent 0)" in text
    assert "[protocol: the answer ended while the task was still working" in text
    verdict = cmp.verdict()
    assert verdict.worst == "broken" and "protocol faults" in verdict.reason


def test_agents_other_than_a2a_leave_the_class_empty():
    result = lf.evaluate(CASES, _crashing, metrics=[], **FAST)
    assert all(r.failure and r.failure_class is None for r in result.runs)
    assert "failure/protocol" not in result.summary_metrics


def test_an_evaluations_summary_counts_the_classes_too():
    with wire.start("no_jsonrpc_envelope") as server, _quiet():
        result = lf.evaluate(CASES, A2AAgent(server.url, timeout=2), metrics=[], **FAST)
    assert result.summary_metrics["failure/count"] == 3
    assert (result.summary_metrics["failure/protocol"], result.summary_metrics["failure/transport"],
            result.summary_metrics["failure/agent"]) == (3, 0, 0)
